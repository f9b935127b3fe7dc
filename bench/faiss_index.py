#!/usr/bin/python3
"""FAISS binary hash indexes on the codes and queries bench/index_bench dumped: the anchor of the index
benchmark. Prints one JSON object per case (qps, bytes per code, build seconds, total matches).

Usage: faiss_index.py DUMP_DIR N [THREADS]
       faiss_index.py --corpus FILE [THREADS]   (every fingerprint of FILE queried against all)
Cases: IndexBinaryMultiHash(64, 2, 32) with nflip=1 and IndexBinaryMultiHash(64, 4, 16) with nflip=0,
both exact for k <= 3; range_search with radius 4 (FAISS reports distances < radius), i.e. k = 3.
"""
import json
import os
import sys
import time

import faiss
import numpy as np


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run_case(name, make_index, codes, queries, threads):
    faiss.omp_set_num_threads(threads)
    before = rss_bytes()
    start = time.perf_counter()
    index = make_index()
    index.add(codes)
    build = time.perf_counter() - start
    memory = rss_bytes() - before
    start = time.perf_counter()
    lims, _, _ = index.range_search(queries, 4)
    seconds = time.perf_counter() - start
    result = {
        "case": name, "n": len(codes), "queries": len(queries), "threads": threads,
        "qps": len(queries) / seconds, "build_s": build,
        "bytes_per_code": memory / len(codes), "matches": int(lims[-1]),
    }
    del index
    return result


def main():
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    if sys.argv[1] == "--corpus":
        codes = np.fromfile(sys.argv[2], dtype="<u8").view(np.uint8).reshape(-1, 8)
        queries = codes
    else:
        directory, n = sys.argv[1], int(sys.argv[2])
        codes = np.fromfile(f"{directory}/codes_{n}.u64", dtype="<u8").view(np.uint8).reshape(-1, 8)
        queries = np.fromfile(f"{directory}/queries_{n}.u64", dtype="<u8").view(np.uint8).reshape(-1, 8)

    def multihash_2_32():
        index = faiss.IndexBinaryMultiHash(64, 2, 32)
        index.nflip = 1
        return index

    def multihash_4_16():
        index = faiss.IndexBinaryMultiHash(64, 4, 16)
        index.nflip = 0
        return index

    # The slower setup answers a prefix of the queries, so the run stays within minutes.
    label = " corpus" if sys.argv[1] == "--corpus" else ""
    print(json.dumps(run_case("MultiHash(64,2,32) nflip=1" + label, multihash_2_32, codes, queries[:200000], threads)), flush=True)
    print(json.dumps(run_case("MultiHash(64,4,16)" + label, multihash_4_16, codes, queries[:20000], threads)), flush=True)


if __name__ == "__main__":
    main()
