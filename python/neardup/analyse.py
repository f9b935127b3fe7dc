"""jieba.analyse's TF-IDF keywords (jieba 0.42.1) over neardup's keyword extractor:
``from neardup import analyse`` in place of ``from jieba import analyse``.

``extract_tags(sentence, topK=20, withWeight=False)`` returns what jieba's returns: the words of
``cut(sentence)`` with two characters or more that are not stop words, by decreasing TF-IDF
weight (ties in order of first occurrence), with bit-identical float weights. It cuts with the
default tokenizer ``neardup.dt``, so ``neardup.load_userdict`` and friends change it as they
change jieba's.

``set_idf_path``, ``set_stop_words`` and ``TFIDF(idf_path)`` load other IDF tables ("word idf"
per line) and stop words (one per line, added to jieba's English ones). The files are read when
set, as by jieba: missing files raise ``neardup.NotFoundError`` (a FileNotFoundError) naming the
path, malformed ones ``neardup.InvalidArgumentError`` (a ValueError) naming the line, and a file
refused changes nothing.

Not provided: ``allowPOS`` (needs jieba.posseg's part-of-speech tags: NotImplementedError),
TextRank (``textrank``), ``ChineseAnalyzer``.
"""

from __future__ import annotations

import sys
import threading
from typing import List, Optional, Sequence, Tuple, Union

from . import _neardup
from ._jieba import PathLike, Text, Tokenizer, _existing_file, _strdecode, dt

__all__ = [
    "TFIDF",
    "default_tfidf",
    "extract_tags",
    "tfidf",
    "set_idf_path",
    "set_stop_words",
]


class TFIDF:
    """jieba.analyse.TFIDF: keywords by TF-IDF with an IDF table (default: jieba's idf.txt) and
    stop words, cutting with ``neardup.dt``. Thread-safe."""

    def __init__(self, idf_path: Optional[PathLike] = None) -> None:
        self.tokenizer: Tokenizer = dt
        self.lock = threading.Lock()
        self._idf_path: Optional[str] = None
        self._stop_words_paths: List[str] = []
        # The model, and the tokenizer's dictionary it was joined with.
        self._model: Optional[Tuple[_neardup.Tokenizer, _neardup.KeywordModel]] = None
        if idf_path is not None:
            self.set_idf_path(idf_path)

    def set_idf_path(self, idf_path: PathLike) -> None:
        """Uses the IDF table of this file ("word idf" per line) from now on. The file is read
        now, as by jieba: NotFoundError for a missing file, InvalidArgumentError for a malformed
        one, and then nothing changes."""
        path = _existing_file(idf_path, "IDF file")
        self._switch(path, self._stop_words_paths)

    def set_stop_words(self, stop_words_path: PathLike) -> None:
        """Adds the stop words of this file (one per line) to the current ones. The file is read
        now, as by jieba: NotFoundError for a missing file, InvalidArgumentError for one that is
        not UTF-8, and then nothing changes."""
        path = _existing_file(stop_words_path, "stop words file")
        self._switch(self._idf_path, self._stop_words_paths + [path])

    def _switch(self, idf_path: Optional[str], stop_words_paths: List[str]) -> None:
        """Builds the model of these files now (its errors are raised here, leaving the extractor
        as it was), then uses them."""
        core = self.tokenizer._loaded()
        with self.lock:
            model = _neardup.KeywordModel(core, idf_path, stop_words_paths)
            self._idf_path = idf_path
            self._stop_words_paths = stop_words_paths
            self._model = (core, model)

    def _keyword_model(self) -> _neardup.KeywordModel:
        core = self.tokenizer._loaded()
        model = self._model
        if model is not None and model[0] is core:
            return model[1]
        with self.lock:
            model = self._model
            if model is None or model[0] is not core:
                model = (core, _neardup.KeywordModel(core, self._idf_path, self._stop_words_paths))
                self._model = model
            return model[1]

    def extract_tags(self, sentence: Text, topK: Optional[int] = 20,  # noqa: N803
                     withWeight: bool = False, allowPOS: Sequence[str] = (),
                     withFlag: bool = False) -> Union[List[str], List[Tuple[str, float]]]:
        """jieba.analyse.extract_tags: the topK keywords (all when topK is 0 or None), as words
        or, with withWeight, (word, weight) pairs. allowPOS is not supported."""
        if allowPOS:
            raise NotImplementedError(
                "extract_tags: allowPOS needs part-of-speech tags (jieba.posseg), which neardup "
                "does not compute; call it without allowPOS")
        model = self._keyword_model()
        if sentence.__class__ is not str:
            sentence = _strdecode(sentence)
        if type(topK) is int and topK > 0:
            # More than there can be keywords is all of them (jieba's tags[:topK]).
            return model.extract_tags(sentence, min(topK, sys.maxsize), withWeight)
        tags = model.extract_tags(sentence, 0, withWeight)
        # jieba's `tags[:topK] if topK else tags`, whatever topK is.
        return tags[:topK] if topK else tags


default_tfidf = TFIDF()
extract_tags = tfidf = default_tfidf.extract_tags
set_idf_path = default_tfidf.set_idf_path


def set_stop_words(stop_words_path: PathLike) -> None:
    """jieba.analyse.set_stop_words: adds the stop words of a file to the default extractor."""
    default_tfidf.set_stop_words(stop_words_path)
