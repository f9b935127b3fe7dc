#!/usr/bin/python3
"""neardup's jieba drop-in against Python's jieba 0.42.1, in the same process, on the same text.

Usage: PYTHONPATH=build/release/python bench/python/jieba_bench.py [--lines N] [--docs N]
           [--repeats R] [--wall]

Text: real Chinese, the LibreOffice help pages (libreoffice-help-zh-cn), taken as
tests/jieba/oracle.py takes them: the first N distinct lines holding Han characters (default
6,000; a jieba user cutting sentences) and the first N pages (default 300; documents).

Calls compared, each over the whole list, one call per line or page:
  neardup.cut            vs jieba.lcut
  neardup.cut_for_search vs jieba.lcut_for_search
  neardup.extract_tags   vs jieba.analyse.extract_tags   (topK=20, withWeight=True; pages)

Both are warmed first (dictionaries and IDF tables loaded, one pass each: loading is not timed),
and their results are checked to be equal. Reported: the median of R runs (default 5; jieba's
min(R, 3)) in CPU time of the calling thread (--wall: elapsed time; the CPU time is steadier on a
shared machine), the throughput in MB/s of UTF-8 input, and neardup's speed-up.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import pathlib
import statistics
import sys
import time
from typing import Any, Callable, List, Sequence, Tuple

HERE = pathlib.Path(__file__).resolve().parent
ORACLE = HERE.parent.parent / "tests" / "jieba" / "oracle.py"


def load_oracle() -> Any:
    spec = importlib.util.spec_from_file_location("jieba_oracle", ORACLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def median_seconds(call: Callable[[str], Any], texts: Sequence[str], repeats: int,
                   clock: Callable[[], float]) -> float:
    times = []
    for _ in range(repeats):
        start = clock()
        for text in texts:
            call(text)
        times.append(clock() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=6000)
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--wall", action="store_true", help="elapsed time instead of CPU time")
    args = parser.parse_args()
    clock = time.perf_counter if args.wall else time.thread_time

    oracle = load_oracle()
    if not os.path.isdir(os.path.join(oracle.HELP_DIR, "text")):
        sys.exit("no Chinese text in %s: install libreoffice-help-zh-cn" % oracle.HELP_DIR)
    lines: List[str] = oracle.corpus_lines(args.lines)
    docs: List[str] = [text for _, text in oracle.corpus_docs(args.docs)]

    import jieba  # type: ignore[import]
    import jieba.analyse  # type: ignore[import]
    import neardup

    jieba.setLogLevel(logging.ERROR)

    def jieba_tags(text: str) -> Any:
        return jieba.analyse.extract_tags(text, topK=20, withWeight=True)

    def neardup_tags(text: str) -> Any:
        return neardup.extract_tags(text, topK=20, withWeight=True)

    Call = Callable[[str], Any]
    cases: List[Tuple[str, str, List[str], Call, Call]] = [
        ("cut", "lines", lines, jieba.lcut, neardup.cut),
        ("cut", "pages", docs, jieba.lcut, neardup.cut),
        ("cut_for_search", "lines", lines, jieba.lcut_for_search, neardup.cut_for_search),
        ("cut_for_search", "pages", docs, jieba.lcut_for_search, neardup.cut_for_search),
        ("extract_tags", "pages", docs, jieba_tags, neardup_tags),
    ]
    # Warm-up, and the check that both give the same results.
    for name, unit, texts, jieba_call, neardup_call in cases:
        for text in texts:
            if jieba_call(text) != neardup_call(text):
                sys.exit("%s differs on %s: %r" % (name, unit, text[:200]))

    print("jieba %s, neardup %s, Python %s; %d lines (%.2f MB), %d pages (%.2f MB); "
          "median of %d runs (jieba: %d), %s" % (
              jieba.__version__, neardup.__version__, sys.version.split()[0], len(lines),
              sum(len(t.encode()) for t in lines) / 1e6, len(docs),
              sum(len(t.encode()) for t in docs) / 1e6, args.repeats, min(args.repeats, 3),
              "elapsed time" if args.wall else "CPU time"))
    header = "%-15s %-6s %12s %12s %11s %11s %8s" % (
        "call", "unit", "jieba s", "neardup s", "jieba MB/s", "neardup MB/s", "speed-up")
    print(header)
    print("-" * len(header))
    for name, unit, texts, jieba_call, neardup_call in cases:
        megabytes = sum(len(t.encode()) for t in texts) / 1e6
        jieba_time = median_seconds(jieba_call, texts, min(args.repeats, 3), clock)
        neardup_time = median_seconds(neardup_call, texts, args.repeats, clock)
        print("%-15s %-6s %12.4f %12.4f %11.3f %11.2f %7.1fx" % (
            name, unit, jieba_time, neardup_time, megabytes / jieba_time,
            megabytes / neardup_time, jieba_time / neardup_time))


if __name__ == "__main__":
    main()
