"""neardup: near-duplicate detection of texts, and jieba-identical Chinese segmentation.

The C++ engine of the `neardup` command, for Python:

- ``Fingerprinter``: SimHash fingerprints and Jaccard sketches of texts, one at a time or in
  batches on all cores (NumPy arrays out);
- ``Index``: the online index of both methods (insert, query, remove, save, load);
- ``dedup``: the batch job over an in-memory collection, with the CLI's decisions;
- ``cut``, ``lcut``, ``cut_for_search``, ``extract_tags`` (and ``neardup.analyse``): the same
  results as jieba's, so ``import neardup as jieba`` is a drop-in replacement;
- ``neardup.dask``: dedup of a corpus on a Dask distributed cluster.

Errors are raised as subclasses of ``neardup.Error`` carrying the library's message.
"""

from ._neardup import (  # noqa: F401  (re-exported)
    CancelledError,
    CorruptionError,
    Error,
    FailedPreconditionError,
    InvalidArgumentError,
    IOError,
    NotFoundError,
    NotSupportedError,
    PermissionDeniedError,
    ResourceExhaustedError,
    UnavailableError,
)
from ._core import *  # noqa: F401,F403
from ._core import __all__ as _core_all
from ._jieba import *  # noqa: F401,F403
from ._jieba import __all__ as _jieba_all
from . import analyse  # noqa: F401

__version__ = "0.1.0"

__all__ = [
    "Error",
    "InvalidArgumentError",
    "NotFoundError",
    "CorruptionError",
    "IOError",
    "ResourceExhaustedError",
    "FailedPreconditionError",
    "CancelledError",
    "NotSupportedError",
    "UnavailableError",
    "PermissionDeniedError",
    "analyse",
    *_core_all,
    *_jieba_all,
]
