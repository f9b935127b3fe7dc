"""Type stubs of neardup._neardup, the C++ extension (pybind11). The package's interface is the
pure-Python layer (neardup/_core.py and the others); these are the calls it is built on."""

import os
from typing import (Any, Callable, Dict, Iterable, List, Literal, Optional, Sequence, Tuple,
                    Union, final, overload)

import numpy as np
import numpy.typing as npt

_Text = Union[str, bytes, bytearray, memoryview]
_Bytes = Union[bytes, bytearray, memoryview, npt.NDArray[np.uint8]]
# (simhash, sketch, band_keys, empty): neardup.Signature's fields.
_SignatureTuple = Tuple[int, bytes, Tuple[int, ...], bool]
_Score = Union[float, int]

# --------------------------------------------------------------------------------------------------
# Exceptions (errors.cc): every error neardup raises, with the library's message.

class Error(Exception): ...
class InvalidArgumentError(Error, ValueError): ...
class NotFoundError(Error, FileNotFoundError): ...
class CorruptionError(Error): ...
class IOError(Error, OSError): ...
class ResourceExhaustedError(Error): ...
class FailedPreconditionError(Error): ...
class CancelledError(Error): ...
class NotSupportedError(Error, NotImplementedError): ...
class UnavailableError(Error, ConnectionError): ...
class PermissionDeniedError(Error): ...

# --------------------------------------------------------------------------------------------------
# Signing (signing.cc)

class MethodOptions:
    """A method and every setting of it, resolved (defaults filled in) and checked."""

    def __init__(
        self,
        method: str = "accurate",
        *,
        threshold: Optional[float] = None,
        k: Optional[int] = None,
        mode: Optional[str] = None,
        shingle_unit: Optional[str] = None,
        shingle_size: Optional[int] = None,
        weighting: Optional[str] = None,
        normalize: bool = True,
        invalid_utf8: str = "replace",
        fold_traditional: Optional[bool] = None,
        folding_table: Optional[str] = None,
        language: str = "auto",
        max_document_bytes: int = 0,
        keyword_count: int = 0,
        dictionary: Optional[str] = None,
        hmm_dir: Optional[str] = None,
        user_dictionaries: Sequence[str] = ...,
        idf: Optional[str] = None,
        stop_words: Optional[str] = None,
        use_cache: bool = True,
    ) -> None: ...
    @staticmethod
    def from_settings(
        settings: str,
        *,
        invalid_utf8: str = "replace",
        max_document_bytes: int = 0,
        folding_table: Optional[str] = None,
    ) -> "MethodOptions": ...
    @property
    def method(self) -> str: ...
    @property
    def settings(self) -> str: ...
    @property
    def threshold(self) -> float: ...
    @property
    def k(self) -> int: ...
    @property
    def mode(self) -> str: ...
    @property
    def shingle_unit(self) -> str: ...
    @property
    def shingle_size(self) -> int: ...
    @property
    def weighting(self) -> str: ...
    @property
    def normalize(self) -> bool: ...
    @property
    def invalid_utf8(self) -> str: ...
    @property
    def fold_traditional(self) -> bool: ...
    @property
    def fold(self) -> str: ...
    @property
    def language(self) -> str: ...
    @property
    def max_document_bytes(self) -> int: ...
    @property
    def keyword_count(self) -> int: ...
    @property
    def bands(self) -> int: ...
    @property
    def rows(self) -> int: ...

class Signer:
    """Signs texts under a MethodOptions. Thread-safe."""

    def __init__(self, options: MethodOptions) -> None: ...
    @property
    def options(self) -> MethodOptions: ...
    @property
    def settings(self) -> str: ...
    @property
    def method(self) -> str: ...
    @property
    def sketch_bytes(self) -> int: ...
    @property
    def bands(self) -> int: ...
    def simhash(self, text: _Text) -> int: ...
    def sign(self, text: _Text) -> _SignatureTuple: ...
    def simhash_batch(
        self, texts: Iterable[_Text], *, threads: int = 0
    ) -> npt.NDArray[np.uint64]: ...
    def sign_batch(
        self, texts: Iterable[_Text], *, threads: int = 0
    ) -> Tuple[
        npt.NDArray[np.uint64], npt.NDArray[np.uint8], npt.NDArray[np.uint32], npt.NDArray[np.bool_]
    ]: ...
    def compare(
        self, a: Union[_Text, _SignatureTuple], b: Union[_Text, _SignatureTuple]
    ) -> Optional[_Score]: ...
    def estimate(self, sketch_a: _Bytes, sketch_b: _Bytes) -> float: ...

def estimate_jaccard(sketch_a: _Bytes, sketch_b: _Bytes) -> float: ...
def hamming_distances(
    a: npt.ArrayLike, b: npt.ArrayLike
) -> npt.NDArray[np.uint8]: ...

# --------------------------------------------------------------------------------------------------
# The online index (index.cc)

class Index:
    """The online index of either method. Thread-safe; after close(), every call raises
    ValueError("index is closed")."""

    def __init__(
        self, options: MethodOptions, *, expected_documents: int = 0, sketch_directory: str = ""
    ) -> None: ...
    @staticmethod
    def load(
        path: str,
        options: MethodOptions,
        *,
        expected_documents: int = 0,
        sketch_directory: str = "",
    ) -> "Index": ...
    def insert(self, id: str, text: _Text) -> None: ...
    def insert_many(
        self, ids: Iterable[str], texts: Iterable[_Text], *, threads: int = 0
    ) -> None: ...
    def query(self, text: _Text) -> List[Tuple[str, _Score]]: ...
    def query_many(
        self, texts: Iterable[_Text], *, threads: int = 0
    ) -> List[List[Tuple[str, _Score]]]: ...
    def query_and_insert(
        self, id: str, text: _Text, *, if_new: bool = True
    ) -> Tuple[List[Tuple[str, _Score]], bool]: ...
    def remove(self, id: str) -> None: ...
    def contains(self, id: object) -> bool: ...
    def get(self, id: str) -> _SignatureTuple: ...
    def size(self) -> int: ...
    def ids(self) -> List[str]: ...
    def stats(self) -> Dict[str, Any]: ...
    def save(self, path: str) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def options(self) -> MethodOptions: ...
    @property
    def settings(self) -> str: ...
    @property
    def method(self) -> str: ...

def index_file_settings(path: str) -> str: ...

# --------------------------------------------------------------------------------------------------
# dedup (dedup.cc)

def dedup(
    texts: Sequence[_Text],
    record_numbers: Sequence[int],
    options: MethodOptions,
    *,
    priorities: Optional[Sequence[Optional[float]]] = None,
    keep: str = "first",
    empty: str = "keep",
    on_error: str = "fail",
    threads: int = 0,
    pairs: bool = False,
    all_pairs: bool = False,
) -> Dict[str, Any]:
    """{"kept": int64 record numbers, "duplicates" and "pairs": (records a, records b, scores)
    arrays, "clusters": [(representative, [members])], "report": the --report JSON text}."""
    ...

# --------------------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------------------
# jieba (jieba.cc): the segmenter and keyword extractor under neardup/_jieba.py and analyse.py

_Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

class Tokenizer:
    """A jieba dictionary (main dictionary, HMM model, user dictionaries) and its cuts, as jieba
    0.42.1's. Immutable; thread-safe."""

    def __init__(
        self,
        dict_path: Optional[_Path] = None,
        user_dict_paths: Sequence[_Path] = (),
        use_cache: bool = True,
    ) -> None: ...
    def cut(self, sentence: _Text, cut_all: object = False, hmm: object = True) -> List[str]: ...
    def cut_for_search(self, sentence: _Text, hmm: object = True) -> List[str]: ...
    def frequency(self, word: _Text) -> Optional[int]: ...
    @property
    def total(self) -> int: ...
    @property
    def word_count(self) -> int: ...
    @property
    def memory_bytes(self) -> int: ...
    @property
    def dict_path(self) -> str: ...
    @property
    def user_dict_paths(self) -> List[str]: ...

class KeywordModel:
    """An IDF table and stop words joined with a Tokenizer's dictionary: jieba.analyse's TF-IDF
    keywords. Immutable; thread-safe."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        idf_path: Optional[_Path] = None,
        stop_words_paths: Sequence[_Path] = (),
        use_cache: bool = True,
    ) -> None: ...
    @overload
    def extract_tags(
        self, sentence: _Text, top: int = 20, with_weight: Literal[False] = False
    ) -> List[str]: ...
    @overload
    def extract_tags(
        self, sentence: _Text, top: int, with_weight: Literal[True]
    ) -> List[Tuple[str, float]]: ...
    @overload
    def extract_tags(
        self, sentence: _Text, top: int = 20, *, with_weight: Literal[True]
    ) -> List[Tuple[str, float]]: ...
    @overload
    def extract_tags(
        self, sentence: _Text, top: int = 20, with_weight: object = False
    ) -> Union[List[str], List[Tuple[str, float]]]: ...
    @property
    def median_idf(self) -> float: ...
    @property
    def idf_path(self) -> str: ...
    @property
    def stop_word_count(self) -> int: ...

@final
class Cutter:
    """jieba's cut and cut_for_search for one neardup.Tokenizer (its methods)."""

    tokenizer: Optional[Tokenizer]
    def __init__(
        self,
        loader: Callable[[], Optional[Callable[[], Tokenizer]]],
        decode: Callable[[object], str],
    ) -> None: ...
    def cut(
        self, sentence: object, cut_all: object = False, HMM: object = True,
        use_paddle: object = False,
    ) -> List[str]: ...
    def cut_for_search(self, sentence: object, HMM: object = True) -> List[str]: ...

# --------------------------------------------------------------------------------------------------
# distributed (distributed.cc): the steps of neardup.dask

WHOLE_FILE: int

class LineFormat:
    """How the lines of an input become documents (neardup dedup's format and fields)."""

    def __init__(self, jsonl: bool, id_field: str = "id", text_field: str = "text",
                 priority_field: str = "", max_line_bytes: int = 67108864) -> None: ...
    jsonl: bool
    id_field: str
    text_field: str
    priority_field: str
    max_line_bytes: int

class JobSigner:
    """The signer of a distributed dedup job (accurate method) and its steps; pickles as its
    settings."""

    def __init__(self, settings: str, max_document_bytes: int = 0) -> None: ...
    @property
    def settings(self) -> str: ...
    @property
    def sketch_bytes(self) -> int: ...
    @property
    def bands(self) -> int: ...
    @property
    def threshold(self) -> float: ...
    def sign_range(self, path: str, start: int, end: int, format: LineFormat) -> Dict[str, Any]: ...
    def sign_texts(self, texts: List[Any], ids: Optional[List[Any]] = None,
                   priorities: Optional[List[Any]] = None) -> Dict[str, Any]: ...
    def verify_buckets(self, keys: npt.NDArray[np.uint64], ordinals: npt.NDArray[np.uint64],
                       labels: npt.NDArray[np.uint64], sketches: npt.NDArray[np.uint8]
                       ) -> Tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]: ...
    def passes(self, a: npt.NDArray[np.uint8], b: npt.NDArray[np.uint8]) -> npt.NDArray[np.bool_]: ...
    def estimate(self, a: npt.NDArray[np.uint8], b: npt.NDArray[np.uint8]
                 ) -> npt.NDArray[np.float64]: ...

def components(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]
               ) -> Tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]: ...
def write_kept_range(path: str, start: int, end: int, max_line_bytes: int,
                     drop: npt.NDArray[np.uint64], out_path: str) -> Tuple[int, int]: ...
def format_duplicates(dups: Sequence[bytes], kept: Sequence[bytes],
                      scores: npt.NDArray[np.float64]) -> bytes: ...
def format_clusters(ids: Sequence[bytes], order: npt.NDArray[np.int64],
                    starts: npt.NDArray[np.int64],
                    representatives: npt.NDArray[np.int64]) -> bytes: ...
# --------------------------------------------------------------------------------------------------
