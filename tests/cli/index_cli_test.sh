#!/usr/bin/env bash
# CLI tests of `neardup index` and `neardup plan`: expected stdout, stderr and exit code per case.
# Distances in the fixtures are known by construction (codes differ in the bits named in comments).
# Usage: index_cli_test.sh PATH/TO/neardup
set -uo pipefail
NEARDUP=${1:?usage: $0 PATH/TO/neardup}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0

# expect NAME EXPECTED_EXIT EXPECTED_STDOUT_FILE EXPECTED_STDERR -- COMMAND...: the exit code, the whole
# standard output and the whole standard error (the last newline aside; "" for none).
expect() {
  local name=$1 want_rc=$2 want_out=$3 want_err=$4
  shift 5
  "$@" >"$WORK/out" 2>"$WORK/err"
  local rc=$?
  local ok=1
  [[ $rc -eq $want_rc ]] || { echo "FAIL $name: exit $rc, expected $want_rc"; ok=0; }
  if ! diff -u "$want_out" "$WORK/out"; then echo "FAIL $name: stdout"; ok=0; fi
  if [[ "$(cat "$WORK/err")" != "$want_err" ]]; then
    echo "FAIL $name: stderr is not '$want_err':"; cat "$WORK/err"; ok=0
  fi
  [[ $ok -eq 1 ]] && echo "ok   $name" || failures=$((failures + 1))
}
# The usage-error lines CLI11 prints after its message.
usage() { printf '%s\nRun with --help for more information.' "$1"; }
D4="4 blocks 16,16,16,16, key 1 block: 4 tables, exact for k<=3"
D10="5 blocks 13,13,13,13,12, key 2 blocks: 10 tables, exact for k<=3"

# Ids 1..5. 2 = 1 with bits 0,1 flipped (distance 2); 3 = 1 with bits 0,1,2,3 flipped (distance 4,
# and 2 from id 2); 4 = ~1 (distance 64); 5 = 1 with bit 63 flipped (distance 1, 3 from id 2).
cat >"$WORK/db.tsv" <<'TSV'
1	00000000000000f0
2	00000000000000f3
3	00000000000000ff
4	ffffffffffffff0f
5	80000000000000f0
TSV
# The same codes in decimal (0xf0 = 240, 0xf3 = 243, 0xff = 255, ...).
cat >"$WORK/db_decimal.tsv" <<'TSV'
1	240
2	243
3	255
4	18446744073709551375
5	9223372036854776048
TSV
printf 'q1\t00000000000000f0\nq2\tffffffffffffffff\n' >"$WORK/queries.tsv"

expect "build" 0 /dev/null "neardup index build: 5 fingerprints, $D4 -> $WORK/db.ndx" -- \
  "$NEARDUP" index build "$WORK/db.tsv" -o "$WORK/db.ndx"
printf 'q1\t1\t0\nq1\t5\t1\nq1\t2\t2\n' >"$WORK/want_query"
expect "query k=3" 0 "$WORK/want_query" "" -- "$NEARDUP" index query "$WORK/db.ndx" "$WORK/queries.tsv" -k 3
printf 'q1\t1\t0\nq1\t5\t1\n' >"$WORK/want_query1"
expect "query k=1 from stdin" 0 "$WORK/want_query1" "" -- \
  bash -c "\"$NEARDUP\" index query \"$WORK/db.ndx\" -k 1 < \"$WORK/queries.tsv\""
# The memory line depends on the index's allocation: its form is checked, not its figures.
printf 'format: version 2\nmethod: simhash\nsettings: unknown (made from fingerprints, or of format version 1)
ids: in the index (numbers)\nbuilt for k: 3 (the default of index query)\ndesign: %s\nfingerprints: 5
memory: N bytes (mostly fixed overhead under 100000 fingerprints)\n' "$D4" >"$WORK/want_info"
expect "info" 0 "$WORK/want_info" "" -- \
  bash -c "\"$NEARDUP\" index info \"$WORK/db.ndx\" | sed -E 's/^memory: [0-9]+ bytes/memory: N bytes/'"
# Ids come back as written: only canonical decimal numbers are kept as numbers in the index; 007, 0 and
# 00 are different ids (in INDEX.ids), and a number beyond 64 bits is text.
printf '007\tffffffffffffffff\n42\t0000000000000000\n0\t00000000000000ff\n00\t000000000000ff00\n123456789012345678901234567\t00000000ffffffff\n' \
  >"$WORK/padded.tsv"
expect "ids as written: build" 0 /dev/null "neardup index build: 5 fingerprints, $D4 -> $WORK/padded.ndx (ids in \
$WORK/padded.ndx.ids)" -- "$NEARDUP" index build "$WORK/padded.tsv" -o "$WORK/padded.ndx"
printf 'q\tfffffffffffffffe\nz\t00000000000000fe\nw\t000000000000fe00\nb\t00000000fffffffe\n' >"$WORK/padded_q.tsv"
printf 'q\t007\t1\nz\t0\t1\nw\t00\t1\nb\t123456789012345678901234567\t1\n' >"$WORK/want_padded"
expect "ids as written: query" 0 "$WORK/want_padded" "" -- \
  "$NEARDUP" index query "$WORK/padded.ndx" "$WORK/padded_q.tsv" -k 1
# An index whose ids are in INDEX.ids records it: without the file, query is an error, never row
# numbers; info says so.
printf 'a\tffffffffffffffff\nb\tfffffffffffffffe\n' >"$WORK/ab.tsv"
"$NEARDUP" index build "$WORK/ab.tsv" -o "$WORK/ab.ndx" 2>/dev/null
mv "$WORK/ab.ndx.ids" "$WORK/ab.ids.moved"
expect "missing ids file" 1 /dev/null "neardup index query: $WORK/ab.ndx.ids: missing: $WORK/ab.ndx names its documents in \
this ids file (moved or deleted? keep it beside the index)" -- "$NEARDUP" index query "$WORK/ab.ndx" "$WORK/queries.tsv"
printf 'ids: in the ids file %s (required by queries)\n' "$WORK/ab.ndx.ids" >"$WORK/want_ids_line"
expect "info names the ids file" 0 "$WORK/want_ids_line" "" -- \
  bash -c "\"$NEARDUP\" index info \"$WORK/ab.ndx\" | grep '^ids:'"
# The k an index is built for is recorded and is query's default (here 0: no match at distance 1).
printf '1\tffffffffffffffff\n2\tfffffffffffffffe\n' >"$WORK/k0.tsv"
"$NEARDUP" index build -k 0 "$WORK/k0.tsv" -o "$WORK/k0.ndx" 2>/dev/null
printf 'q\t1\t0\n' >"$WORK/want_k0"
expect "query defaults to the k built for" 0 "$WORK/want_k0" "" -- bash -c "printf 'q\tffffffffffffffff\n' | \"$NEARDUP\" index query \"$WORK/k0.ndx\""
printf 'q\t1\t0\nq\t2\t1\n' >"$WORK/want_k1"
expect "query -k above the k built for" 0 "$WORK/want_k1" "" -- bash -c "printf 'q\tffffffffffffffff\n' | \"$NEARDUP\" index query \"$WORK/k0.ndx\" -k 1"
printf 'built for k: 0 (the default of index query)\n' >"$WORK/want_k_line"
expect "info shows the k built for" 0 "$WORK/want_k_line" "" -- bash -c "\"$NEARDUP\" index info \"$WORK/k0.ndx\" | grep '^built for k:'"
# Files of earlier builds (no k recorded) still open; their queries default to the design's largest k.
printf 'built for k: not recorded (index query defaults to 3, the design'"'"'s largest)\n' >"$WORK/want_v1_k"
expect "version-1 file: k not recorded" 0 "$WORK/want_v1_k" "" -- bash -c "\"$NEARDUP\" index info \"$(dirname "$0")/../data/index_v1/simhash.idx\" | grep '^built for k:'"
# --blocks takes one list: the input after it is read.
expect "blocks then input" 0 /dev/null "neardup index build: 5 fingerprints, $D4 -> $WORK/blocks.ndx" -- \
  "$NEARDUP" index build --key-blocks 1 --blocks 16,16,16,16 "$WORK/db.tsv" -o "$WORK/blocks.ndx"
expect "build --decimal, explicit design" 0 /dev/null "neardup index build: 5 fingerprints, $D10 -> $WORK/dec.ndx" -- \
  "$NEARDUP" index build --decimal "$WORK/db_decimal.tsv" -o "$WORK/dec.ndx" --blocks 13,13,13,13,12 --key-blocks 2
expect "query decimal-built index" 0 "$WORK/want_query" "" -- "$NEARDUP" index query "$WORK/dec.ndx" "$WORK/queries.tsv"
printf '1\t2\t2\n1\t5\t1\n2\t3\t2\n2\t5\t3\n' >"$WORK/want_pairs"
expect "pairs k=3" 0 "$WORK/want_pairs" "" -- "$NEARDUP" index pairs "$WORK/db.tsv" -k 3
printf '1\t5\t1\n' >"$WORK/want_pairs1"
expect "pairs k=1 decimal" 0 "$WORK/want_pairs1" "" -- "$NEARDUP" index pairs --decimal "$WORK/db_decimal.tsv" -k 1
printf 'a\tb\t0\n' >"$WORK/want_pairs_strings"
expect "pairs keeps string ids" 0 "$WORK/want_pairs_strings" "" -- \
  bash -c "printf 'a\t0123456789abcdef\nb\t0123456789ABCDEF\n' | \"$NEARDUP\" index pairs"
expect "empty input" 0 /dev/null "neardup index build: 0 fingerprints, $D4 -> $WORK/empty.ndx" -- \
  bash -c "\"$NEARDUP\" index build -o \"$WORK/empty.ndx\" < /dev/null"
expect "query empty index" 0 /dev/null "" -- "$NEARDUP" index query "$WORK/empty.ndx" "$WORK/queries.tsv"

# Bad input: exit 1 with file and line.
printf '1\t00000000000000f0\n2\t00000000000000g0\n' >"$WORK/bad_hex.tsv"
expect "malformed hex" 1 /dev/null "neardup index build: $WORK/bad_hex.tsv:2: fingerprint '00000000000000g0' is not 16 hex \
digits (use --decimal for decimal numbers)" -- \
  "$NEARDUP" index build "$WORK/bad_hex.tsv" -o "$WORK/x.ndx"
printf '1\tf0\n' >"$WORK/short_hex.tsv"
expect "short hex" 1 /dev/null "neardup index pairs: $WORK/short_hex.tsv:1: fingerprint 'f0' is not 16 hex digits (use \
--decimal for decimal numbers)" -- "$NEARDUP" index pairs "$WORK/short_hex.tsv"
printf '1\t00000000000000f0\textra\n' >"$WORK/three_columns.tsv"
expect "wrong column count" 1 /dev/null "neardup index build: $WORK/three_columns.tsv:1: expected 2 tab-separated columns \
(id, fingerprint), found 3" -- \
  "$NEARDUP" index build "$WORK/three_columns.tsv" -o "$WORK/x.ndx"
printf 'just-one-column\n' >"$WORK/one_column.tsv"
expect "one column" 1 /dev/null "neardup index query: $WORK/one_column.tsv:1: expected 2 tab-separated columns (id, \
fingerprint), found 1" -- "$NEARDUP" index query "$WORK/db.ndx" "$WORK/one_column.tsv"
printf '1\t-5\n' >"$WORK/negative.tsv"
expect "negative decimal" 1 /dev/null "neardup index pairs: $WORK/negative.tsv:1: fingerprint '-5' is not an unsigned 64-bit \
decimal number" -- "$NEARDUP" index pairs --decimal "$WORK/negative.tsv"
printf '1\t18446744073709551616\n' >"$WORK/overflow.tsv"
expect "decimal overflow" 1 /dev/null "neardup index pairs: $WORK/overflow.tsv:1: fingerprint '18446744073709551616' is not \
an unsigned 64-bit decimal number" -- "$NEARDUP" index pairs --decimal "$WORK/overflow.tsv"
printf 'doc-a\t00000000000000f0\ndoc\\tb\t00000000000000f3\n' >"$WORK/string_id.tsv"
expect "ids that are not numbers in build" 0 /dev/null "neardup index build: 2 fingerprints, $D4 -> $WORK/x.ndx (ids in \
$WORK/x.ndx.ids)" -- "$NEARDUP" index build "$WORK/string_id.tsv" -o "$WORK/x.ndx"
printf 'doc-a\tdoc-a\t0\ndoc-a\tdoc\\tb\t2\n' >"$WORK/want_string_query"
printf 'doc-a\t00000000000000f0\n' >"$WORK/string_query.tsv"
expect "query prints the ids of INDEX.ids" 0 "$WORK/want_string_query" "" -- \
  "$NEARDUP" index query "$WORK/x.ndx" "$WORK/string_query.tsv"
printf '7\t00000000000000f0\n7\t00000000000000f1\n' >"$WORK/dup_id.tsv"
expect "duplicate id" 1 /dev/null "neardup index build: id 7 appears twice: $WORK/dup_id.tsv:1 and $WORK/dup_id.tsv:2" -- "$NEARDUP" index build "$WORK/dup_id.tsv" -o "$WORK/x.ndx"
expect "missing input file" 1 /dev/null "neardup index pairs: $WORK/no_such.tsv: cannot open: No such file or directory" -- "$NEARDUP" index pairs "$WORK/no_such.tsv"
expect "missing index file" 1 /dev/null "neardup index query: $WORK/no_such.ndx: no such file" -- "$NEARDUP" index query "$WORK/no_such.ndx" "$WORK/queries.tsv"
head -c 100 "$WORK/db.ndx" >"$WORK/truncated.ndx"
expect "truncated index" 1 /dev/null "neardup index info: $WORK/truncated.ndx: not a neardup index (bad magic or shorter \
than the 128-byte header)" -- "$NEARDUP" index info "$WORK/truncated.ndx"
cp "$WORK/db.ndx" "$WORK/flipped.ndx"
printf '\x01' | dd of="$WORK/flipped.ndx" bs=1 seek=300 conv=notrunc status=none
expect "corrupt index" 1 /dev/null "neardup index query: $WORK/flipped.ndx: header checksum mismatch" -- "$NEARDUP" index query "$WORK/flipped.ndx" "$WORK/queries.tsv"
expect "k above the design" 1 /dev/null "neardup index query: k=5 is outside 0..3, the range this index's design ($D4) \
answers exactly" -- "$NEARDUP" index query "$WORK/db.ndx" "$WORK/queries.tsv" -k 5

# Usage errors: exit 2.
expect "invalid design" 2 /dev/null "neardup index build: usage: --blocks 64 --key-blocks 1: a design has 2 to 8 blocks, not 1" -- \
  "$NEARDUP" index build --blocks 64 --key-blocks 1 "$WORK/db.tsv" -o "$WORK/x.ndx"
expect "negative key blocks" 2 /dev/null "neardup index build: usage: --blocks 32,32 --key-blocks -1: key blocks must be \
1..1" -- "$NEARDUP" index build --blocks 32,32 --key-blocks -1 "$WORK/db.tsv" -o "$WORK/x.ndx"
for option in "--jsonl" "--method accurate" "--threshold 0.5" "--id-prefix x" "--sketches-on-disk"; do
  expect "store option $option on an index file" 2 /dev/null "neardup index query: usage: ${option%% *} is for stores (a \
directory), not index files such as $WORK/db.ndx" -- "$NEARDUP" index query "$WORK/db.ndx" "$WORK/queries.tsv" $option
done
expect "plan fraction" 2 /dev/null "$(usage "--memory: sizes are whole numbers, not fractions: 1.5G (use a smaller unit: 1536M)")" -- \
  "$NEARDUP" plan --n 10 --memory 1.5G
expect "build without -o" 2 /dev/null "$(usage "--output is required")" -- "$NEARDUP" index build "$WORK/db.tsv"
expect "k out of range" 2 /dev/null "$(usage "-k: Value 9 not in range 0 to 7")" -- "$NEARDUP" index pairs "$WORK/db.tsv" -k 9
expect "index without subcommand" 2 /dev/null "$(usage "A subcommand is required")" -- "$NEARDUP" index
expect "plan without --n" 2 /dev/null "$(usage "--n is required")" -- "$NEARDUP" plan --k 3
expect "plan bad n" 2 /dev/null "neardup plan: --n must be a whole number from 1 to 2^32 - 2" -- "$NEARDUP" plan --n 0.5

# plan: the choice and its explanation. 4 tables keyed on 16 bits each: 4 x 10^7 / 2^16 = 610.4
# candidates per query. An alternative with more tables is listed as over the budget (its figures
# come from the planner's cost model and are not checked here).
printf 'fingerprints: 10000000, k: 3, memory budget: 640.0 MiB\ndesign: %s\nbucket directory: 16 bits per table
expected candidates per query: 610.4\n' "$D4" >"$WORK/want_plan"
expect "plan 10M in 640M picks 4 tables" 0 "$WORK/want_plan" "" -- bash -c "\"$NEARDUP\" plan --n 1e7 --k 3 --memory 640M | head -4"
printf '  %s: N ns/query, N candidates/query, N bytes/fingerprint  (over the memory budget)\n' "$D10" >"$WORK/want_alternative"
expect "plan lists alternatives" 0 "$WORK/want_alternative" "" -- \
  bash -c "\"$NEARDUP\" plan --n 1e7 --k 3 --memory 640M | grep -F '  $D10:' | sed -E 's/[0-9.]+ (ns|candidates|bytes)\//N \1\//g'"
expect "plan impossible budget" 1 /dev/null "neardup plan: no exact design for k=3 fits 1073741824 bytes for 1000000000 \
fingerprints (1.07 bytes per fingerprint); the smallest needs 53.0 bytes per fingerprint, 53001048576 bytes in all ($D4)" -- \
  "$NEARDUP" plan --n 1e9 --k 3 --memory 1G
expect "plan tiny budget" 1 /dev/null "neardup plan: no exact design for k=3 fits 1024 bytes for 1000000000 \
fingerprints (1.02e-06 bytes per fingerprint); the smallest needs 53.0 bytes per fingerprint, 53001048576 bytes in all ($D4)" -- \
  "$NEARDUP" plan --n 1e9 --k 3 --memory 1K
# The example of each --help, to the end of the text.
printf 'Example:\n  neardup index build docs.tsv -o docs.ndx -k 3 --memory 8G\n' >"$WORK/want_help_index_build"
printf 'Example:\n  neardup index query docs.ndx queries.tsv -k 3\n  neardup index query posts.store new.jsonl --jsonl\n' \
  >"$WORK/want_help_index_query"
printf 'Example:\n  neardup index pairs docs.tsv -k 3\n' >"$WORK/want_help_index_pairs"
printf 'Example:\n  neardup index info docs.ndx\n  neardup index info posts.store\n  neardup index info redis-cluster://127.0.0.1:7000/posts\n' \
  >"$WORK/want_help_index_info"
printf 'Example:\n  neardup plan --n 1e9 --k 3 --memory 64G\n' >"$WORK/want_help_plan"
for command in "index build" "index query" "index pairs" "index info" "plan"; do
  expect "$command --help example" 0 "$WORK/want_help_${command// /_}" "" -- \
    bash -c "\"$NEARDUP\" $command --help | sed -n '/^Examples*:\$/,\$p'"
done

if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all passed"
