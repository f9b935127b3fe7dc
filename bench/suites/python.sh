#!/usr/bin/env bash
# The Python package against its anchors, side by side in one run (medians):
#   1. neardup.cut / cut_for_search / extract_tags against Python jieba on real Chinese text
#      (bench/python/jieba_bench.py);
#   2. Fingerprinter.sketch_batch against a datasketch-style pure-NumPy MinHash of 128 permutations
#      (bench/python/sketch_bench.py);
#   3. neardup.dask on a LocalCluster of 2 worker processes (one thread each) against
#      `neardup dedup --threads 2` on the same 2 cores, both its default and the run of the same
#      answer (`--all-pairs --boundary-sigmas 0`, checked byte for byte), on the dedup suite's
#      English corpus (bench/dedup_corpus) of 1M and 10M documents: 3 alternating runs each at
#      1M, 1 at 10M (DASK_DOCS="N..." and DASK_RUNS change them); wall time of whole processes.
# PARTS="jieba sketch dask" (the default) chooses the parts.
set -euo pipefail
build=$1
data=$2
here=$(cd "$(dirname "$0")/.." && pwd)
python=/usr/bin/python3
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
if [[ ! -d "$build/python/neardup" ]]; then
  echo "python: $build has no Python extension (configure with -DNEARDUP_BUILD_PYTHON=ON)" >&2
  exit 1
fi

parts=" ${PARTS:-jieba sketch dask} "
if [[ $parts == *" jieba "* ]]; then
  echo "-- jieba drop-in"
  "$python" "$here/python/jieba_bench.py"
fi
if [[ $parts == *" sketch "* ]]; then
  echo "-- sketches"
  "$python" "$here/python/sketch_bench.py"
fi
[[ $parts == *" dask "* ]] || exit 0

echo "-- neardup.dask vs neardup dedup"
if [[ ! -s "$data/en-paragraphs.txt" ]]; then
  "$python" "$here/corpus/help_text.py" en-US "$data/en-paragraphs.txt" --per paragraph
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for docs in ${DASK_DOCS:-1000000 10000000}; do
  corpus="$data/dedup-en-$docs.txt"
  [[ -s "$corpus" ]] || "$build/bench/dedup_corpus" "$data/en-paragraphs.txt" "$docs" 1 >"$corpus"
  runs=${DASK_RUNS:-$([[ $docs -ge 10000000 ]] && echo 1 || echo 3)}
  : >"$out/runs"
  for ((i = 0; i < runs; i++)); do
    # The single run two ways: its default (the linear join, pairs near the threshold decided
    # exactly), and the answer the Dask job computes (every candidate pair verified, each decided
    # by its sketch), whose outputs the job's must equal byte for byte.
    start=$(date +%s.%N)
    "$build/cli/neardup" dedup "$corpus" -o "$out/kept-default.txt" --dups "$out/dups-default.tsv" \
      --clusters "$out/clusters-default.jsonl" --quiet --threads 2
    echo "default $(echo "$(date +%s.%N) - $start" | bc)" >>"$out/runs"
    start=$(date +%s.%N)
    "$build/cli/neardup" dedup "$corpus" -o "$out/kept.txt" --dups "$out/dups.tsv" \
      --clusters "$out/clusters.jsonl" --quiet --threads 2 --all-pairs --boundary-sigmas 0
    echo "all-pairs $(echo "$(date +%s.%N) - $start" | bc)" >>"$out/runs"
    rm -rf "$out/dask"
    start=$(date +%s.%N)
    "$python" -m neardup.dask "$corpus" -o "$out/dask" --workers 2 --quiet
    echo "dask $(echo "$(date +%s.%N) - $start" | bc)" >>"$out/runs"
    # The same answer, or the figures mean nothing.
    for f in dups.tsv clusters.jsonl; do
      cmp -s "$out/dask/$f" "$out/$f" || { echo "python: neardup.dask's $f differs" >&2; exit 1; }
    done
    cat "$out/dask"/kept/part-* | cmp -s - "$out/kept.txt" ||
      { echo "python: neardup.dask's kept lines differ" >&2; exit 1; }
  done
  "$python" - "$out/runs" "$docs" "$corpus" <<'PY'
import os, statistics, sys
runs, docs, corpus = sys.argv[1], int(sys.argv[2]), sys.argv[3]
times = {}
for line in open(runs):
    name, seconds = line.split()
    times.setdefault(name, []).append(float(seconds))
default, all_pairs, dask = (statistics.median(times[k]) for k in ("default", "all-pairs", "dask"))
mb = os.path.getsize(corpus) / 1e6
print(f"{docs:>11,} documents ({mb:,.0f} MB), {len(times['dask'])} runs each, medians: "
      f"neardup dedup {default:.1f} s, --all-pairs --boundary-sigmas 0 {all_pairs:.1f} s, "
      f"neardup.dask {dask:.1f} s ({mb / dask:.1f} MB/s); overhead against the same answer "
      f"x{dask / all_pairs:.2f}, against the default x{dask / default:.2f}; outputs identical")
PY
done
