#!/usr/bin/env bash
# Throughput of `neardup dedup`: the default (accurate: sketches, band join, verification) against the
# same pipeline without verification (the SimHash join at k=3 over the same features), the SimHash
# method with its word 3-grams, and the classic method (keywords, k=3); same input, same machine, run
# alternately, medians of RUNS.
# Usage: bench/quality/throughput.sh BUILD_DIR [RUNS]   (after make quality built the collections)
set -euo pipefail
build=${1:?usage: throughput.sh BUILD_DIR [RUNS]}
runs=${2:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
nd=$root/$build/cli/neardup
data=$root/build/quality/data
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The three collections as one input, ids made unique.
for c in docs emails poems; do
  sed "s/^{\"id\": *\"\?\([0-9]*\)\"\?/{\"id\":\"$c-\1\"/" "$data/$c.jsonl"
done >"$work/all.jsonl"
bytes=$(stat -c %s "$work/all.jsonl")
declare -A commands=(
  [default]="$nd dedup -q $work/all.jsonl --report $work/report.json"
  [no-verification]="$nd dedup -q --method simhash -k 3 --shingle-unit char -n 5 --weighting distinct --fold t2s $work/all.jsonl --report $work/report.json"
  [simhash-word3]="$nd dedup -q --method simhash -k 3 $work/all.jsonl --report $work/report.json"
  [classic]="$nd dedup -q --method simhash --mode keywords -k 3 $work/all.jsonl --report $work/report.json"
)
declare -A times=()
for ((i = 0; i < runs; ++i)); do
  for name in default no-verification simhash-word3 classic; do
    start=$(date +%s.%N)
    ${commands[$name]}
    end=$(date +%s.%N)
    times[$name]+="$(echo "$end - $start" | bc) "
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf 'input: %s documents, %.1f MB; %s runs each, medians\n' "$(wc -l <"$work/all.jsonl")" \
  "$(echo "$bytes / 1000000" | bc -l)" "$runs"
for name in default no-verification simhash-word3 classic; do
  m=$(echo "${times[$name]}" | median)
  printf '%-16s %6.2f s %6.1f MB/s\n' "$name" "$m" "$(echo "$bytes / 1000000 / $m" | bc -l)"
done
d=$(echo "${times[default]}" | median)
n=$(echo "${times[no-verification]}" | median)
printf 'default speed / no-verification speed: %.2f\n' "$(echo "$n / $d" | bc -l)"
