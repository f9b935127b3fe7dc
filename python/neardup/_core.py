"""Fingerprints, sketches, the online index and in-memory dedup: the typed layer of the extension.

Every class and function here takes the settings of the ``neardup`` command's ``hash`` and
``dedup`` flags as keywords, with the same names in Python form and the same defaults:

- ``method`` (``--method``): ``"accurate"`` (default: Jaccard sketches of character 5-grams) or
  ``"simhash"`` (64-bit fingerprints of word 3-grams, near-duplicates within ``k`` bits);
- ``threshold`` (``--threshold``): the least estimated Jaccard of a pair (accurate), 0.8;
- ``k`` (``-k``): the most differing bits of a pair (simhash), 0..7, 3;
- ``mode`` (``--mode``): ``"shingles"``, ``"terms"`` or ``"keywords"``;
- ``shingle_unit`` (``--shingle-unit``): ``"word"`` or ``"char"``;
- ``shingle_size`` (``--shingle-size``): units per shingle, 1..64;
- ``weighting`` (``--weighting``): ``"occurrences"`` or ``"distinct"``;
- ``normalize`` (not ``--no-normalize``): NFKC and case folding, True;
- ``invalid_utf8`` (``--invalid-utf8``): ``"replace"`` (by U+FFFD) or ``"reject"``;
- ``fold_traditional`` (``--fold t2s``): Traditional Chinese folded to Simplified;
- ``folding_table`` (``--fold-table``): the t2s table (OpenCC .ocd2 or text);
- ``language`` (``--lang``): ``"auto"``, ``"zh"`` or ``"en"``;
- ``max_document_bytes`` (``--max-doc-bytes``): longer texts are refused (0: no limit);
- ``keyword_count`` (``--keywords``): keywords per document in keywords mode (0: automatic);
- ``dictionary``, ``hmm_dir``, ``user_dictionaries``, ``idf``, ``stop_words`` (``--dict``,
  ``--hmm-dir``, ``--user-dict``, ``--idf``, ``--stop-words``): jieba's files for Chinese words
  and TF-IDF weights; ``use_cache`` (not ``--no-cache``): the cache of parsed dictionaries.

``None`` means the method's own default (``DefaultFeatures``): the accurate method's features are
distinct character 5-grams with Traditional Chinese folded, the simhash method's every word 3-gram.

Texts are ``str`` (lone surrogates become the bytes they stand for, which ``invalid_utf8`` then
replaces or rejects, as in a file) or bytes-like objects (UTF-8). Batch calls take any iterable of
texts, release the GIL and sign on ``threads`` threads (0: one per core); their results are NumPy
arrays. Errors are ``neardup.Error`` subclasses carrying the library's message; an error of one
document of a batch names it (``texts[12]: invalid UTF-8 at byte offset 7``).
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass, field
from typing import (
    Any,
    Dict,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import numpy as np

from . import _neardup
from ._neardup import MethodOptions

__all__ = [
    "MethodOptions",
    "Fingerprinter",
    "Signature",
    "SignatureBatch",
    "Index",
    "Match",
    "QueryAndInsertResult",
    "dedup",
    "DedupResult",
    "Duplicate",
    "Pair",
    "estimate_jaccard",
    "hamming_distance",
]

Text = Union[str, bytes, bytearray, memoryview]
PathLike = Union[str, "os.PathLike[str]"]
Score = Union[float, int]


# --------------------------------------------------------------------------------------------------
# Options


def _check(name: str, value: Any, kinds: Tuple[type, ...], what: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) and bool not in kinds:
        raise TypeError(f"{name} must be {what}, not bool")
    if not isinstance(value, kinds):
        raise TypeError(f"{name} must be {what}, not {type(value).__name__}")


_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _check_int(name: str, value: Optional[int], bounds: Tuple[int, int] = _INT32) -> None:
    """InvalidArgumentError (a ValueError) naming an int too large for the library to take (its
    own checks name the valid range of those it takes)."""
    if value is not None and not bounds[0] <= value <= bounds[1]:
        raise _neardup.InvalidArgumentError(f"{name} is out of range: {value}")


def _path(name: str, value: Optional[PathLike]) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), not {type(value).__name__}")
    return os.fsdecode(os.fspath(value))


def _method_options(
    method: str,
    threshold: Optional[float],
    k: Optional[int],
    mode: Optional[str],
    shingle_unit: Optional[str],
    shingle_size: Optional[int],
    weighting: Optional[str],
    normalize: bool,
    invalid_utf8: str,
    fold_traditional: Optional[bool],
    folding_table: Optional[PathLike],
    language: str,
    max_document_bytes: int,
    keyword_count: int,
    dictionary: Optional[PathLike],
    hmm_dir: Optional[PathLike],
    user_dictionaries: Sequence[PathLike],
    idf: Optional[PathLike],
    stop_words: Optional[PathLike],
    use_cache: bool,
) -> MethodOptions:
    """The resolved options; TypeError naming a keyword of the wrong type."""
    for name, value in (("method", method), ("mode", mode), ("shingle_unit", shingle_unit),
                        ("weighting", weighting), ("invalid_utf8", invalid_utf8),
                        ("language", language)):
        _check(name, value, (str,), "str")
    _check("threshold", threshold, (float, int), "a number")
    for name, value in (("k", k), ("shingle_size", shingle_size),
                        ("max_document_bytes", max_document_bytes),
                        ("keyword_count", keyword_count)):
        _check(name, value, (int,), "int")
        _check_int(name, value, _INT64 if name == "max_document_bytes" else _INT32)
    for name, value in (("normalize", normalize), ("fold_traditional", fold_traditional),
                        ("use_cache", use_cache)):
        _check(name, value, (bool,), "bool")
    if isinstance(user_dictionaries, (str, os.PathLike)):
        user_dictionaries = [user_dictionaries]
    return MethodOptions(
        method,
        threshold=None if threshold is None else float(threshold),
        k=k,
        mode=mode,
        shingle_unit=shingle_unit,
        shingle_size=shingle_size,
        weighting=weighting,
        normalize=normalize,
        invalid_utf8=invalid_utf8,
        fold_traditional=fold_traditional,
        folding_table=_path("folding_table", folding_table),
        language=language,
        max_document_bytes=max_document_bytes,
        keyword_count=keyword_count,
        dictionary=_path("dictionary", dictionary),
        hmm_dir=_path("hmm_dir", hmm_dir),
        user_dictionaries=[_path("user_dictionaries", p) or "" for p in user_dictionaries],
        idf=_path("idf", idf),
        stop_words=_path("stop_words", stop_words),
        use_cache=use_cache,
    )


def _check_threads(threads: int) -> int:
    _check("threads", threads, (int,), "int")
    if not 0 <= threads <= 1024:
        raise _neardup.InvalidArgumentError(
            f"threads must be 0 (one per core) to 1024, not {threads}")
    return threads


# --------------------------------------------------------------------------------------------------
# Signatures


class Signature(NamedTuple):
    """What a document becomes under a method.

    ``simhash``: the 64-bit SimHash fingerprint (an int). ``sketch``: the accurate method's Jaccard
    sketch (132 bytes; ``b""`` under the simhash method). ``band_keys``: its 20 LSH band keys
    (``()`` under the simhash method). ``empty``: the text has no features (blank, or symbols
    only): it is never a near-duplicate of anything.
    """

    simhash: int
    sketch: bytes
    band_keys: Tuple[int, ...]
    empty: bool

    def sketch_hex(self) -> str:
        """The sketch as ``neardup hash --sketch`` prints it: two hex digits a byte."""
        return self.sketch.hex()

    def band_keys_hex(self) -> str:
        """The band keys as ``neardup hash --sketch`` prints them: eight hex digits each."""
        return "".join(f"{key:08x}" for key in self.band_keys)

    def simhash_hex(self) -> str:
        """The fingerprint as ``neardup hash`` prints it: 16 hex digits."""
        return f"{self.simhash:016x}"


class SignatureBatch(NamedTuple):
    """The signatures of n documents, as NumPy arrays (row i: document i).

    ``simhash``: uint64 [n]; ``sketch``: uint8 [n, sketch_bytes]; ``band_keys``: uint32 [n, bands]
    (both zero wide under the simhash method); ``empty``: bool [n].
    """

    simhash: np.ndarray
    sketch: np.ndarray
    band_keys: np.ndarray
    empty: np.ndarray

    @property
    def documents(self) -> int:
        """n, the number of documents."""
        return int(self.simhash.shape[0])

    def row(self, i: int) -> Signature:
        """Document i's Signature."""
        return Signature(int(self.simhash[i]), self.sketch[i].tobytes(),
                         tuple(int(key) for key in self.band_keys[i]), bool(self.empty[i]))


class Fingerprinter:
    """Signs texts under a method: SimHash fingerprints and (accurate method) Jaccard sketches.

    The keywords are the module's (see ``neardup._core``'s documentation); the defaults are the
    method's, so ``Fingerprinter("simhash").simhash(text)`` is ``neardup hash``'s fingerprint and
    ``Fingerprinter().sketch(text)`` ``neardup hash --sketch``'s signature. Thread-safe: one
    Fingerprinter may serve many threads. Picklable (by its options, built again where it is
    unpickled: files it names, such as a dictionary, must be there too), so Dask tasks may use it.
    """

    def __init__(
        self,
        method: str = "accurate",
        *,
        threshold: Optional[float] = 0.8,
        k: Optional[int] = 3,
        mode: Optional[str] = None,
        shingle_unit: Optional[str] = None,
        shingle_size: Optional[int] = None,
        weighting: Optional[str] = None,
        normalize: bool = True,
        invalid_utf8: str = "replace",
        fold_traditional: Optional[bool] = None,
        folding_table: Optional[PathLike] = None,
        language: str = "auto",
        max_document_bytes: int = 0,
        keyword_count: int = 0,
        dictionary: Optional[PathLike] = None,
        hmm_dir: Optional[PathLike] = None,
        user_dictionaries: Sequence[PathLike] = (),
        idf: Optional[PathLike] = None,
        stop_words: Optional[PathLike] = None,
        use_cache: bool = True,
    ) -> None:
        options = _method_options(
            method, threshold, k, mode, shingle_unit, shingle_size, weighting, normalize,
            invalid_utf8, fold_traditional, folding_table, language, max_document_bytes,
            keyword_count, dictionary, hmm_dir, user_dictionaries, idf, stop_words, use_cache)
        self._signer = _neardup.Signer(options)

    @classmethod
    def from_options(cls, options: MethodOptions) -> "Fingerprinter":
        """A Fingerprinter of resolved options (an Index's ``options``, say)."""
        if not isinstance(options, MethodOptions):
            raise TypeError(f"options must be MethodOptions, not {type(options).__name__}")
        self = cls.__new__(cls)
        self._signer = _neardup.Signer(options)
        return self

    @property
    def options(self) -> MethodOptions:
        """The resolved options (every default filled in)."""
        return self._signer.options

    @property
    def method(self) -> str:
        """``"accurate"`` or ``"simhash"``."""
        return self._signer.method

    @property
    def settings(self) -> str:
        """The settings line (SettingsLine): the dedup report's ``settings``, an index's header."""
        return self._signer.settings

    @property
    def sketch_bytes(self) -> int:
        """Bytes of a sketch: 132 (accurate), 0 (simhash)."""
        return self._signer.sketch_bytes

    @property
    def bands(self) -> int:
        """Band keys of a signature: 20 (accurate), 0 (simhash)."""
        return self._signer.bands

    def simhash(self, text: Text) -> int:
        """The 64-bit SimHash fingerprint of the text (an int)."""
        return self._signer.simhash(text)

    def sketch(self, text: Text) -> Signature:
        """The text's Signature: fingerprint, sketch, band keys and whether it has no features."""
        return Signature._make(self._signer.sign(text))

    def simhash_batch(self, texts: Iterable[Text], threads: int = 0) -> np.ndarray:
        """The fingerprints of every text, uint64 [n], signed on ``threads`` threads (0: all)."""
        return self._signer.simhash_batch(texts, threads=_check_threads(threads))

    def sketch_batch(self, texts: Iterable[Text], threads: int = 0) -> SignatureBatch:
        """The signatures of every text as arrays, signed on ``threads`` threads (0: all)."""
        return SignatureBatch._make(self._signer.sign_batch(texts, threads=_check_threads(threads)))

    def compare(self, a: Union[Text, Signature], b: Union[Text, Signature]) -> Optional[Score]:
        """The method's score of two texts or Signatures when they are near-duplicates, else None.

        Accurate: the estimated Jaccard similarity (>= threshold; they must share a band key);
        simhash: the Hamming distance of the fingerprints (<= k, an int). A text without features
        is nobody's near-duplicate.
        """
        return self._signer.compare(a, b)

    def estimate_jaccard(self, a: Union[bytes, Signature, np.ndarray],
                         b: Union[bytes, Signature, np.ndarray]) -> float:
        """The estimated Jaccard similarity of two sketches (or Signatures) of this method."""
        return self._signer.estimate(_sketch_of(a), _sketch_of(b))

    def __reduce__(self) -> Tuple[Any, Tuple[MethodOptions]]:
        return Fingerprinter.from_options, (self.options,)

    def __copy__(self) -> "Fingerprinter":
        copy = Fingerprinter.__new__(Fingerprinter)
        copy._signer = self._signer  # immutable: shared
        return copy

    def __deepcopy__(self, memo: Dict[int, Any]) -> "Fingerprinter":
        return self.__copy__()

    def __repr__(self) -> str:
        return f"Fingerprinter({self.settings!r})"


def _sketch_of(value: Any) -> Any:
    return value.sketch if isinstance(value, Signature) else value


def estimate_jaccard(sketch_a: Union[bytes, Signature, np.ndarray],
                     sketch_b: Union[bytes, Signature, np.ndarray]) -> float:
    """The estimated Jaccard similarity of two accurate-method sketches (132 bytes each).

    Exact for documents of at most 44 distinct features; 1 for two empty texts, 0 for one.
    """
    return _neardup.estimate_jaccard(_sketch_of(sketch_a), _sketch_of(sketch_b))


def hamming_distance(a: Union[int, Signature, np.ndarray],
                     b: Union[int, Signature, np.ndarray]) -> Union[int, np.ndarray]:
    """The number of bits in which two fingerprints differ.

    Ints (or Signatures) give an int; arrays (uint64, broadcast against each other) a uint8 array.
    """
    if isinstance(a, Signature):
        a = a.simhash
    if isinstance(b, Signature):
        b = b.simhash
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        if isinstance(a, bool) or isinstance(b, bool):
            raise TypeError("hamming_distance takes fingerprints (int), not bool")
        x, y = int(a), int(b)
        if not (0 <= x < 1 << 64 and 0 <= y < 1 << 64):
            raise ValueError("fingerprints are 64-bit unsigned integers")
        return bin(x ^ y).count("1")
    x_array, y_array = np.broadcast_arrays(np.asarray(a, dtype=np.uint64),
                                           np.asarray(b, dtype=np.uint64))
    distances = _neardup.hamming_distances(np.ascontiguousarray(x_array).ravel(),
                                           np.ascontiguousarray(y_array).ravel())
    return distances.reshape(x_array.shape)


# --------------------------------------------------------------------------------------------------
# The online index


class Match(NamedTuple):
    """A stored near-duplicate of a query: its id and score (accurate: the estimated Jaccard, a
    float >= threshold; simhash: the Hamming distance, an int <= k)."""

    id: str
    score: Score


class QueryAndInsertResult(NamedTuple):
    """What ``Index.query_and_insert`` found (as ``query`` would have before the insert), and
    whether it stored the document."""

    matches: List[Match]
    inserted: bool


# The keywords that change signatures: given to Index.load, they must agree with the file's.
_SIGNATURE_KEYWORDS = ("threshold", "k", "mode", "shingle_unit", "shingle_size", "weighting",
                       "normalize", "fold_traditional", "language", "keyword_count", "dictionary",
                       "hmm_dir", "user_dictionaries", "idf", "stop_words")


def _matches(found: List[Tuple[str, Score]]) -> List[Match]:
    return [Match(id, score) for id, score in found]


class Index:
    """The online index of either method: documents inserted, removed and queried one at a time.

    A query returns every stored near-duplicate of a text by the method's rule, the rule of
    ``neardup dedup``: inserting a corpus one document at a time, querying each first, finds the
    pairs ``neardup dedup --pairs`` finds. The index holds signatures, not texts. Ids are str (1 to
    65535 UTF-8 bytes). Thread-safe: queries run in parallel, inserts and removes one at a time.

    ``expected_documents`` sizes the tables once; ``sketch_directory`` keeps the accurate method's
    sketches in an unlinked file there instead of in memory. After ``close()`` (or the end of a
    ``with`` block) every call raises ``ValueError("index is closed")``.
    """

    def __init__(
        self,
        method: str = "accurate",
        *,
        threshold: Optional[float] = 0.8,
        k: Optional[int] = 3,
        mode: Optional[str] = None,
        shingle_unit: Optional[str] = None,
        shingle_size: Optional[int] = None,
        weighting: Optional[str] = None,
        normalize: bool = True,
        invalid_utf8: str = "replace",
        fold_traditional: Optional[bool] = None,
        folding_table: Optional[PathLike] = None,
        language: str = "auto",
        max_document_bytes: int = 0,
        keyword_count: int = 0,
        dictionary: Optional[PathLike] = None,
        hmm_dir: Optional[PathLike] = None,
        user_dictionaries: Sequence[PathLike] = (),
        idf: Optional[PathLike] = None,
        stop_words: Optional[PathLike] = None,
        use_cache: bool = True,
        expected_documents: int = 0,
        sketch_directory: Optional[PathLike] = None,
    ) -> None:
        options = _method_options(
            method, threshold, k, mode, shingle_unit, shingle_size, weighting, normalize,
            invalid_utf8, fold_traditional, folding_table, language, max_document_bytes,
            keyword_count, dictionary, hmm_dir, user_dictionaries, idf, stop_words, use_cache)
        _check("expected_documents", expected_documents, (int,), "int")
        if expected_documents < 0:
            raise ValueError("expected_documents must be >= 0")
        _check_int("expected_documents", expected_documents, (0, (1 << 64) - 1))
        self._index = _neardup.Index(
            options, expected_documents=expected_documents,
            sketch_directory=_path("sketch_directory", sketch_directory) or "")

    @classmethod
    def from_options(cls, options: MethodOptions, *, expected_documents: int = 0,
                     sketch_directory: Optional[PathLike] = None) -> "Index":
        """An empty index of resolved options (a Fingerprinter's ``options``, say)."""
        if not isinstance(options, MethodOptions):
            raise TypeError(f"options must be MethodOptions, not {type(options).__name__}")
        _check_int("expected_documents", expected_documents, (0, (1 << 64) - 1))
        self = cls.__new__(cls)
        self._index = _neardup.Index(
            options, expected_documents=expected_documents,
            sketch_directory=_path("sketch_directory", sketch_directory) or "")
        return self

    @classmethod
    def load(
        cls,
        path: PathLike,
        *,
        method: Optional[str] = None,
        invalid_utf8: str = "replace",
        max_document_bytes: int = 0,
        folding_table: Optional[PathLike] = None,
        expected_documents: int = 0,
        sketch_directory: Optional[PathLike] = None,
        **options: Any,
    ) -> "Index":
        """Reads an index written by ``save`` (or a store's snapshot), answering as before.

        Without settings keywords the index takes the settings the file records; with any of them
        (the Index constructor's), they must resolve to the file's: FailedPreconditionError naming
        the difference otherwise. NotFoundError for a missing file, CorruptionError for a damaged
        one, InvalidArgumentError for an index file of another kind.
        """
        file = _path("path", path)
        assert file is not None
        _check_int("max_document_bytes", max_document_bytes, _INT64)
        _check_int("expected_documents", expected_documents, (0, (1 << 64) - 1))
        unknown = sorted(set(options) - set(_SIGNATURE_KEYWORDS) - {"use_cache"})
        if unknown:
            raise TypeError(f"Index.load() got an unexpected keyword argument '{unknown[0]}'")
        if method is None and not (set(options) & set(_SIGNATURE_KEYWORDS)):
            resolved = MethodOptions.from_settings(
                _neardup.index_file_settings(file), invalid_utf8=invalid_utf8,
                max_document_bytes=max_document_bytes,
                folding_table=_path("folding_table", folding_table))
        else:
            if method is None:
                method = MethodOptions.from_settings(_neardup.index_file_settings(file)).method
            defaults: Dict[str, Any] = {
                "threshold": 0.8, "k": 3, "mode": None, "shingle_unit": None,
                "shingle_size": None, "weighting": None, "normalize": True,
                "fold_traditional": None, "language": "auto", "keyword_count": 0,
                "dictionary": None, "hmm_dir": None, "user_dictionaries": (), "idf": None,
                "stop_words": None, "use_cache": True}
            defaults.update(options)
            resolved = _method_options(
                method, defaults["threshold"], defaults["k"], defaults["mode"],
                defaults["shingle_unit"], defaults["shingle_size"], defaults["weighting"],
                defaults["normalize"], invalid_utf8, defaults["fold_traditional"], folding_table,
                defaults["language"], max_document_bytes, defaults["keyword_count"],
                defaults["dictionary"], defaults["hmm_dir"], defaults["user_dictionaries"],
                defaults["idf"], defaults["stop_words"], defaults["use_cache"])
        self = cls.__new__(cls)
        self._index = _neardup.Index.load(
            file, resolved, expected_documents=expected_documents,
            sketch_directory=_path("sketch_directory", sketch_directory) or "")
        return self

    # The method ---------------------------------------------------------------------------------

    @property
    def options(self) -> MethodOptions:
        """The resolved options of the index's method."""
        return self._index.options

    @property
    def method(self) -> str:
        """``"accurate"`` or ``"simhash"``."""
        return self._index.method

    @property
    def settings(self) -> str:
        """The settings line recorded in saved files."""
        return self._index.settings

    def fingerprinter(self) -> Fingerprinter:
        """A Fingerprinter of the index's method (its signatures are the index's)."""
        return Fingerprinter.from_options(self._index.options)

    # Documents ----------------------------------------------------------------------------------

    def insert(self, id: str, text: Text) -> None:
        """Stores a document. FailedPreconditionError when the id is stored already."""
        self._index.insert(id, text)

    def insert_many(self, ids: Iterable[str], texts: Iterable[Text], *, threads: int = 0) -> None:
        """Stores many documents: signed on ``threads`` threads with the GIL released, then stored
        in one load (much faster than ``insert`` one by one). Ids and texts are all checked and
        signed before anything is stored: an error (naming ``ids[i]`` or ``texts[i]``) leaves the
        index as it was."""
        self._index.insert_many(ids, texts, threads=_check_threads(threads))

    def query(self, text: Text) -> List[Match]:
        """Every stored near-duplicate of the text, best first (ties by id)."""
        return _matches(self._index.query(text))

    def query_many(self, texts: Iterable[Text], *, threads: int = 0) -> List[List[Match]]:
        """``query`` of every text, signed and queried on ``threads`` threads."""
        return [_matches(found)
                for found in self._index.query_many(texts, threads=_check_threads(threads))]

    def query_and_insert(self, id: str, text: Text, *, if_new: bool = True) -> QueryAndInsertResult:
        """Queries, then inserts, atomically. ``if_new``: insert only when nothing was found (of
        two near-duplicates inserted concurrently, exactly one is stored)."""
        matches, inserted = self._index.query_and_insert(id, text, if_new=bool(if_new))
        return QueryAndInsertResult(_matches(matches), inserted)

    def remove(self, id: str) -> None:
        """Removes a document. NotFoundError when there is none under the id."""
        self._index.remove(id)

    def get(self, id: str) -> Signature:
        """The stored Signature of a document. NotFoundError when there is none."""
        return Signature._make(self._index.get(id))

    def ids(self) -> List[str]:
        """The stored ids, in insertion order."""
        return self._index.ids()

    def __contains__(self, id: object) -> bool:
        return self._index.contains(id)

    def __len__(self) -> int:
        return self._index.size()

    def stats(self) -> Dict[str, Any]:
        """Documents, empty documents, inserts, removes, memory_bytes, settings and the queries'
        counters (queries, lookups, candidates, matches)."""
        return self._index.stats()

    # Files and life -----------------------------------------------------------------------------

    def save(self, path: PathLike) -> None:
        """Writes the whole index to a file (``Index.load`` reads it back), through neardup's
        output layer: the file appears complete or not at all (the old content stays)."""
        file = _path("path", path)
        self._index.save(file)

    def close(self) -> None:
        """Frees the index (calls in flight finish first). Calling it again does nothing."""
        self._index.close()

    @property
    def closed(self) -> bool:
        return self._index.closed

    def __enter__(self) -> "Index":
        if self._index.closed:
            raise ValueError("index is closed")
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError(
            "a neardup.Index cannot be pickled or copied (a copy would not share the documents "
            "inserted): save() it to a file the other process can read and Index.load() it "
            "there; for the method alone, pass its options or fingerprinter(), which pickle")

    def __repr__(self) -> str:
        if self._index.closed:
            return "<neardup.Index closed>"
        return f"<neardup.Index {self.method}, {len(self)} documents>"


# --------------------------------------------------------------------------------------------------
# dedup


class Duplicate(NamedTuple):
    """A document left out (``id``), the kept document it duplicates and the score of the two (as
    the CLI's ``--dups`` file: the Jaccard estimate to 4 decimals, or the Hamming distance)."""

    id: Any
    kept_id: Any
    score: Score


class Pair(NamedTuple):
    """A near-duplicate pair (``--pairs``), ``id_a`` before ``id_b`` in input order."""

    id_a: Any
    id_b: Any
    score: Score


@dataclass(frozen=True)
class DedupResult:
    """What ``dedup`` decided, as the CLI's outputs.

    ``kept``: the ids of the kept documents, in input order (``-o``). ``kept_positions``: their
    0-based positions in ``records`` (int64 array; to filter a parallel list or a DataFrame).
    ``duplicates``: one Duplicate per document left out (``--dups``). ``clusters``: every cluster of
    two or more documents as ``{"representative": id, "size": n, "members": [ids]}``
    (``--clusters``). ``pairs``: the near-duplicate pairs when asked for (``--pairs``), else [].
    ``report``: the ``--report`` JSON as a dict (its ``bytes`` count the texts' UTF-8 bytes).
    """

    kept: List[Any]
    kept_positions: np.ndarray
    duplicates: List[Duplicate]
    clusters: List[Dict[str, Any]]
    pairs: List[Pair] = field(default_factory=list)
    report: Dict[str, Any] = field(default_factory=dict)


class _Refused(Exception):
    """A record dedup leaves out (on_error="skip") or stops at (on_error="fail")."""


def _lookup(record: Mapping[str, Any], name: str) -> Tuple[bool, Any]:
    """(found, value) of a field; a dotted name reaches into nested mappings (as --id-field)."""
    if name in record:
        return True, record[name]
    value: Any = record
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return False, None
        value = value[part]
    return True, value


_TEXT_TYPES = (str, bytes, bytearray, memoryview)


def _null(value: Any) -> Optional[str]:
    """How a missing value reads in messages: "null" for None, "null (nan)" for a float NaN,
    "null (<NA>)" for pandas' NA (and NaT), as DataFrames hold missing values; None for a value
    that is not missing."""
    if value is None:
        return "null"
    if isinstance(value, (str, bytes, bytearray, memoryview, int)):
        return None
    if isinstance(value, (float, np.floating)):
        return f"null ({value})" if math.isnan(value) else None
    pandas = sys.modules.get("pandas")  # its NA can only come from pandas, once imported
    if pandas is not None and pandas.api.types.is_scalar(value):
        try:
            if pandas.isna(value) is True:
                return f"null ({value})"
        except (TypeError, ValueError):
            pass
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    return type(value).__name__


def dedup(
    records: Iterable[Union[Text, Tuple[Any, Text], Mapping[str, Any]]],
    *,
    method: str = "accurate",
    threshold: Optional[float] = 0.8,
    k: Optional[int] = 3,
    mode: Optional[str] = None,
    shingle_unit: Optional[str] = None,
    shingle_size: Optional[int] = None,
    weighting: Optional[str] = None,
    normalize: bool = True,
    invalid_utf8: str = "replace",
    fold_traditional: Optional[bool] = None,
    folding_table: Optional[PathLike] = None,
    language: str = "auto",
    max_document_bytes: int = 0,
    keyword_count: int = 0,
    dictionary: Optional[PathLike] = None,
    hmm_dir: Optional[PathLike] = None,
    user_dictionaries: Sequence[PathLike] = (),
    idf: Optional[PathLike] = None,
    stop_words: Optional[PathLike] = None,
    use_cache: bool = True,
    keep: str = "first",
    priority_field: Optional[str] = None,
    id_field: str = "id",
    text_field: str = "text",
    unique_ids: bool = False,
    empty: str = "keep",
    on_error: str = "fail",
    pairs: bool = False,
    all_pairs: bool = False,
    boundary_sigmas: float = 3.0,
    threads: int = 0,
) -> DedupResult:
    """Removes near-duplicates from an in-memory collection: ``neardup dedup`` on its records.

    ``records`` is an iterable of texts (str or bytes; their ids are their 1-based positions, as
    the CLI names the lines of one plain-text file), of ``(id, text)`` tuples, or of mappings (a
    parsed JSON Lines record: the id at ``id_field``, the 1-based position when it has none; the
    text at ``text_field``; dotted names reach into nested mappings), mixed as you like.

    ``keep``: which document of a cluster is kept, ``"first"``, ``"last"``, ``"longest"`` or
    ``"shortest"``; ``priority_field`` (mappings): the one with the highest number there instead.
    ``unique_ids``: an id that repeats is an error (else it is counted in the report's
    ``duplicate_ids``). ``empty``: documents without features are kept (``"keep"``), left out
    (``"drop"``) or an error (``"fail"``). ``on_error``: a bad record (invalid UTF-8 under
    ``invalid_utf8="reject"``, a mapping without its text...) stops the run (``"fail"``: the error
    names ``records[i]``) or is left out and counted (``"skip"``). ``pairs``: also list every
    near-duplicate pair; ``all_pairs``: verify every candidate so the report counts all of them.
    ``boundary_sigmas`` (``--boundary-sigmas``, 0 to 10, 3 as the CLI's): the accurate method
    decides a pair whose sketch estimate is within that many standard deviations of the threshold
    by the exact Jaccard similarity of its texts; 0 leaves every pair to its estimate, which with
    ``all_pairs=True`` is ``neardup.dask``'s answer (doc/dask.md).
    The method keywords are the module's. The job runs on ``threads`` threads (0: one per core)
    with the GIL released, on a temporary file in $TMPDIR that is removed afterwards.
    """
    options = _method_options(
        method, threshold, k, mode, shingle_unit, shingle_size, weighting, normalize,
        invalid_utf8, fold_traditional, folding_table, language, max_document_bytes,
        keyword_count, dictionary, hmm_dir, user_dictionaries, idf, stop_words, use_cache)
    for name, value in (("keep", keep), ("id_field", id_field), ("text_field", text_field),
                        ("empty", empty), ("on_error", on_error)):
        _check(name, value, (str,), "str")
    _check("priority_field", priority_field, (str,), "str")
    _check("boundary_sigmas", boundary_sigmas, (float, int), "a number")
    _check_threads(threads)
    if priority_field is not None:
        if keep != "first":
            raise _neardup.InvalidArgumentError(
                "priority_field keeps the document with the highest value of the field; it "
                "cannot be combined with keep")
        keep_rule = "priority"
    elif keep in ("first", "last", "longest", "shortest"):
        keep_rule = keep
    else:
        raise _neardup.InvalidArgumentError(
            f"unknown keep rule '{keep}' (expected first, last, longest or shortest)")
    if on_error not in ("fail", "skip"):
        raise _neardup.InvalidArgumentError(
            f"unknown error policy '{on_error}' (expected fail or skip)")
    if isinstance(records, _TEXT_TYPES) or isinstance(records, Mapping):
        raise TypeError("records must be an iterable of records (texts, (id, text) tuples or "
                        f"mappings), not a single {type(records).__name__}")
    try:
        iterator = iter(records)
    except TypeError:
        raise TypeError("records must be an iterable of texts, (id, text) tuples or mappings, "
                        f"not {type(records).__name__}") from None

    ids: List[Any] = []
    texts: List[Any] = []
    numbers: List[int] = []
    priorities: Optional[List[Optional[float]]] = [] if priority_field is not None else None
    refused: List[Tuple[int, str]] = []
    have_priority = False
    for i, record in enumerate(iterator):
        name = f"records[{i}]"
        try:
            priority: Optional[float] = None
            if isinstance(record, _TEXT_TYPES):
                record_id: Any = i + 1
                text: Any = record
            elif isinstance(record, tuple):
                if len(record) != 2:
                    raise TypeError(f"{name} must be an (id, text) pair, not a tuple of "
                                    f"{len(record)}")
                record_id, text = record
                null = _null(record_id)
                if null is not None:
                    raise _Refused(f"the id is {null}, expected a string or number")
            elif isinstance(record, Mapping):
                found, text = _lookup(record, text_field)
                if not found:
                    raise _Refused(f"no text field '{text_field}'")
                if not isinstance(text, _TEXT_TYPES):
                    raise _Refused(f"text field '{text_field}' is {_json_type(text)}, expected "
                                   "a string")
                found, record_id = _lookup(record, id_field)
                null = _null(record_id) if found else None
                if not found:
                    record_id = i + 1
                elif null is not None:
                    raise _Refused(f"id field '{id_field}' is {null}, expected a string or number")
                elif isinstance(record_id, bool) or not isinstance(record_id, (str, int, float)):
                    raise _Refused(f"id field '{id_field}' is {_json_type(record_id)}, expected "
                                   "a string or number")
                if priority_field is not None:
                    found, value = _lookup(record, priority_field)
                    if found:
                        if isinstance(value, bool) or not isinstance(value, (int, float)):
                            raise _Refused(f"field '{priority_field}' is {_json_type(value)}, "
                                           "expected a number")
                        if not math.isfinite(value):
                            raise _Refused(f"field '{priority_field}' is not a finite number")
                        priority = float(value)
                        have_priority = True
            else:
                raise TypeError(f"{name} must be a text, an (id, text) tuple or a mapping, not "
                                f"{type(record).__name__}")
        except _Refused as refusal:
            if on_error == "fail":
                raise _neardup.InvalidArgumentError(f"{name}: {refusal}") from None
            refused.append((i, f"{name}: {refusal}"))
            continue
        ids.append(record_id)
        texts.append(text)
        numbers.append(i)
        if priorities is not None:
            priorities.append(priority)
    total = len(ids) + len(refused)
    if priority_field is not None and not have_priority and ids:
        raise _neardup.InvalidArgumentError(
            f"no record has the priority field '{priority_field}'")

    # Ids that repeat (an id of the records' own; positions never repeat).
    first_place: Dict[Any, int] = {}
    repeated = 0
    for record_id, number in zip(ids, numbers):
        # As the CLI reads ids: 7 and "7" are the same id.
        key = str(record_id) if isinstance(record_id, (str, int, float)) else record_id
        try:
            earlier = first_place.setdefault(key, number)
        except TypeError:
            continue  # unhashable: not counted
        if earlier != number:
            if unique_ids:
                raise _neardup.InvalidArgumentError(
                    f"records[{number}]: id {record_id!r} repeats the id of records[{earlier}]")
            repeated += 1

    result = _neardup.dedup(
        texts, numbers, options, priorities=priorities, keep=keep_rule, empty=empty,
        on_error=on_error, threads=threads, pairs=pairs, all_pairs=all_pairs,
        boundary_sigmas=float(boundary_sigmas))

    # Record numbers -> the records' ids.
    id_of: Dict[int, Any] = dict(zip(numbers, ids))
    integral = options.method == "simhash"

    def score(value: float) -> Score:
        return int(value) if integral else float(value)

    kept_positions = np.asarray(result["kept"], dtype=np.int64)
    kept = [id_of[int(n)] for n in kept_positions]
    dup_a, dup_b, dup_scores = result["duplicates"]
    duplicates = [Duplicate(id_of[int(a)], id_of[int(b)], score(s))
                  for a, b, s in zip(dup_a, dup_b, dup_scores)]
    clusters = [{"representative": id_of[int(representative)], "size": len(members),
                 "members": [id_of[int(m)] for m in members]}
                for representative, members in result["clusters"]]
    pair_list: List[Pair] = []
    if pairs:
        pair_a, pair_b, pair_scores = result["pairs"]
        pair_list = [Pair(id_of[int(a)], id_of[int(b)], score(s))
                     for a, b, s in zip(pair_a, pair_b, pair_scores)]

    report: Dict[str, Any] = json.loads(result["report"])
    report["duplicate_ids"] = repeated
    if refused:
        report["documents"] = report.get("documents", 0) + len(refused)
        report["skipped"] = report.get("skipped", 0) + len(refused)

        def place(message: str) -> int:
            if message.startswith("records["):
                digits = message[8:message.find("]")]
                if digits.isdigit():
                    return int(digits)
            return total

        errors = sorted(list(report.get("first_errors", [])) + [m for _, m in refused], key=place)
        report["first_errors"] = errors[:10]
    return DedupResult(kept, kept_positions, duplicates, clusters, pair_list, report)
