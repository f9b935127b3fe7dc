#!/usr/bin/env bash
# Fingerprint throughput per core on real English and Chinese text, and the brute-force Hamming scan
# against FAISS IndexBinaryFlat on the same 10M codes, one thread each; the time of one default
# sketch (sets of 30 to 5000 distinct features). Prints medians of 5 runs.
set -euo pipefail
build=$1
data=$2
here=$(cd "$(dirname "$0")/.." && pwd)
out="$data/fingerprint_bench.json"
NEARDUP_BENCH_DATA="$data" taskset -c 0 "$build/bench/fingerprint_bench" \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_out="$out" --benchmark_out_format=json >/dev/null
scan=$(/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["benchmarks"]
best = 0
for r in rows:
    if r.get("aggregate_name") != "median":
        continue
    name = r["run_name"]
    if "bytes_per_second" in r:
        print(f"{name:40s} {r['bytes_per_second'] / 1e6:10.1f} MB/s (median)", file=sys.stderr)
    elif name.startswith("BM_Sketch"):
        print(f"{name:40s} {1e6 / r['items_per_second']:10.2f} us per sketch (median)", file=sys.stderr)
    elif "items_per_second" in r:
        print(f"{name:40s} {r['items_per_second'] / 1e9:10.2f} G items/s (median) {r.get('label', '')}", file=sys.stderr)
        if name.startswith("BM_HammingScan"):
            best = max(best, r["items_per_second"])
print(best)
PY
)
faiss=$(taskset -c 0 /usr/bin/python3 "$here/anchors/faiss_flat.py" 10000000 32 3)
/usr/bin/python3 -c "
s, f = float('$scan'), float('$faiss')
print(f'Hamming scan, 10M codes, k=3, 1 core: neardup {s/1e9:.2f}e9/s, FAISS IndexBinaryFlat {f/1e9:.2f}e9/s, ratio {s/f:.1f}x')"
