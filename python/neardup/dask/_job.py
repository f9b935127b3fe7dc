"""The distributed dedup job: the default (accurate) method on a Dask distributed cluster.

The steps (doc/dask.md has the whole design):

1. **sign**: each partition (a range of an input's lines, or a partition of a Dask collection) is
   read and signed by the extension exactly as ``neardup dedup`` reads and signs it; the results
   stay in the workers' memory (persisted), and only counts come back.
2. **band shuffle**: every document's band keys (band number in the high 32 bits, key in the low)
   with its ordinal (partition << 32 | line in the partition), cut into one piece a target
   partition of the key and moved by Dask as arrays; each target keeps (persisted) the rows of
   keys shared by two documents or more, sorted: the buckets.
3. **pass 1**: each bucket member is verified against the bucket's first document (its center),
   whose sketch is in a table shared with every worker; the components of the pairs kept label the
   documents.
4. **pass 2**: the buckets whose members pass 1 did not all join go to their members' partitions,
   come back with the sketches (a second shuffle, of pieces again) and are verified whole, in
   ordinal order, skipping pairs already joined (by the labels or by pairs found in the bucket):
   with pass 1, the pairs kept connect exactly what all pairs would.
5. **clusters**: the connected components of those pairs (ordinals only, on the client); the kept
   document of each is chosen by the keep rule; the kept documents' ids and sketches are shared
   with the partitions of their duplicates, which name them and score them (the dups lines).
6. **kept lines**: each partition writes its kept lines (files: the input lines byte for byte).

Memory: a worker holds its partitions' signatures (about 180 bytes a document) and the pieces of
the shuffles it is given; the client holds the ordinals and ids of the documents that have a
near-duplicate (the clusters output), the sketches of the buckets' centers and of the kept
documents, never the corpus.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pickle
import shutil
import sys
import time
import uuid
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

import dask
from dask import delayed

if TYPE_CHECKING:  # imported where used: a job over files needs neither (0.3 s saved a process)
    import pandas as pd

from .. import _neardup
from .._core import _null

PathLike = Union[str, bytes, "os.PathLike[str]"]
LOCAL_BITS = 32
LOCAL_MASK = (1 << LOCAL_BITS) - 1
KEEP_RULES = ("first", "last", "longest", "shortest", "priority")
EMPTY_POLICIES = ("keep", "drop", "fail")
ERROR_POLICIES = ("fail", "skip")
FORMATS = ("auto", "plain", "jsonl")
FLAG_ID, FLAG_EMPTY, FLAG_PRIORITY = 1, 2, 4
EMPTY_MESSAGE = ("no features: a blank line or text of symbols only "
                 "(--empty keep or drop lets it through)")
SKIP_HINT = " (--on-error skip leaves such documents out)"
MAX_ERRORS_KEPT = 10
# Pass 1 takes the buckets of at least this many documents: a bucket of two has one pair, which
# pass 2 verifies as cheaply (and skips when pass 1 joined the two through other buckets), while
# each center costs its sketch in the table shared with every worker.
MIN_STAR_BUCKET = 3


# ----------------------------------------------------------------------------------------------
# Options


@dataclasses.dataclass
class Options:
    """The job's settings; the names and defaults of ``neardup dedup``'s flags."""

    threshold: float = 0.8
    bands: Optional[int] = None
    rows: Optional[int] = None
    keep: str = "first"
    priority_field: str = ""
    empty: str = "keep"
    on_error: str = "fail"
    id_field: str = "id"
    text_field: str = "text"
    format: str = "auto"
    max_line_bytes: int = 64 << 20
    max_document_bytes: int = 0
    partition_bytes: Optional[int] = None  # None: auto_partition_bytes
    shuffle_partitions: Optional[int] = None
    progress: Optional[Callable[[str], None]] = None

    def check(self) -> None:
        def one_of(name: str, value: str, allowed: Sequence[str]) -> None:
            if value not in allowed:
                raise _neardup.InvalidArgumentError(
                    f"{name} must be one of {', '.join(allowed)}; got {value!r}")

        one_of("keep", self.keep, KEEP_RULES)
        if self.priority_field and self.keep == "first":
            self.keep = "priority"  # as `neardup dedup --priority-field F`
        elif self.priority_field and self.keep != "priority":
            raise _neardup.InvalidArgumentError(
                f"priority_field keeps by priority: it does not go with keep={self.keep!r}")
        one_of("empty", self.empty, EMPTY_POLICIES)
        one_of("on_error", self.on_error, ERROR_POLICIES)
        one_of("format", self.format, FORMATS)
        if self.keep == "priority" and not self.priority_field:
            raise _neardup.InvalidArgumentError("keep='priority' needs priority_field")
        if not isinstance(self.threshold, (int, float)) or not 0 < self.threshold <= 1:
            raise _neardup.InvalidArgumentError(
                f"threshold must be in (0, 1]; got {self.threshold!r}")
        for name in ("max_line_bytes", "partition_bytes"):
            value = getattr(self, name)
            if (value is not None or name != "partition_bytes") and int(value) <= 0:
                raise _neardup.InvalidArgumentError(f"{name} must be positive")

    def settings(self) -> str:
        """The settings line the signer is built from (the library resolves the rest)."""
        words = ["method=accurate", f"threshold={self.threshold!r}"]
        if self.bands is not None or self.rows is not None:
            words.append(f"bands={self.bands or 20}x{self.rows or 0}")
        return " ".join(words)

    def signer(self) -> Any:
        return _neardup.JobSigner(self.settings(), int(self.max_document_bytes))

    def say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)


# ----------------------------------------------------------------------------------------------
# Partitions of input files


@dataclasses.dataclass(frozen=True)
class InputFile:
    name: str  # as the user named it (ids and messages use it)
    path: str
    jsonl: bool
    size: int


@dataclasses.dataclass(frozen=True)
class Range:
    """Lines of one input: those beginning in [start, end), or the whole file."""

    file: int
    path: str
    start: int
    end: int
    jsonl: bool


def _extension(name: str) -> str:
    base = os.path.basename(name).lower()
    for suffix in (".gz", ".zst"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    dot = base.rfind(".")
    return "" if dot <= 0 else base[dot + 1:]


def expand_inputs(inputs: Sequence[str], fmt: str) -> List[InputFile]:
    """Files and folders (recursively, in name order) as ``neardup dedup`` expands them."""
    if not inputs:
        raise _neardup.InvalidArgumentError("no input given")
    files: List[InputFile] = []

    def format_of(name: str) -> bool:
        if fmt == "auto":
            return _extension(name) in ("jsonl", "ndjson")
        return fmt == "jsonl"

    for given in inputs:
        if given == "-":
            raise _neardup.InvalidArgumentError(
                "standard input cannot be read by the workers: name files or folders")
        if not os.path.exists(given):
            raise _neardup.NotFoundError(f"{given}: cannot open: No such file or directory")
        if os.path.isdir(given):
            found = []
            for root, _, names in os.walk(given):
                for name in names:
                    path = os.path.join(root, name)
                    if os.path.isfile(path):
                        found.append(path)
            if not found:
                raise _neardup.InvalidArgumentError(f"{given}: the folder holds no files")
            for path in sorted(found):
                files.append(InputFile(path, os.path.abspath(path), format_of(path),
                                       os.path.getsize(path)))
        elif os.path.isfile(given):
            files.append(InputFile(given, os.path.abspath(given), format_of(given),
                                   os.path.getsize(given)))
        else:
            raise _neardup.InvalidArgumentError(
                f"{given}: not a regular file or folder (the workers read inputs by name)")
    return files


# The default size of an input range: at most MAX_PARTITION_BYTES, and smaller when the inputs
# would give fewer than RANGES_PER_THREAD ranges a worker thread, down to MIN_PARTITION_BYTES.
# With two ranges a thread, one slow task leaves a core idle: at 1M documents (251 MB) on 2
# workers, 8 ranges of 32 MB took 5.8 s against 6.1 s for 4 of 64 MB. Larger ranges keep the
# shuffles' pieces (ranges x ranges) few: at 10M, 75 ranges of 32 MB took 114 s against 97 s.
MAX_PARTITION_BYTES = 64 << 20
MIN_PARTITION_BYTES = 4 << 20
RANGES_PER_THREAD = 4


def auto_partition_bytes(files: Sequence[InputFile], threads: int) -> int:
    plain = sum(f.size for f in files if not f.name.lower().endswith((".gz", ".zst")))
    wanted = -(-plain // (RANGES_PER_THREAD * max(1, threads)))
    return int(min(MAX_PARTITION_BYTES, max(MIN_PARTITION_BYTES, wanted)))


def plan_ranges(files: Sequence[InputFile], partition_bytes: int) -> List[Range]:
    """Plain files cut in ranges of about partition_bytes; compressed ones whole."""
    ranges: List[Range] = []
    for i, f in enumerate(files):
        compressed = f.name.lower().endswith((".gz", ".zst"))
        if compressed or f.size <= partition_bytes:
            ranges.append(Range(i, f.path, 0, _neardup.WHOLE_FILE, f.jsonl))
            continue
        for start in range(0, f.size, partition_bytes):
            end = min(start + partition_bytes, f.size)
            ranges.append(Range(i, f.path, start, end, f.jsonl))
    return ranges


# ----------------------------------------------------------------------------------------------
# Tasks (run on the workers; module-level so that they pickle by reference)


def _sign_range(signer: Any, line_format: Any, r: Range) -> Dict[str, Any]:
    return signer.sign_range(r.path, r.start, r.end, line_format)


def _sign_records(signer: Any, records: List[Any], text_field: str, id_field: str,
                  priority_field: str) -> Dict[str, Any]:
    texts: List[Any] = []
    ids: List[Any] = []
    priorities: List[Any] = []
    refused: Dict[int, str] = {}  # record (in the partition) -> why it is a bad record
    for i, record in enumerate(records):
        try:
            text, record_id, priority = _record_fields(record, text_field, id_field,
                                                       priority_field)
        except _Refused as refusal:
            refused[i] = str(refusal)
            text, record_id, priority = None, None, None
        texts.append(text)
        ids.append(record_id)
        priorities.append(priority)
    part = signer.sign_texts(texts, ids, priorities)
    if refused:
        # The extension calls a record without text "no text (None)": say why instead.
        part["bad"] = [(local, refused.get(int(local), message)) for local, message in part["bad"]]
    return part


class _Refused(Exception):
    """A bad record: counted and left out under on_error='skip', the job's error otherwise (with
    the record's number)."""


def _record_fields(record: Any, text_field: str, id_field: str,
                   priority_field: str) -> Tuple[Any, Any, Any]:
    """(text, id or None, priority or None) of a record; _Refused for a bad one: no text (None,
    NaN or pandas' NA, as a DataFrame holds missing values), or an id that is null (None, NaN, NA)
    or a boolean, which ``neardup.dedup`` and ``neardup dedup`` refuse too."""
    if isinstance(record, (str, bytes)):
        return record, None, None
    if isinstance(record, dict):
        priority = record.get(priority_field) if priority_field else None
        if priority is not None and not isinstance(priority, (int, float)):
            priority = None
        if text_field not in record:
            raise _Refused(f"no text field '{text_field}'")
        record_id = None
        if id_field and id_field in record:
            record_id = record[id_field]
            null = _null(record_id)
            if null is not None or isinstance(record_id, (bool, np.bool_)):
                raise _Refused(f"id field '{id_field}' is {null or 'a boolean'}, expected a "
                               "string or number")
        return _text_of(record[text_field]), record_id, priority
    if isinstance(record, (tuple, list)) and len(record) == 2:
        null = _null(record[0])
        if null is not None:
            raise _Refused(f"the id of an (id, text) pair is {null}, expected a string or number")
        return _text_of(record[1]), record[0], None
    raise TypeError(
        "records must be str, bytes, dicts with a text field or (id, text) pairs; got "
        + type(record).__name__)


def _text_of(text: Any) -> Any:
    """The text of a record; _Refused when it is missing (None, NaN, NA)."""
    if isinstance(text, (str, bytes)):
        return text
    if _null(text) is not None:
        raise _Refused(f"no text ({text})")
    return text  # the extension names what is not text


def _integral_ids(values: List[Any]) -> List[Any]:
    """The ids of a float column as ints when every one that is not NaN is integral: a column of
    int ids with a missing one is float in pandas, and its ids are the ints (1, not 1.0)."""
    if all(math.isnan(v) or v.is_integer() for v in values):
        return [v if math.isnan(v) else int(v) for v in values]
    return values


def _frame_records(frame: pd.DataFrame, text_field: str, id_field: str,
                   priority_field: str) -> List[Any]:
    if text_field not in frame.columns:
        raise _neardup.InvalidArgumentError(
            f"the dataframe has no text column {text_field!r}: {list(frame.columns)[:10]}")
    columns = {text_field: frame[text_field].tolist()}
    if id_field and id_field in frame.columns:
        ids = frame[id_field]
        columns[id_field] = (_integral_ids(ids.tolist()) if ids.dtype.kind == "f" else
                             ids.tolist())
    if priority_field and priority_field in frame.columns:
        import pandas as pd
        columns[priority_field] = [None if pd.isna(v) else float(v)
                                   for v in frame[priority_field].tolist()]
    names = list(columns)
    return [dict(zip(names, values)) for values in zip(*columns.values())]


def _summary(part: Dict[str, Any]) -> Dict[str, Any]:
    flags = part["flags"]
    empty = (flags & FLAG_EMPTY) != 0
    bad = part["bad"]
    return {
        "lines": int(part["lines"]),
        "bytes": int(part["bytes"]),
        "documents": int(len(flags)),
        "with_id": int(np.count_nonzero(flags & FLAG_ID)),
        "with_priority": int(np.count_nonzero(flags & FLAG_PRIORITY)),
        "empty_locals": part["local"][empty],
        "bad_locals": np.array([b[0] for b in bad], dtype=np.uint64),
        "bad_messages": [b[1] for b in bad[:MAX_ERRORS_KEPT]],
    }


# The shuffles move NumPy arrays, not DataFrames: each partition cuts its rows into one piece a
# target (the target computed from the key, which is a hash already: _neardup.band_pieces,
# JobSigner.attach_sketches), and each target sorts the pieces it is given (_neardup.shared_rows,
# JobSigner.verify_buckets). Dask moves the pieces between workers as buffers, without pickling
# or regrouping them row by row. The band shuffle's pieces hold 8 bytes a row (band key, local
# line number), band by band; the band and the source partition are implied by the piece.


def _band_pieces(part: Dict[str, Any], p: int, partitions: int) -> Tuple[np.ndarray, ...]:
    usable = (part["flags"] & FLAG_EMPTY) == 0  # documents without features are never joined
    return tuple(_neardup.band_pieces(part["band_keys"], part["local"], usable, p, partitions))


def _shared_rows(pieces: List[np.ndarray]) -> np.ndarray:
    """The rows (key, ordinal) of keys that two documents or more have, sorted by key then ordinal:
    after the shuffle, all rows of a key are in one target."""
    return _neardup.shared_rows(list(pieces))


def _owner(ordinals: np.ndarray) -> np.ndarray:
    return (ordinals >> np.uint64(LOCAL_BITS)).astype(np.int64)


def _runs(rows: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The shared rows (sorted by key then ordinal, as _shared_rows leaves them) and where each
    run of one key starts."""
    keys = rows[:, 0]
    ordinals = rows[:, 1]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else \
        np.zeros(0, dtype=np.int64)
    return keys, ordinals, starts


def _star_pairs(buckets: np.ndarray, partitions: int) -> Tuple[np.ndarray, ...]:
    """Pass 1: each bucket's first document (its smallest ordinal, the center) paired with every
    other member, (center, member) rows grouped by the member's partition."""
    return tuple(_neardup.star_pieces(buckets, partitions, MIN_STAR_BUCKET))


def _centers(buckets: np.ndarray) -> np.ndarray:
    keys, ordinals, starts = _runs(buckets)
    sizes = np.diff(np.r_[starts, len(keys)])
    return np.unique(ordinals[starts[sizes >= MIN_STAR_BUCKET]])


def _positions(part: Dict[str, Any], locals_: np.ndarray) -> np.ndarray:
    """Where the documents of local line numbers `locals_` are in the partition's arrays."""
    local = part["local"]
    if len(local) == 0 or int(local[-1]) == len(local) - 1:
        return locals_.astype(np.intp)  # every line a document: its number is its place
    return np.searchsorted(local, locals_)


def _sketches_of(part: Dict[str, Any], locals_: np.ndarray) -> np.ndarray:
    # np.take copies whole rows (fancy indexing of a 2-d array goes element by element).
    return np.take(part["sketches"], _positions(part, locals_), axis=0)


def _verify_stars(signer: Any, pieces: List[np.ndarray], part: Dict[str, Any],
                  centers: Tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """The (center, member) pairs of one partition's members that pass the test: the member's
    sketch is here, the center's in the shared table of centers."""
    center_ordinals, center_sketches = centers
    return signer.verify_stars(list(pieces), part["local"], part["sketches"], center_ordinals,
                               center_sketches)


def _mixed_rows(buckets: np.ndarray, labels: Tuple[np.ndarray, np.ndarray],
                partitions: int) -> Tuple[np.ndarray, ...]:
    """Pass 2: the rows (key, ordinal, label) of buckets whose members are not all joined by pass
    1, grouped by the partition of their document; a bucket's center is left out when pass 1
    verified its pairs."""
    nodes, roots = labels
    return tuple(_neardup.mixed_pieces(buckets, nodes, roots, partitions, MIN_STAR_BUCKET))


def _attach_sketches(signer: Any, pieces: List[np.ndarray], part: Dict[str, Any],
                     partitions: int) -> Tuple[Tuple[np.ndarray, np.ndarray], ...]:
    """Pass 2: the rows (key, ordinal, label, sketch) of this partition's documents and their
    sketches (each once a piece), one (rows, sketches) piece a target partition of the key."""
    return tuple(signer.attach_sketches(list(pieces), part["local"], part["sketches"],
                                        partitions))


def _verify(signer: Any, pieces: List[Tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    a, b = signer.verify_buckets(list(pieces))
    return np.stack([a, b], axis=1)


def _names(part: Dict[str, Any], at: np.ndarray, naming: Tuple[str, int]) -> List[bytes]:
    """The ids of documents of a partition (by position in it): their id field, else their line
    ("LINE", or "PATH:LINE" with several inputs)."""
    prefix, first_line = naming
    ids = part["ids"]
    local = part["local"]
    return [ids[i] if ids[i] is not None else
            f"{prefix}{first_line + int(local[i]) + 1}".encode("utf-8", "surrogateescape")
            for i in at.tolist()]


def _keep_figures(part: Dict[str, Any], locals_: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    at = _positions(part, locals_)
    return part["lengths"][at], part["priorities"][at]


def _pack(value: Any) -> bytes:
    """A task's result holding many small objects (ids), as one pickle: distributed sends the
    items of a list of bytes one by one, which costs seconds a million."""
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _kept_info(part: Dict[str, Any], locals_: np.ndarray, naming: Tuple[str, int]) -> bytes:
    at = _positions(part, locals_)
    return _pack((_names(part, at, naming), part["sketches"][at]))


def _name_table(names: List[bytes]) -> Tuple[np.ndarray, np.ndarray]:
    """Names as one buffer and their offsets: two arrays travel at once, where Dask would
    serialise a list of bytes item by item (18 s for the 464k names of a 10M-document job)."""
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, names), dtype=np.int64, count=len(names)), out=offsets[1:])
    return np.frombuffer(b"".join(names), dtype=np.uint8), offsets


def _partition_duplicates(signer: Any, part: Dict[str, Any], locals_: np.ndarray,
                          kept: np.ndarray, p: int, kept_table: Any,
                          naming: Tuple[str, int]) -> bytes:
    """For the documents of partition p that are in clusters (locals_, with the ordinal of their
    cluster's kept document): their ids, and the dups lines of those that are not kept, with their
    scores against the kept document (whose id and sketch are in the shared table), packed."""
    kept_ordinals, (name_bytes, name_offsets), kept_sketches = kept_table
    at = _positions(part, locals_)
    names = _names(part, at, naming)
    ordinals = (np.uint64(p) << np.uint64(LOCAL_BITS)) | locals_.astype(np.uint64)
    dup = kept != ordinals
    k = np.searchsorted(kept_ordinals, kept[dup])
    scores = signer.estimate(np.ascontiguousarray(part["sketches"][at[dup]]),
                             np.ascontiguousarray(kept_sketches[k])) if np.any(dup) else \
        np.zeros(0)
    dup_names = [n for n, d in zip(names, dup.tolist()) if d]
    kept_names = [name_bytes[name_offsets[i]:name_offsets[i + 1]].tobytes() for i in k.tolist()]
    lines = _neardup.format_duplicates(dup_names, kept_names, scores)
    return _pack((names, lines, np.flatnonzero(dup), scores))


def _drop_locals(part: Dict[str, Any], dup_locals: np.ndarray, empty: str) -> np.ndarray:
    """The lines of a partition that are not kept: bad ones, duplicates, dropped empty ones."""
    bad = np.array([b[0] for b in part["bad"]], dtype=np.uint64)
    drop = [bad, dup_locals.astype(np.uint64)]
    if empty == "drop":
        drop.append(part["local"][(part["flags"] & FLAG_EMPTY) != 0])
    return np.unique(np.concatenate(drop)).astype(np.uint64)


def _write_kept(r: Range, max_line_bytes: int, part: Dict[str, Any], dup_locals: np.ndarray,
                empty: str, out_path: str) -> Tuple[int, int]:
    drop = _drop_locals(part, dup_locals, empty)
    return _neardup.write_kept_range(r.path, r.start, r.end, max_line_bytes, drop, out_path)


def _kept_records(records: List[Any], part: Dict[str, Any], dup_locals: np.ndarray,
                  empty: str) -> List[Any]:
    drop = set(_drop_locals(part, dup_locals, empty).tolist())
    return [record for i, record in enumerate(records) if i not in drop]


def _kept_frame(frame: pd.DataFrame, part: Dict[str, Any], dup_locals: np.ndarray,
                empty: str) -> pd.DataFrame:
    drop = _drop_locals(part, dup_locals, empty).astype(np.int64)
    mask = np.ones(len(frame), dtype=bool)
    mask[drop] = False
    return frame.iloc[mask]


# ----------------------------------------------------------------------------------------------
# The job


@dataclasses.dataclass
class Decisions:
    """What the job decided, by ordinal."""

    kept_ordinals: np.ndarray  # kept document of each cluster, clusters by first member
    dup_ordinals: np.ndarray  # every duplicate, in input order
    dup_lines: bytes  # the dups output
    cluster_lines: bytes  # the clusters output
    duplicates: List[Tuple[str, str, float]]  # (decide(lists=True) only)
    clusters: List[Dict[str, Any]]  # (decide(lists=True) only)
    cluster_count: int


class _Runner:
    """Computes on the given distributed Client, else on dask's current scheduler (a distributed
    Client when one is active: then persisted results stay on its workers)."""

    def __init__(self, client: Any):
        self.client = client

    def threads(self) -> int:
        """The worker threads the tasks run on."""
        if self.client is not None:
            return max(1, sum(self.client.nthreads().values()))
        try:
            import distributed
            return max(1, sum(distributed.get_client().nthreads().values()))
        except (ImportError, ValueError):
            return os.cpu_count() or 1

    def persist(self, objects: List[Any]) -> List[Any]:
        if self.client is not None:
            return list(self.client.persist(objects))
        return list(dask.persist(*objects))

    def compute(self, objects: List[Any]) -> List[Any]:
        if self.client is not None:
            return list(self.client.gather(self.client.compute(objects)))
        return list(dask.compute(*objects))

    def compute_packed(self, objects: List[Any]) -> List[Any]:
        """compute() of tasks that return _pack()ed values."""
        return [pickle.loads(packed) for packed in self.compute(objects)]

    def share(self, value: Any) -> Any:
        """A value every task of a step reads: sent to each worker once."""
        if self.client is not None:  # (in a list: scatter would send a tuple's items one by one)
            return self.client.scatter([value], broadcast=True, hash=False)[0]
        return delayed(value)


class _Job:
    """One run over partitions whose signatures are persisted on the cluster."""

    def __init__(self, options: Options, signer: Any, parts: List[Any],
                 naming: Callable[[int], Tuple[str, int]], started: float, runner: _Runner):
        self.options = options
        self.runner = runner
        self.signer = signer
        self.parts = parts  # persisted delayed results of the sign step
        # Partition -> (prefix, number of its first line): a document without an id field is
        # named prefix + its 1-based line number.
        self.naming = naming
        self.stages: List[Dict[str, Any]] = []
        self._clock = started

    def stage(self, name: str, **figures: Any) -> None:
        now = time.monotonic()
        self.stages.append({"stage": name, "seconds": round(now - self._clock, 3), **figures})
        self.options.say(f"{name}: {now - self._clock:.1f} s"
                         + "".join(f", {k} {v:,}" if isinstance(v, int) else f", {k} {v}"
                                   for k, v in figures.items()))
        self._clock = now

    def pairs(self) -> Tuple[np.ndarray, np.ndarray]:
        partitions = len(self.parts)
        shuffle_partitions = self.options.shuffle_partitions or max(1, partitions)
        pieces = [delayed(_band_pieces, nout=shuffle_partitions)(part, p, shuffle_partitions)
                  for p, part in enumerate(self.parts)]
        buckets = self.runner.persist([
            delayed(_shared_rows)([piece[t] for piece in pieces])
            for t in range(shuffle_partitions)])
        # Pass 1: every member against its bucket's center, the centers' sketches shared.
        centers = np.unique(np.concatenate(
            [np.zeros(0, np.uint64)] + self.runner.compute([delayed(_centers)(b) for b in buckets])))
        center_sketches = np.concatenate(
            [np.zeros((0, self.signer.sketch_bytes), np.uint8)]
            + self.runner.compute([delayed(_sketches_of)(self.parts[p], locals_)
                                   for p, locals_ in self.by_partition(centers)]))
        shared_centers = self.runner.share((centers, center_sketches))
        stars = [delayed(_star_pairs, nout=partitions)(b, partitions) for b in buckets]
        found = self.runner.compute([
            delayed(_verify_stars)(self.signer, [s[p] for s in stars], part, shared_centers)
            for p, part in enumerate(self.parts)])
        first = np.concatenate([np.zeros((0, 2), np.uint64)] + found)
        self.stage("join-centers", centers=int(len(centers)), pairs=int(len(first)))
        # Pass 2: the buckets whose members pass 1 did not all join, verified whole.
        labels = self.runner.share(_neardup.components(first[:, 0], first[:, 1]))
        mixed = [delayed(_mixed_rows, nout=partitions)(b, labels, partitions) for b in buckets]
        attached = [delayed(_attach_sketches, nout=shuffle_partitions)(
            self.signer, [m[p] for m in mixed], part, shuffle_partitions)
            for p, part in enumerate(self.parts)]
        second = self.runner.compute([
            delayed(_verify)(self.signer, [piece[t] for piece in attached])
            for t in range(shuffle_partitions)])
        pairs = np.concatenate([first] + second)
        self.stage("join-buckets", pairs=int(len(pairs) - len(first)))
        return pairs[:, 0].copy(), pairs[:, 1].copy()

    def by_partition(self, ordinals: np.ndarray) -> List[Tuple[int, np.ndarray]]:
        """Sorted ordinals as (partition, its local numbers), for the partitions that have some."""
        owner = _owner(ordinals)
        bounds = np.searchsorted(owner, np.arange(len(self.parts) + 1))
        return [(p, ordinals[bounds[p]:bounds[p + 1]] & np.uint64(LOCAL_MASK))
                for p in range(len(self.parts)) if bounds[p + 1] > bounds[p]]

    def decide(self, a: np.ndarray, b: np.ndarray, lists: bool) -> Decisions:
        """The clusters of the pairs, their kept documents and the outputs; with `lists`, the
        duplicates and clusters as Python lists too."""
        nodes, roots = _neardup.components(a, b)
        n = len(nodes)
        index = np.arange(n)
        members = self.by_partition(nodes)
        # The kept member of each cluster by the keep rule (ties: the earlier document).
        rule = self.options.keep
        if rule in ("first", "last"):
            primary = index if rule == "first" else -index
        else:
            figures = self.runner.compute([delayed(_keep_figures)(self.parts[p], locals_)
                                           for p, locals_ in members])
            length = np.concatenate([np.zeros(0, np.uint32)] + [f[0] for f in figures])
            priority = np.concatenate([np.zeros(0)] + [f[1] for f in figures])
            primary = {"longest": -length.astype(np.int64), "shortest": length.astype(np.int64),
                       "priority": -priority}[rule]
        order = np.lexsort((index, primary, roots))  # by cluster, then best first
        first_of_cluster = np.r_[True, roots[order][1:] != roots[order][:-1]] if n else \
            np.zeros(0, dtype=bool)
        best = order[first_of_cluster]  # the kept member of each cluster, clusters by root
        kept_of_node = best[np.searchsorted(roots[best], roots)]
        kept_ordinals = nodes[best]  # sorted: clusters by root, and a kept member is in its own
        kept_sorted = np.argsort(kept_ordinals)
        kept_ordinals = kept_ordinals[kept_sorted]
        # The kept documents' ids and sketches, shared with the partitions of their duplicates.
        kept_infos = self.runner.compute_packed([delayed(_kept_info)(self.parts[p], locals_,
                                                              self.naming(p))
                                          for p, locals_ in self.by_partition(kept_ordinals)])
        kept_names = [name for info in kept_infos for name in info[0]]
        kept_sketches = np.concatenate(
            [np.zeros((0, self.signer.sketch_bytes), np.uint8)] + [info[1] for info in kept_infos])
        table = self.runner.share((kept_ordinals, _name_table(kept_names), kept_sketches))
        kept_of_ordinal = nodes[kept_of_node]
        bounds = np.searchsorted(_owner(nodes), np.arange(len(self.parts) + 1))
        results = self.runner.compute_packed([
            delayed(_partition_duplicates)(self.signer, self.parts[p], locals_,
                                           kept_of_ordinal[bounds[p]:bounds[p + 1]], p, table,
                                           self.naming(p))
            for p, locals_ in members])
        ids: List[bytes] = [name for r in results for name in r[0]]
        dup_lines = b"".join(r[1] for r in results)
        duplicates: List[Tuple[str, str, float]] = []
        dup_index: List[np.ndarray] = []
        for (p, _), r in zip(members, results):
            global_index = bounds[p] + r[2]
            dup_index.append(global_index)
            kept_at = kept_of_node[global_index]
            if lists:
                duplicates += [(_text(ids[d]), _text(ids[k]), float(score))
                               for d, k, score in zip(global_index.tolist(), kept_at.tolist(),
                                                      r[3].tolist())]
        dups = np.concatenate([np.zeros(0, np.int64)] + dup_index)
        # Clusters in order of their first member (the root), members in input order.
        by_cluster = np.lexsort((index, roots))
        starts = np.flatnonzero(np.r_[True, roots[by_cluster][1:] != roots[by_cluster][:-1]]) \
            if n else np.zeros(0, dtype=np.int64)
        cluster_lines = _neardup.format_clusters(ids, by_cluster, starts,
                                                 kept_of_node[by_cluster[starts]])
        clusters = []
        if lists:
            ends = np.r_[starts[1:], n]
            for s, e in zip(starts.tolist(), ends.tolist()):
                cluster = by_cluster[s:e]
                clusters.append({"representative": _text(ids[int(kept_of_node[cluster[0]])]),
                                 "size": int(e - s),
                                 "members": [_text(ids[i]) for i in cluster.tolist()]})
        self.stage("clusters", clusters=len(starts), duplicates=len(dups))
        return Decisions(kept_ordinals, nodes[dups], dup_lines, cluster_lines, duplicates,
                         clusters, len(starts))

    def dup_locals(self, decisions: Decisions) -> List[np.ndarray]:
        owner = (decisions.dup_ordinals >> np.uint64(LOCAL_BITS)).astype(np.int64)
        bounds = np.searchsorted(owner, np.arange(len(self.parts) + 1))
        return [decisions.dup_ordinals[bounds[p]:bounds[p + 1]] & np.uint64(LOCAL_MASK)
                for p in range(len(self.parts))]


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _check_documents(options: Options, summaries: List[Dict[str, Any]],
                     where: Callable[[int, int], str]) -> Tuple[List[str], int]:
    """Applies the error and empty policies: the first bad line fails the job under
    on_error='fail'. Returns the messages of the first bad lines and their count."""
    errors: List[str] = []
    skipped = 0
    for p, s in enumerate(summaries):
        bad = [(int(local), message) for local, message in
               zip(s["bad_locals"].tolist(), s["bad_messages"] + [""] * len(s["bad_locals"]))]
        if options.empty == "fail":
            bad += [(int(local), EMPTY_MESSAGE) for local in s["empty_locals"].tolist()]
            bad.sort()
        for local, message in bad:
            if options.on_error == "fail":
                raise _neardup.InvalidArgumentError(f"{where(p, local)}: {message}{SKIP_HINT}")
            skipped += 1
            if len(errors) < MAX_ERRORS_KEPT:
                errors.append(f"{where(p, local)}: {message}")
    documents = sum(s["documents"] for s in summaries)
    if options.keep == "priority" and documents > 0 and not any(
            s["with_priority"] for s in summaries):
        raise _neardup.InvalidArgumentError(
            f"no document has the priority field '{options.priority_field}' (a JSONL number "
            "field)")
    return errors, skipped


def _report(options: Options, signer: Any, summaries: List[Dict[str, Any]], decisions: Decisions,
            errors: List[str], skipped: int, job: _Job, seconds: float) -> Dict[str, Any]:
    documents = sum(s["documents"] for s in summaries)
    empty = sum(len(s["empty_locals"]) for s in summaries)
    if options.empty == "fail":
        documents -= empty  # they were bad lines
        empty = 0
    duplicates = len(decisions.dup_ordinals)
    kept = documents - duplicates - (empty if options.empty == "drop" else 0)
    return {
        "documents": documents,
        "bytes": sum(s["bytes"] for s in summaries),
        "skipped": skipped,
        "first_errors": errors,
        "kept": kept,
        "duplicates": duplicates,
        "clusters": decisions.cluster_count,
        "pairs_found": None,
        "empty_documents": empty,
        "empty_dropped": options.empty == "drop",
        "partitions": len(summaries),
        "settings": f"{signer.settings} empty={options.empty}",
        "stages": job.stages,
        "seconds": round(seconds, 3),
    }


def _options(function: str, options: Dict[str, Any]) -> Options:
    """The job's Options from a function's keywords: TypeError naming a keyword the function does
    not take, InvalidArgumentError for a method other than the accurate one (the only one with band
    keys to shuffle) or a bad value."""
    method = options.pop("method", "accurate")
    if method != "accurate":
        raise _neardup.InvalidArgumentError(
            f"neardup.dask runs the accurate method only (band keys are what it shuffles); got "
            f"method={method!r}: use neardup.dedup or `neardup dedup --method {method}` on one "
            "machine")
    names = {f.name for f in dataclasses.fields(Options)}
    for name in options:
        if name not in names:
            raise TypeError(f"{function}() got an unexpected keyword argument {name!r} (its "
                            f"options: method, {', '.join(sorted(names))})")
    opts = Options(**options)
    opts.check()
    return opts


def _input_list(inputs: Any) -> List[str]:
    """The inputs as a list of names: a single path (str, bytes or os.PathLike) is a list of one."""
    if isinstance(inputs, (str, bytes, os.PathLike)):
        inputs = [inputs]
    try:
        items = list(inputs)
    except TypeError:
        raise TypeError("inputs must be a path or a list of paths, not "
                        + type(inputs).__name__) from None
    names = []
    for item in items:
        if not isinstance(item, (str, bytes, os.PathLike)):
            raise TypeError("inputs must be paths (str or os.PathLike), not "
                            + type(item).__name__)
        names.append(os.fsdecode(os.fspath(item)))
    return names


def dedup_files(inputs: Union[PathLike, Sequence[PathLike]], output_dir: PathLike, *,
                client: Any = None, **options: Any) -> Dict[str, Any]:
    """Deduplicates files on the cluster of ``client`` (default: dask's current one) and writes
    ``output_dir``: ``kept/part-NNNNN.jsonl`` (or ``.txt`` for plain-text inputs), the kept lines
    of each partition byte for byte, in input order; ``dups.tsv``; ``clusters.jsonl``;
    ``report.json``. Concatenated in name order, the parts are ``neardup dedup -o``'s file; the
    other three are its ``--dups``, ``--clusters`` (and a report of the run).

    The inputs are read by the workers by name: they must see the same files (a shared file
    system). The outputs are written to a folder beside ``output_dir`` and renamed to it when the
    job succeeded; ``output_dir`` must not exist or be empty. ``inputs``: a list of files and
    folders, or one. Returns the report.
    """
    opts = _options("dedup_files", options)
    inputs = _input_list(inputs)
    started = time.monotonic()
    # A symbolic link to a folder is followed: the folder is written, the link stays.
    output_dir = os.path.realpath(os.fspath(output_dir))
    if os.path.isdir(output_dir) and os.listdir(output_dir):
        raise _neardup.FailedPreconditionError(
            f"{output_dir}: the output folder exists and is not empty")
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise _neardup.InvalidArgumentError(f"{output_dir}: exists and is not a folder")
    files = expand_inputs(inputs, opts.format)
    runner = _Runner(client)
    partition_bytes = opts.partition_bytes or auto_partition_bytes(files, runner.threads())
    ranges = plan_ranges(files, int(partition_bytes))
    signer = opts.signer()
    line_format = _neardup.LineFormat(
        False, opts.id_field, opts.text_field,
        opts.priority_field if opts.keep == "priority" else "", int(opts.max_line_bytes))
    formats = {j: _neardup.LineFormat(j, line_format.id_field, line_format.text_field,
                                      line_format.priority_field, line_format.max_line_bytes)
               for j in (False, True)}
    parts = [delayed(_sign_range)(signer, formats[r.jsonl], r, pure=True) for r in ranges]
    parts = runner.persist(parts)
    summaries = runner.compute([delayed(_summary)(part) for part in parts])

    # Line numbers: each range's first line in its file.
    first_line: List[int] = []
    lines_before: Dict[int, int] = {}
    for r, s in zip(ranges, summaries):
        first_line.append(lines_before.get(r.file, 0))
        lines_before[r.file] = lines_before.get(r.file, 0) + s["lines"]
    several = len(files) > 1

    def where(p: int, local: int) -> str:
        return f"{files[ranges[p].file].name}:{first_line[p] + local + 1}"

    def naming(p: int) -> Tuple[str, int]:
        return (f"{files[ranges[p].file].name}:" if several else "", first_line[p])

    job = _Job(opts, signer, parts, naming, started, runner)
    job.stage("sign", partitions=len(parts), documents=sum(s["documents"] for s in summaries))
    errors, skipped = _check_documents(opts, summaries, where)
    a, b = job.pairs()
    decisions = job.decide(a, b, lists=False)

    staging = f"{output_dir}.tmp-{uuid.uuid4().hex[:12]}"
    os.makedirs(os.path.join(staging, "kept"))
    try:
        dup_locals = job.dup_locals(decisions)
        writes = []
        for p, (r, part) in enumerate(zip(ranges, parts)):
            suffix = "jsonl" if r.jsonl else "txt"
            out = os.path.join(staging, "kept", f"part-{p:05d}.{suffix}")
            writes.append(delayed(_write_kept)(r, int(opts.max_line_bytes), part, dup_locals[p],
                                               opts.empty, out))
        job.runner.compute(writes)
        job.stage("write", parts=len(writes))
        report = _report(opts, signer, summaries, decisions, errors, skipped, job,
                         time.monotonic() - started)
        report["worker_peak_rss_bytes"] = _worker_peaks(client)
        _write_file(os.path.join(staging, "dups.tsv"), decisions.dup_lines)
        _write_file(os.path.join(staging, "clusters.jsonl"), decisions.cluster_lines)
        _write_file(os.path.join(staging, "report.json"),
                    (json.dumps(report, indent=2) + "\n").encode())
        if os.path.isdir(output_dir):
            os.rmdir(output_dir)  # empty (checked above)
        os.rename(staging, output_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return report


def _peak_rss() -> int:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _worker_peaks(client: Any) -> Optional[List[int]]:
    """The peak memory (RSS) of every worker process so far, when the job ran on a distributed
    cluster."""
    try:
        if client is None:
            import distributed
            client = distributed.default_client()
        return sorted(client.run(_peak_rss).values())
    except Exception:  # no distributed client: the threads of this process did the work
        return None


def _write_file(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


@dataclasses.dataclass
class DaskDedupResult:
    """What ``dedup`` of a Dask collection returns."""

    kept: Any  # the collection's kept records, lazily (a Bag or DataFrame like the input)
    duplicates: List[Tuple[str, str, float]]  # (dup id, kept id, score), in input order
    clusters: List[Dict[str, Any]]  # {"representative", "size", "members"}, by first member
    report: Dict[str, Any]
    dups_tsv: bytes  # the duplicates as ``neardup dedup --dups`` writes them
    clusters_jsonl: bytes  # the clusters as ``neardup dedup --clusters`` writes them


def dedup(collection: Any, *, client: Any = None, **options: Any) -> DaskDedupResult:
    """Deduplicates a Dask Bag (of str, bytes, dicts with a text field, or (id, text) pairs) or a
    Dask DataFrame (a text column; an id column when it has one) on dask's current scheduler
    (a distributed Client when one is active).

    Documents are named by their id (a dict's or row's ``id_field``, a pair's first item), else
    by their 1-based position in the collection, as ``neardup dedup`` names the lines of one
    plain-text file. A record without text (None, NaN, pandas' NA), with a null (None, NaN, NA) or
    boolean id, or a dict without ``text_field`` is a bad record: the job fails naming its number
    (``on_error="fail"``) or leaves it out (``"skip"``). The decisions are ``neardup dedup
    --all-pairs --boundary-sigmas 0``'s on the same documents. The collection is
    computed twice (signing, then ``kept``): persist it first when that is costly. ``client``: the
    distributed Client to run on (default: dask's current scheduler).
    """
    import dask.bag as db
    import dask.dataframe as dd
    opts = _options("dedup", options)
    started = time.monotonic()
    signer = opts.signer()
    priority_field = opts.priority_field if opts.keep == "priority" else ""
    if isinstance(collection, db.Bag):
        inputs = collection.to_delayed()
        parts = [delayed(_sign_records)(signer, records, opts.text_field, opts.id_field,
                                        priority_field) for records in inputs]
    elif isinstance(collection, dd.DataFrame):
        inputs = collection.to_delayed()
        parts = [delayed(_sign_records)(signer,
                                        delayed(_frame_records)(frame, opts.text_field,
                                                                opts.id_field, priority_field),
                                        opts.text_field, opts.id_field, priority_field)
                 for frame in inputs]
    else:
        raise TypeError("dedup takes a dask Bag or DataFrame; got " + type(collection).__name__)
    runner = _Runner(client)
    parts = runner.persist(parts)
    summaries = runner.compute([delayed(_summary)(part) for part in parts])
    offsets = np.cumsum([0] + [s["lines"] for s in summaries]).tolist()

    def where(p: int, local: int) -> str:
        return f"record {offsets[p] + local + 1}"

    def naming(p: int) -> Tuple[str, int]:
        return ("", offsets[p])

    job = _Job(opts, signer, parts, naming, started, runner)
    job.stage("sign", partitions=len(parts), documents=sum(s["documents"] for s in summaries))
    errors, skipped = _check_documents(opts, summaries, where)
    a, b = job.pairs()
    decisions = job.decide(a, b, lists=True)
    dup_locals = job.dup_locals(decisions)
    if isinstance(collection, db.Bag):
        kept = db.from_delayed([delayed(_kept_records)(records, part, dup_locals[p], opts.empty)
                                for p, (records, part) in enumerate(zip(inputs, parts))])
    else:
        kept = dd.from_delayed([delayed(_kept_frame)(frame, part, dup_locals[p], opts.empty)
                                for p, (frame, part) in enumerate(zip(inputs, parts))],
                               meta=collection._meta, verify_meta=False)
    report = _report(opts, signer, summaries, decisions, errors, skipped, job,
                     time.monotonic() - started)
    return DaskDedupResult(kept, decisions.duplicates, decisions.clusters, report,
                           decisions.dup_lines, decisions.cluster_lines)


def main_progress(message: str) -> None:
    print(f"neardup.dask: {message}", file=sys.stderr, flush=True)
