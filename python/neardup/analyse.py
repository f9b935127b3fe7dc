"""jieba.analyse's API over neardup's keyword extractor (filled in by the jieba layer)."""
