#!/usr/bin/env bash
# The online index (bench/online_bench) for both methods, and the disk-resident SimHash index
# (bench/disk_index_bench) at 100M fingerprints; section "Online index" of bench/README.md.
# NEARDUP_BENCH_ONLINE_N: stored documents (default 10,000,000); NEARDUP_BENCH_DISK_N: fingerprints
# of the disk index (default 100,000,000; skipped with a message when the disk has less than 25 GB
# free). Each figure is the median of three runs.
set -euo pipefail
build=${1:?usage: online.sh BUILD_DIR}
n=${NEARDUP_BENCH_ONLINE_N:-10000000}
disk_n=${NEARDUP_BENCH_DISK_N:-100000000}
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for method in accurate simhash; do
  log=$(mktemp)
  for run in 1 2 3; do
    "$build/bench/online_bench" --method "$method" --documents "$n" --queries 1000000 >>"$log"
  done
  for figure in sign insert memory query check-and-insert; do
    value=$(awk -v f="$figure" '$1 == f {print $2}' "$log" | median)
    echo "online $method N=$n $figure: $value ($(awk -v f="$figure" '$1 == f' "$log" | head -1 | cut -d' ' -f3-))"
  done
  rm -f "$log"
done
scratch=${TMPDIR:-/tmp}/neardup-disk-bench
free_gb=$(df -Pk "${TMPDIR:-/tmp}" | awk 'NR == 2 {print int($4 / 1048576)}')
if (( free_gb < 25 )); then
  echo "disk index: skipped, $free_gb GB free in ${TMPDIR:-/tmp} (needs 25)"
  exit 0
fi
rm -rf "$scratch"
trap 'rm -rf "$scratch"' EXIT
"$build/bench/disk_index_bench" build "$scratch" "$disk_n" 5 2
for run in 1 2 3; do
  "$build/bench/disk_index_bench" query "$scratch" "$disk_n" 20000 2
done
