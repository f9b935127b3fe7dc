#!/usr/bin/env bash
# Sharded dedup over a real local Redis Cluster: N shards (`neardup dedup --shard I/N --store ...`)
# and the merge (`--merge PARTS`) write the same files as one run, byte for byte, for both methods,
# JSONL ids, keep rules, bad lines skipped and documents without features; and the mistakes a user
# can make are refused with clear messages. Skipped (exit 77) when redis-server is not installed.
# Usage: shard_test.sh PATH/TO/neardup BASE_PORT
set -u
ND=$1
PORT=${2:-7500}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
# shellcheck source=testlib.sh
source "$(dirname "$0")/testlib.sh"
if ! command -v redis-server >/dev/null; then
  echo "shard_test: SKIP: redis-server is not installed (scripts/install-deps.sh installs it)"
  exit 77
fi
cleanup() {
  "$ROOT/scripts/redis-cluster.sh" stop --dir "$T/cluster" >/dev/null 2>&1
  rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/cluster"
if ! SEEDS=$("$ROOT/scripts/redis-cluster.sh" start --dir "$T/cluster" --port "$PORT" 2>"$T/err" | tail -1); then
  cat "$T/err"
  echo "shard_test: the local Redis Cluster did not start"
  exit 1
fi
STORE="redis-cluster://$SEEDS"

# same_files NAME PREFIX_A PREFIX_B: every output of two runs is the same.
same_files() {
  local name=$1 a=$2 b=$3 f
  for f in kept dups clusters pairs; do
    if cmp -s "$a.$f" "$b.$f"; then ok; else fail "$name" "$f differs from the single run's"; fi
  done
}

# Real English paragraphs with edited copies, blank and symbol-only lines, a bad UTF-8 line; a JSONL
# file with ids and a priority field.
/usr/bin/python3 "$ROOT/bench/corpus/help_text.py" en-US "$T/help.txt" --per paragraph --limit 1500 >/dev/null 2>&1
awk 'NR % 3 == 0 { print substr($0, 1, length($0) - 4) } { print } NR % 13 == 0 { print ""; print "□□□，。" }' \
  "$T/help.txt" >"$T/a.txt"
printf 'bad \xff byte line\n' >>"$T/a.txt"
awk '{ gsub(/\\/, ""); gsub(/"/, ""); printf "{\"id\":\"j%d\",\"text\":\"%s\",\"rank\":%d}\n", NR, $0, NR % 7 }' \
  "$T/help.txt" | head -800 >"$T/b.jsonl"
check_count=$(wc -l <"$T/a.txt")
[[ $check_count -gt 1000 ]] || { echo "shard_test: no LibreOffice help text"; exit 1; }

# run NAME FLAGS...: the single run and a 3-shard run with the same flags, compared.
n=0
run() {
  local name=$1
  shift
  n=$((n + 1))
  # Pairs near the threshold are decided by their exact Jaccard in both (the shards ask their index
  # below the threshold; the merge decides as the single run's join does).
  "$ND" dedup "$T/a.txt" "$T/b.jsonl" "$@" -o "$T/one.kept" --dups "$T/one.dups" \
    --clusters "$T/one.clusters" --pairs "$T/one.pairs" -q >"$T/out" 2>"$T/err"
  if [[ $? -ne 0 ]]; then fail "$name" "the single run failed"; return; fi
  local pids=() i
  for i in 0 1 2; do
    "$ND" dedup "$T/a.txt" "$T/b.jsonl" "$@" --store "$STORE/job$n" --shard "$i/3" \
      --shard-output "$T/part$i" -q >"$T/out$i" 2>"$T/err$i" &
    pids+=($!)
  done
  local bad=0
  for i in 0 1 2; do wait "${pids[$i]}" || bad=1; done
  if [[ $bad -ne 0 ]]; then cat "$T/err0" "$T/err1" "$T/err2" >"$T/err"; fail "$name" "a shard failed"; return; fi
  "$ND" dedup "$T/a.txt" "$T/b.jsonl" "$@" --merge "$T/part2,$T/part0" --merge "$T/part1" \
    -o "$T/m.kept" --dups "$T/m.dups" --clusters "$T/m.clusters" --pairs "$T/m.pairs" -q >"$T/out" 2>"$T/err"
  if [[ $? -ne 0 ]]; then fail "$name" "the merge failed"; return; fi
  same_files "$name" "$T/one" "$T/m"
}
run accurate --on-error skip
run accurate-sketch-only --on-error skip --boundary-sigmas 0
run simhash --method simhash --on-error skip
run keep-longest --keep longest --on-error skip --empty drop
run priority --priority-field rank --on-error skip --threshold 0.7
[[ -s "$T/one.dups" ]] && ok || fail nontrivial "the runs found no duplicates"

# Mistakes.
expect() {  # expect NAME WANT_STATUS WANT_IN_STDERR COMMAND...
  local name=$1 want=$2 text=$3
  shift 3
  "$@" >"$T/out" 2>"$T/err"
  local got=$?
  if [[ $got -ne $want ]]; then fail "$name" "exit $got, expected $want"; return; fi
  if grep -qF -- "$text" "$T/err"; then ok; else fail "$name" "stderr lacks '$text'"; fi
}
expect shard-range 2 "expected I/N with 0 <= I < N" "$ND" dedup "$T/a.txt" --store "$STORE/x" --shard 3/3 --shard-output "$T/p"
expect shard-syntax 2 "expected I/N" "$ND" dedup "$T/a.txt" --store "$STORE/x" --shard two --shard-output "$T/p"
for bad in 4294967297/4294967298 " 1/2" 01/2 +1/2 "1/2 " 1/100001; do
  expect "shard-syntax '$bad'" 2 "expected I/N" "$ND" dedup "$T/a.txt" --store "$STORE/x" --shard "$bad" --shard-output "$T/p"
done
# Shards given different N on one prefix refuse each other at the first barrier instead of waiting.
start=$SECONDS
"$ND" dedup "$T/a.txt" --store "$STORE/other-n" --shard 0/2 --shard-output "$T/n0" -q 2>"$T/n0.err" &
n0=$!
"$ND" dedup "$T/a.txt" --store "$STORE/other-n" --shard 1/3 --shard-output "$T/n1" -q 2>"$T/n1.err"
n1_status=$?
wait $n0
n0_status=$?
if [[ $n0_status -eq 1 && $n1_status -eq 1 ]] && ((SECONDS - start < 60)) &&
  grep -qF "another job (or the same given another N) uses this index" "$T/n0.err" &&
  grep -qF "another job (or the same given another N) uses this index" "$T/n1.err"; then
  ok
else
  fail shard-other-n "exits $n0_status and $n1_status after $((SECONDS - start)) s: $(cat "$T/n0.err" "$T/n1.err")"
fi
expect shard-dir 1 "must be a Redis index" "$ND" dedup "$T/a.txt" --store "$T/dir" --shard 0/2 --shard-output "$T/p"
expect shard-outputs 1 "a shard writes only its part" "$ND" dedup "$T/a.txt" --store "$STORE/x" --shard 0/2 --shard-output "$T/p" -o "$T/k"
expect shard-no-part 1 "needs --shard-output" "$ND" dedup "$T/a.txt" --store "$STORE/x" --shard 0/2
expect shard-stdin 1 "cannot read standard input" "$ND" dedup - --store "$STORE/x" --shard 0/2 --shard-output "$T/p"
expect store-alone 1 "--store needs --shard" "$ND" dedup "$T/a.txt" --store "$STORE/x" -o "$T/k"
expect bad-url 1 "bad store location" "$ND" dedup "$T/a.txt" --store "redis-cluster://127.0.0.1/x" --shard 0/2 --shard-output "$T/p"
expect unreachable 1 "127.0.0.1:1" "$ND" dedup "$T/a.txt" --store "redis://127.0.0.1:1/x" --redis-timeout 0.3 --shard 0/1 --shard-output "$T/p"
[[ ! -e "$T/p" ]] && ok || fail unreachable "a part was written"
# A used prefix is refused (job1 holds the first run's documents).
expect used-prefix 1 "already holds" "$ND" dedup "$T/a.txt" --store "$STORE/job1" --shard 0/1 --shard-output "$T/p"
# The merge (with the last run's flags): a missing part, a part twice, a part of another job, a
# damaged part.
LAST=(--priority-field rank --on-error skip --threshold 0.7)
expect merge-missing 1 "the part of shard 1/3 is missing" "$ND" dedup "$T/a.txt" "$T/b.jsonl" "${LAST[@]}" --merge "$T/part0,$T/part2" -o "$T/k"
expect merge-twice 1 "is given twice" "$ND" dedup "$T/a.txt" "$T/b.jsonl" "${LAST[@]}" --merge "$T/part0,$T/part0,$T/part1" -o "$T/k"
expect merge-other-job 1 "made by another job" "$ND" dedup "$T/a.txt" --merge "$T/part0,$T/part1,$T/part2" -o "$T/k"
expect merge-other-job-says 1 "threshold=0.7 sketch=1024x1 bands=20x4 fingerprint=1 sketch_version=1', this merge 'method=accurate" "$ND" dedup "$T/a.txt" "$T/b.jsonl" --priority-field rank --on-error skip --merge "$T/part0,$T/part1,$T/part2" -o "$T/k"
head -c 2000 "$T/part1" >"$T/cut"
expect merge-damaged 1 "damaged" "$ND" dedup "$T/a.txt" "$T/b.jsonl" "${LAST[@]}" --merge "$T/part0,$T/cut,$T/part2" -o "$T/k"
expect merge-not-a-part 1 "not a neardup shard part" "$ND" dedup "$T/a.txt" "$T/b.jsonl" "${LAST[@]}" --merge "$T/a.txt,$T/part1,$T/part2" -o "$T/k"
[[ ! -e "$T/k" ]] && ok || fail merge-refused "an output was written by a refused merge"

# Compaction of a job's index (neardup index compact), and its refusals.
"$ND" index compact "$STORE/job1" >"$T/out" 2>"$T/err"
if [[ $? -eq 0 ]] && grep -q '^compacted [1-9][0-9]* buckets' "$T/out"; then ok; else fail compact "no summary line"; fi
expect compact-missing 1 "no index under the prefix 'nothing-here'" "$ND" index compact "$STORE/nothing-here"
expect compact-dir 2 "the embedded store compacts itself" "$ND" index compact "$T/some-dir"
# A Redis index's info: its layout, backend, documents (every line of the job's inputs) and the
# servers' memory.
if "$ND" index info "$STORE/job1" >"$T/out" 2>"$T/err" && grep -q '^layout: 2$' "$T/out" &&
  grep -q '^backend: redis-cluster$' "$T/out" && grep -q '^used_memory: [1-9]' "$T/out" &&
  [[ $(grep '^documents: ' "$T/out" | awk '{ print $2 }') -gt 1000 ]]; then
  ok
else
  fail info "not the index's info: $(cat "$T/out" "$T/err")"
fi
expect info-missing 1 "no index under the prefix 'nothing-here'" "$ND" index info "$STORE/nothing-here"
# The store commands take folders: a Redis location is refused, never made a folder.
cd "$T" || exit 1
expect add-redis 2 "take a store folder; a Redis index" "$ND" index add "$STORE/x" "$T/a.txt"
cd - >/dev/null || exit 1
[[ ! -e "$T/redis-cluster:" ]] && ok || fail add-redis "a folder was made of the location"
expect query-redis 2 "a Redis index is queried through neardup serve --store" "$ND" index query "$STORE/x" "$T/a.txt"
# Locations that cannot be right are refused at once, not retried until the timeout.
for bad in "redis://[::1]/p" "redis://user:pw@127.0.0.1:$PORT/p" "redis:// 127.0.0.1:$PORT/p"; do
  start=$SECONDS
  expect "bad location '$bad'" 1 "bad store location" "$ND" index info "$bad"
  ((SECONDS - start < 3)) && ok || fail "bad location '$bad'" "took $((SECONDS - start)) s"
done
expect info-redis-flags 2 "go with redis://" "$ND" index info "$T/some-dir" --redis-timeout 1

echo "shard_test: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
