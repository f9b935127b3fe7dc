#!/usr/bin/env bash
# CLI tests of `neardup index` and `neardup plan`: expected stdout, stderr and exit code per case.
# Distances in the fixtures are known by construction (codes differ in the bits named in comments).
# Usage: index_cli_test.sh PATH/TO/neardup
set -uo pipefail
NEARDUP=${1:?usage: $0 PATH/TO/neardup}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0

# expect NAME EXPECTED_EXIT EXPECTED_STDOUT_FILE|- STDERR_SUBSTRING|- -- COMMAND...
expect() {
  local name=$1 want_rc=$2 want_out=$3 want_err=$4
  shift 5
  "$@" >"$WORK/out" 2>"$WORK/err"
  local rc=$?
  local ok=1
  [[ $rc -eq $want_rc ]] || { echo "FAIL $name: exit $rc, expected $want_rc"; ok=0; }
  if [[ $want_out != - ]] && ! diff -u "$want_out" "$WORK/out"; then echo "FAIL $name: stdout"; ok=0; fi
  if [[ $want_err != - ]] && ! grep -qF -- "$want_err" "$WORK/err"; then
    echo "FAIL $name: stderr lacks '$want_err':"; cat "$WORK/err"; ok=0
  fi
  [[ $ok -eq 1 ]] && echo "ok   $name" || failures=$((failures + 1))
}

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

expect "build" 0 /dev/null "5 fingerprints" -- "$NEARDUP" index build "$WORK/db.tsv" -o "$WORK/db.ndx"
printf 'q1\t1\t0\nq1\t5\t1\nq1\t2\t2\n' >"$WORK/want_query"
expect "query k=3" 0 "$WORK/want_query" - -- "$NEARDUP" index query "$WORK/db.ndx" "$WORK/queries.tsv" -k 3
printf 'q1\t1\t0\nq1\t5\t1\n' >"$WORK/want_query1"
expect "query k=1 from stdin" 0 "$WORK/want_query1" - -- \
  bash -c "\"$NEARDUP\" index query \"$WORK/db.ndx\" -k 1 < \"$WORK/queries.tsv\""
printf 'design: 4 blocks 16,16,16,16, key 1 block: 4 tables, exact for k<=3\nfingerprints: 5\n' >"$WORK/want_info"
"$NEARDUP" index info "$WORK/db.ndx" | head -2 >"$WORK/info_head"
expect "info" 0 "$WORK/want_info" - -- cat "$WORK/info_head"
expect "build --decimal, explicit design" 0 /dev/null "10 tables" -- \
  "$NEARDUP" index build --decimal "$WORK/db_decimal.tsv" -o "$WORK/dec.ndx" --blocks 13,13,13,13,12 --key-blocks 2
expect "query decimal-built index" 0 "$WORK/want_query" - -- "$NEARDUP" index query "$WORK/dec.ndx" "$WORK/queries.tsv"
printf '1\t2\t2\n1\t5\t1\n2\t3\t2\n2\t5\t3\n' >"$WORK/want_pairs"
expect "pairs k=3" 0 "$WORK/want_pairs" - -- "$NEARDUP" index pairs "$WORK/db.tsv" -k 3
printf '1\t5\t1\n' >"$WORK/want_pairs1"
expect "pairs k=1 decimal" 0 "$WORK/want_pairs1" - -- "$NEARDUP" index pairs --decimal "$WORK/db_decimal.tsv" -k 1
printf 'a\tb\t0\n' >"$WORK/want_pairs_strings"
expect "pairs keeps string ids" 0 "$WORK/want_pairs_strings" - -- \
  bash -c "printf 'a\t0123456789abcdef\nb\t0123456789ABCDEF\n' | \"$NEARDUP\" index pairs"
expect "empty input" 0 /dev/null "0 fingerprints" -- bash -c "\"$NEARDUP\" index build -o \"$WORK/empty.ndx\" < /dev/null"
expect "query empty index" 0 /dev/null - -- "$NEARDUP" index query "$WORK/empty.ndx" "$WORK/queries.tsv"

# Bad input: exit 1 with file and line.
printf '1\t00000000000000f0\n2\t00000000000000g0\n' >"$WORK/bad_hex.tsv"
expect "malformed hex" 1 /dev/null "bad_hex.tsv:2: fingerprint '00000000000000g0' is not 16 hex digits" -- \
  "$NEARDUP" index build "$WORK/bad_hex.tsv" -o "$WORK/x.ndx"
printf '1\tf0\n' >"$WORK/short_hex.tsv"
expect "short hex" 1 /dev/null "short_hex.tsv:1:" -- "$NEARDUP" index pairs "$WORK/short_hex.tsv"
printf '1\t00000000000000f0\textra\n' >"$WORK/three_columns.tsv"
expect "wrong column count" 1 /dev/null "three_columns.tsv:1: expected 2 tab-separated columns (id, fingerprint), found 3" -- \
  "$NEARDUP" index build "$WORK/three_columns.tsv" -o "$WORK/x.ndx"
printf 'just-one-column\n' >"$WORK/one_column.tsv"
expect "one column" 1 /dev/null "found 1" -- "$NEARDUP" index query "$WORK/db.ndx" "$WORK/one_column.tsv"
printf '1\t-5\n' >"$WORK/negative.tsv"
expect "negative decimal" 1 /dev/null "not an unsigned 64-bit decimal" -- "$NEARDUP" index pairs --decimal "$WORK/negative.tsv"
printf '1\t18446744073709551616\n' >"$WORK/overflow.tsv"
expect "decimal overflow" 1 /dev/null "overflow.tsv:1:" -- "$NEARDUP" index pairs --decimal "$WORK/overflow.tsv"
printf 'doc-a\t00000000000000f0\n' >"$WORK/string_id.tsv"
expect "non-numeric id in build" 1 /dev/null "id 'doc-a' is not an unsigned 64-bit integer" -- \
  "$NEARDUP" index build "$WORK/string_id.tsv" -o "$WORK/x.ndx"
printf '7\t00000000000000f0\n7\t00000000000000f1\n' >"$WORK/dup_id.tsv"
expect "duplicate id" 1 /dev/null "id 7 appears twice" -- "$NEARDUP" index build "$WORK/dup_id.tsv" -o "$WORK/x.ndx"
expect "missing input file" 1 /dev/null "no_such.tsv" -- "$NEARDUP" index pairs "$WORK/no_such.tsv"
expect "missing index file" 1 /dev/null "no_such.ndx" -- "$NEARDUP" index query "$WORK/no_such.ndx" "$WORK/queries.tsv"
head -c 100 "$WORK/db.ndx" >"$WORK/truncated.ndx"
expect "truncated index" 1 /dev/null "truncated.ndx" -- "$NEARDUP" index info "$WORK/truncated.ndx"
cp "$WORK/db.ndx" "$WORK/flipped.ndx"
printf '\x01' | dd of="$WORK/flipped.ndx" bs=1 seek=300 conv=notrunc status=none
expect "corrupt index" 1 /dev/null "checksum mismatch" -- "$NEARDUP" index query "$WORK/flipped.ndx" "$WORK/queries.tsv"
expect "k above the design" 1 /dev/null "k=5 is outside 0..3" -- "$NEARDUP" index query "$WORK/db.ndx" "$WORK/queries.tsv" -k 5

# Usage errors: exit 2.
expect "build without -o" 2 /dev/null "--output is required" -- "$NEARDUP" index build "$WORK/db.tsv"
expect "k out of range" 2 /dev/null "-k" -- "$NEARDUP" index pairs "$WORK/db.tsv" -k 9
expect "index without subcommand" 2 /dev/null - -- "$NEARDUP" index
expect "plan without --n" 2 /dev/null "--n is required" -- "$NEARDUP" plan --k 3
expect "plan bad n" 2 /dev/null "--n must be" -- "$NEARDUP" plan --n 0.5

# plan: the choice and its explanation.
"$NEARDUP" plan --n 1e7 --k 3 --memory 640M >"$WORK/plan" 2>&1
expect "plan 10M in 640M picks 4 tables" 0 /dev/null - -- grep -q "^design: 4 blocks 16,16,16,16, key 1 block: 4 tables" "$WORK/plan"
expect "plan lists alternatives" 0 /dev/null - -- grep -q "over the memory budget" "$WORK/plan"
expect "plan impossible budget" 1 /dev/null "no exact design for k=3 fits" -- "$NEARDUP" plan --n 1e9 --k 3 --memory 1G
for command in "index build" "index query" "index pairs" "index info" "plan"; do
  expect "$command --help has an example" 0 /dev/null - -- bash -c "\"$NEARDUP\" $command --help | grep -q Example"
done

if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all passed"
