"""jieba's API over neardup's segmenter (filled in by the jieba layer)."""

__all__: list = []
