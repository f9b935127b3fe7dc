#!/usr/bin/python3
"""FAISS IndexBinaryFlat brute-force search (range search or 1-NN, whichever is faster) on N random 64-bit codes, one thread.

Usage: faiss_flat.py N QUERIES K. Prints comparisons per second (median of 5 runs) on stdout.
"""
import statistics
import sys
import time

import faiss
import numpy as np

n, nq, k = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
faiss.omp_set_num_threads(1)
rng = np.random.default_rng(1)
codes = rng.integers(0, 2**63, size=n, dtype=np.uint64) * 2 + rng.integers(0, 2, size=n, dtype=np.uint64)
index = faiss.IndexBinaryFlat(64)
index.add(codes.view(np.uint8).reshape(n, 8))
queries = codes[rng.integers(0, n, size=nq)].view(np.uint8).reshape(nq, 8).copy()


def median_seconds(run):
    times = []
    for _ in range(5):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# FAISS's two exhaustive searches; the faster one is the anchor.
range_time = median_seconds(lambda: index.range_search(queries, k + 1))  # radius is exclusive
knn_time = median_seconds(lambda: index.search(queries, 1))
print(n * nq / min(range_time, knn_time))
