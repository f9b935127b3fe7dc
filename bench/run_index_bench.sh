#!/usr/bin/env bash
# The index benchmark with its anchor: runs bench/index_bench (Google Benchmark, 3 repetitions,
# medians) and FAISS's binary hash indexes (bench/faiss_index.py) on the same codes and queries, then
# prints one table with the ratios. N = 1M and 10M; NEARDUP_BENCH_100M=1 adds 100M (neardup only:
# FAISS's best setup would need about 18 GB there). Takes about 5 minutes (100M: 15 more).
# Usage: bench/run_index_bench.sh [BUILD_DIR]   (default build/release)
set -euo pipefail
BUILD=${1:-build/release}
HERE=$(cd "$(dirname "$0")" && pwd)
DUMP=$(mktemp -d)
trap 'rm -rf "$DUMP"' EXIT

echo "== neardup (index_bench) ==" >&2
common=(--benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_out_format=json)
NEARDUP_BENCH_DUMP_DIR=$DUMP "$BUILD/bench/index_bench" "${common[@]}" --benchmark_filter='^Index' \
  --benchmark_out="$DUMP/neardup_index.json" >&2
# The join runs in a fresh process per N, so its peak RSS is the join's alone (plus its input).
sizes=(1000000 10000000)
[[ -n "${NEARDUP_BENCH_100M:-}" ]] && sizes+=(100000000)
for n in "${sizes[@]}"; do
  "$BUILD/bench/index_bench" "${common[@]}" --benchmark_filter="^AllPairs/$n/" \
    --benchmark_out="$DUMP/neardup_pairs_$n.json" >&2
done
# A real corpus: the lines (over 40 bytes, tags stripped) of LibreOffice's English and Chinese help
# (libreoffice-help-* from scripts/install-deps.sh --bench), fingerprinted by `neardup hash`.
HELP=/usr/share/libreoffice/help
if [[ -d $HELP/en-US ]]; then
  find "$HELP/en-US" "$HELP/zh-CN" -name '*.html' -print0 2>/dev/null | xargs -0 cat |
    sed -e 's/<[^>]*>/ /g' | awk 'length($0) > 40' >"$DUMP/corpus.txt"
  "$BUILD/cli/neardup" hash "$DUMP/corpus.txt" | /usr/bin/python3 -c '
import sys, struct
out = open(sys.argv[1], "wb")
for line in sys.stdin:
    out.write(struct.pack("<Q", int(line.rstrip("\n").split("\t")[1], 16)))' "$DUMP/corpus.u64"
  NEARDUP_BENCH_CORPUS=$DUMP/corpus.u64 "$BUILD/bench/index_bench" "${common[@]}" \
    --benchmark_filter='^Corpus' --benchmark_out="$DUMP/neardup_corpus.json" >&2
fi
echo "== FAISS (python3-faiss) ==" >&2
if [[ -f $DUMP/corpus.u64 ]]; then
  /usr/bin/python3 "$HERE/faiss_index.py" --corpus "$DUMP/corpus.u64" 2 | tee -a "$DUMP/faiss.jsonl" >&2
fi
for n in 1000000 10000000; do
  /usr/bin/python3 "$HERE/faiss_index.py" "$DUMP" "$n" 2 | tee -a "$DUMP/faiss.jsonl" >&2
done

/usr/bin/python3 - "$DUMP/faiss.jsonl" "$DUMP"/neardup_*.json <<'PY'
import json, sys
ours = {}
for path in sys.argv[2:]:
    for b in json.load(open(path))["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = b["run_name"].split("/")
        ours[(name[0], int(name[1]) if name[1].isdigit() else 0)] = b
faiss = [json.loads(line) for line in open(sys.argv[1])]
best = {}
for f in faiss:
    if "2,32" in f["case"] and "corpus" not in f["case"]:
        best[f["n"]] = f
def ms(b):
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]]
    return b["real_time"] * scale
print(f"{'case':44} {'neardup':>14} {'FAISS best':>14} {'ratio':>8}")
for n in sorted({n for _, n in ours if n > 0}):
    label = f"{n // 1000000}M"
    q = ours.get(("IndexQueryBatch", n))
    f = best.get(n)
    if q:
        qps = q["items_per_second"]
        print(f"{'queries/s k=3, 2 threads, N=' + label:44} {qps:14,.0f} "
              f"{(f['qps'] if f else float('nan')):14,.0f} {(qps / f['qps'] if f else float('nan')):8.2f}")
    one = ours.get(("IndexQueryOneThread", n))
    if one:
        print(f"{'queries/s k=3, 1 thread (CPU time), N=' + label:44} {one['items_per_second']:14,.0f}")
    b = ours.get(("IndexBuild", n))
    if b:
        print(f"{'build seconds, N=' + label:44} {ms(b) / 1000:14.2f} "
              f"{(f['build_s'] if f else float('nan')):14.2f} {((f['build_s'] / (ms(b) / 1000)) if f else float('nan')):8.2f}")
        print(f"{'bytes per fingerprint, N=' + label:44} {b['bytes_per_fp']:14.1f} "
              f"{(f['bytes_per_code'] if f else float('nan')):14.1f} {((f['bytes_per_code'] / b['bytes_per_fp']) if f else float('nan')):8.2f}")
    s = ours.get(("IndexQuerySingle", n))
    if s:
        print(f"{'single query p50 / p99 ns, N=' + label:44} {s['p50_ns']:7.0f}/{s['p99_ns']:6.0f}")
    i = ours.get(("IndexInsert", n))
    if i:
        print(f"{'inserts/s into N=' + label:44} {i['items_per_second']:14,.0f}")
    p = ours.get(("AllPairs", n))
    if p:
        print(f"{'all-pairs k=3 seconds (peak RSS MB), N=' + label:44} {ms(p) / 1000:7.2f} ({p['peak_rss_mb']:.0f})")
cq, cp = ours.get(("CorpusQueryBatch", 0)), ours.get(("CorpusAllPairs", 0))
fc = [f for f in faiss if "2,32" in f["case"] and "corpus" in f["case"]]
if cq:
    ratio = cq["items_per_second"] / fc[0]["qps"] if fc else float("nan")
    print(f"{'corpus (' + str(int(cq['n'])) + ' help lines) queries/s k=3':44} {cq['items_per_second']:14,.0f} "
          f"{(fc[0]['qps'] if fc else float('nan')):14,.0f} {ratio:8.2f}   "
          f"({cq['candidates_per_q']:.0f} candidates, {cq['matches_per_q']:.1f} matches per query)")
if cp:
    print(f"{'corpus all-pairs k=3 seconds':44} {ms(cp) / 1000:14.3f}   ({int(cp['pairs'])} pairs)")
for f in faiss:
    print(f"FAISS {f['case']:26} N={f['n'] // 1000000}M: {f['qps']:10,.0f} q/s, build {f['build_s']:.1f} s, "
          f"{f['bytes_per_code']:.0f} B/code, {f['matches'] / f['queries']:.3f} matches/query")
PY
