#!/usr/bin/env bash
# neardup dedup end to end on 10M synthetic documents built from real English paragraphs (LibreOffice
# help) with random edits: wall time, throughput and peak memory, median of 3 runs, 2 threads.
# DEDUP_DOCS=N changes the size.
set -euo pipefail
build=$1
data=$2
here=$(cd "$(dirname "$0")/.." && pwd)
docs=${DEDUP_DOCS:-10000000}
if [[ ! -s "$data/en-paragraphs.txt" ]]; then
  /usr/bin/python3 "$here/corpus/help_text.py" en-US "$data/en-paragraphs.txt" --per paragraph
fi
corpus="$data/dedup-en-$docs.txt"
[[ -s "$corpus" ]] || "$build/bench/dedup_corpus" "$data/en-paragraphs.txt" "$docs" 1 >"$corpus"
bytes=$(stat -c %s "$corpus")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
results=()
for run in 1 2 3; do
  /usr/bin/time -f '%e %M' -o "$out/time" "$build/cli/neardup" dedup "$corpus" -o "$out/kept.txt" \
    --dups "$out/dups.tsv" --report "$out/report.json" --quiet --threads 2
  read -r seconds kb <"$out/time"
  results+=("$seconds $kb")
done
/usr/bin/python3 - "$bytes" "$docs" "$out/report.json" "${results[@]}" <<'PY'
import json, statistics, sys
size, docs, report = int(sys.argv[1]), int(sys.argv[2]), json.load(open(sys.argv[3]))
runs = [tuple(map(float, r.split())) for r in sys.argv[4:]]
secs = statistics.median(r[0] for r in runs)
peak = max(r[1] for r in runs) * 1024
print(f"dedup, {docs} English documents ({size / 1e9:.2f} GB), 2 threads: median {secs:.1f} s, "
      f"{size / 1e6 / secs:.0f} MB/s, peak {peak / 1e9:.2f} GB ({peak / docs:.0f} bytes/document)")
for stage in report["stages"]:
    rate = f", {stage['mb_per_second']:.0f} MB/s" if stage["mb_per_second"] else ""
    print(f"  last run: {stage['stage']} {stage['seconds']:.2f} s{rate}")
print(f"  duplicates {report['duplicates']}, clusters {report['clusters']}, pairs {report['pairs']}")
PY
