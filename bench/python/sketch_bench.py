#!/usr/bin/python3
"""Fingerprinter.sketch_batch against a datasketch-style pure-NumPy MinHash of 128 permutations.

Usage: sketch_bench.py [--documents N] [--repeats R] [--hash sha1|crc32] [--shingles char|word]

Documents: real English text, the first N paragraphs (default 20,000) of Debian's LibreOffice help
pages (libreoffice-help-en-us, extracted by bench/corpus/help_text.py).

The anchor is what datasketch's MinHash does, written here so that the benchmark needs nothing but
NumPy: every document's distinct 5-gram shingles (characters of the lower-cased text by default,
the accurate method's features; or words) are hashed to 32 bits (datasketch's default hash, the
first four bytes of SHA-1, or --hash crc32, a cheaper one), then MinHash.update_batch's step runs
vectorised over the document's shingles and the 128 permutations: h -> ((a*h + b) mod (2^61 - 1))
& (2^32 - 1), and the minimum of each permutation is kept. One MinHash a document, as datasketch is
used.

neardup: Fingerprinter().sketch_batch(documents) on all cores, and with threads=1: the accurate
method's whole signature (normalisation, character 5-grams, SimHash, the 1024-bin one-permutation
sketch and 20 band keys) into NumPy arrays.

Reported: the median of R runs of neardup and of min(R, 3) runs of the anchor (it is slow; with
--anchor-documents M it runs on the first M documents only and its time is scaled), documents per
second and neardup's speed-up.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import pathlib
import statistics
import struct
import sys
import time
import zlib
from typing import Callable, List, Sequence

import numpy as np

import neardup

HERE = pathlib.Path(__file__).resolve().parent
HELP_ROOT = pathlib.Path("/usr/share/libreoffice/help")

# datasketch's constants (datasketch/minhash.py).
MERSENNE_PRIME = np.uint64((1 << 61) - 1)
MAX_HASH = np.uint64((1 << 32) - 1)
NUM_PERM = 128
SEED = 1


def english_paragraphs(count: int) -> List[str]:
    if not (HELP_ROOT / "en-US").is_dir():
        sys.exit(f"sketch_bench: {HELP_ROOT}/en-US is missing: install libreoffice-help-en-us")
    spec = importlib.util.spec_from_file_location("help_text", HERE.parent / "corpus" /
                                                  "help_text.py")
    assert spec is not None and spec.loader is not None
    help_text = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(help_text)
    lines: List[str] = []
    for page in help_text.pages("en-US"):
        extractor = help_text.MainText()
        with open(page, encoding="utf-8", errors="replace") as f:
            extractor.feed(f.read())
        extractor.flush()
        lines.extend(p for p in extractor.paragraphs if p)
        if len(lines) >= count:
            break
    if len(lines) < count:
        sys.exit(f"sketch_bench: only {len(lines)} paragraphs in the help pages")
    return lines[:count]


def sha1_hash32(data: bytes) -> int:
    """datasketch.hashfunc.sha1_hash32: the first 4 bytes of SHA-1, little-endian."""
    return struct.unpack("<I", hashlib.sha1(data).digest()[:4])[0]


def crc32_hash(data: bytes) -> int:
    return zlib.crc32(data)


class NumpyMinHash:
    """datasketch.MinHash(num_perm=128, seed=1) over a document's shingles, as update_batch."""

    def __init__(self, hashfunc: Callable[[bytes], int], shingles: str) -> None:
        generator = np.random.RandomState(SEED)
        # datasketch's permutations: a in [1, p), b in [0, p).
        self.a = generator.randint(1, MERSENNE_PRIME, size=NUM_PERM, dtype=np.uint64)
        self.b = generator.randint(0, MERSENNE_PRIME, size=NUM_PERM, dtype=np.uint64)
        self.hashfunc = hashfunc
        self.words = shingles == "word"

    def shingles(self, text: str) -> List[bytes]:
        text = text.lower()
        if self.words:
            units: Sequence[str] = text.split()
            grams = {" ".join(units[i:i + 5]) for i in range(max(1, len(units) - 4))}
        else:
            grams = {text[i:i + 5] for i in range(max(1, len(text) - 4))}
        return [g.encode("utf-8") for g in grams]

    def signature(self, text: str) -> np.ndarray:
        hashvalues = np.full(NUM_PERM, MAX_HASH, dtype=np.uint64)
        hv = np.array([self.hashfunc(s) for s in self.shingles(text)], dtype=np.uint64)
        # MinHash.update_batch: one row per shingle, one column per permutation (uint64 wraps as
        # NumPy's does in datasketch).
        phv = np.bitwise_and((np.outer(hv, self.a) + self.b) % MERSENNE_PRIME, MAX_HASH)
        return np.vstack([phv, hashvalues]).min(axis=0)

    def batch(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), NUM_PERM), dtype=np.uint64)
        for i, text in enumerate(texts):
            out[i] = self.signature(text)
        return out


def timed(run: Callable[[], object], repeats: int) -> List[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--anchor-documents", type=int, default=0,
                        help="documents the NumPy MinHash runs on (default: all of them)")
    parser.add_argument("--hash", choices=["sha1", "crc32"], default="sha1")
    parser.add_argument("--shingles", choices=["char", "word"], default="char")
    args = parser.parse_args()

    documents = english_paragraphs(args.documents)
    megabytes = sum(len(d.encode()) for d in documents) / 1e6
    cores = os.cpu_count() or 1
    print(f"documents: {len(documents)} English paragraphs, {megabytes:.2f} MB "
          f"({megabytes * 1e6 / len(documents):.0f} bytes each on average); {cores} cores")

    fingerprinter = neardup.Fingerprinter()
    fingerprinter.sketch_batch(documents[:1000])  # warm-up: ICU, the tables
    all_cores = timed(lambda: fingerprinter.sketch_batch(documents), args.repeats)
    one_core = timed(lambda: fingerprinter.sketch_batch(documents, threads=1), args.repeats)

    anchor_count = min(args.anchor_documents or len(documents), len(documents))
    anchor_docs = documents[:anchor_count]
    minhash = NumpyMinHash(sha1_hash32 if args.hash == "sha1" else crc32_hash, args.shingles)
    minhash.batch(anchor_docs[:200])  # warm-up
    anchor_repeats = max(1, min(args.repeats, 3))
    anchor = timed(lambda: minhash.batch(anchor_docs), anchor_repeats)

    def rate(times: List[float], count: int) -> float:
        return count / statistics.median(times)

    neardup_all = rate(all_cores, len(documents))
    neardup_one = rate(one_core, len(documents))
    numpy_rate = rate(anchor, len(anchor_docs))
    print(f"{'':42s}{'median s':>10s}{'docs/s':>12s}{'MB/s':>9s}")
    rows = [
        (f"neardup sketch_batch, all {cores} cores", statistics.median(all_cores), neardup_all),
        ("neardup sketch_batch, threads=1", statistics.median(one_core), neardup_one),
        (f"NumPy MinHash 128 perms ({args.hash}, {args.shingles} 5-grams)",
         statistics.median(anchor) * len(documents) / len(anchor_docs), numpy_rate),
    ]
    for name, seconds, docs_per_s in rows:
        mb_per_s = docs_per_s * megabytes / len(documents)
        print(f"{name:42s}{seconds:10.3f}{docs_per_s:12,.0f}{mb_per_s:9.2f}")
    if len(anchor_docs) != len(documents):
        print(f"(the NumPy MinHash ran on the first {len(anchor_docs)} documents, "
              f"{anchor_repeats} runs; its time is scaled to all of them)")
    print(f"speed-up, all cores: {neardup_all / numpy_rate:.1f}x; one core: "
          f"{neardup_one / numpy_rate:.1f}x (target >= 20x)")


if __name__ == "__main__":
    main()
