#!/usr/bin/env bash
# CLI behaviour of neardup: expected stdout, stderr and exit code of each case.
# Usage: cli_test.sh PATH/TO/neardup
set -u
ND=$1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
passed=0
failed=0

# run NAME EXPECTED_EXIT STDIN_FILE -- COMMAND...: runs it, keeping stdout in $T/out and stderr in $T/err.
run() {
  local name=$1 want=$2 input=$3
  shift 4
  "$@" <"$input" >"$T/out" 2>"$T/err"
  local got=$?
  if [[ $got -ne $want ]]; then
    fail "$name" "exit $got, expected $want"
    return 1
  fi
  return 0
}
fail() {
  echo "FAIL $1: $2"
  echo "  stdout: $(head -c 400 "$T/out")"
  echo "  stderr: $(head -c 400 "$T/err")"
  failed=$((failed + 1))
}
ok() { passed=$((passed + 1)); }
# expect NAME FILE PATTERN: FILE contains the fixed string PATTERN.
expect() {
  if grep -qF -- "$3" "$2"; then ok; else fail "$1" "$(basename "$2") lacks '$3'"; fi
}
# expect_same NAME FILE CONTENT: FILE is exactly CONTENT.
expect_same() {
  if [[ "$(cat "$2")" == "$3" ]]; then ok; else fail "$1" "$(basename "$2") is not '$3'"; fi
}
vector() {  # vector MODE LINE: the known-answer fingerprint of kat_texts.txt line LINE in MODE
  awk -F'\t' -v m="$1" -v l="$2" '$1 == m && $2 == l { print $3 }' "$ROOT/tests/data/fingerprint_vectors.tsv"
}

printf 'The quick brown fox jumps over the lazy dog.\nThe quick brown fox jumped over the lazy dog!\n\n' >"$T/plain.txt"
: >"$T/empty"

# --- hash, plain text
if run hash-plain 0 "$T/plain.txt" -- "$ND" hash; then
  expect_same hash-plain "$T/out" "$(printf '1\t%s\n2\t%s\n3\t0000000000000000' "$(vector shingles:word:3 2)" "$(vector shingles:word:3 3)")"
fi
if run hash-terms 0 "$T/plain.txt" -- "$ND" hash --mode terms; then
  expect hash-terms "$T/out" "$(printf '1\t%s' "$(vector terms 2)")"
fi
if run hash-char 0 "$T/plain.txt" -- "$ND" hash --shingle-unit char -n 5; then
  expect hash-char "$T/out" "$(printf '2\t%s' "$(vector shingles:char:5 3)")"
fi
if run hash-files 0 "$T/empty" -- "$ND" hash "$T/plain.txt" "$T/plain.txt"; then
  # Several inputs: lines are named path:line, as line numbers repeat across files.
  expect_same hash-files <(cut -f1 "$T/out") "$(printf '%s:%d\n' "$T/plain.txt" 1 "$T/plain.txt" 2 "$T/plain.txt" 3 \
    "$T/plain.txt" 1 "$T/plain.txt" 2 "$T/plain.txt" 3)"
fi
gzip -c "$T/plain.txt" >"$T/plain.txt.gz"
if run hash-gzip 0 "$T/empty" -- "$ND" hash "$T/plain.txt.gz"; then
  expect hash-gzip "$T/out" "$(printf '1\t%s' "$(vector shingles:word:3 2)")"
fi
if run hash-json 0 "$T/plain.txt" -- "$ND" hash --json; then
  expect hash-json "$T/out" "{\"id\":\"3\",\"simhash\":\"0000000000000000\",\"empty\":true}"
fi
if run hash-explain 0 "$T/plain.txt" -- "$ND" hash --json --explain --mode terms --top 2; then
  expect hash-explain "$T/out" "\"top\":[[\"the\",2],[\"brown\",1]]"
fi

# --- hash, JSONL
printf '{"id":"a","text":"The quick brown fox jumps over the lazy dog."}\n{"meta":{"id":7},"text":"x","body":{"t":"nested"}}\n' >"$T/docs.jsonl"
if run jsonl 0 "$T/docs.jsonl" -- "$ND" hash --jsonl; then
  expect jsonl "$T/out" "$(printf 'a\t%s' "$(vector shingles:word:3 2)")"
  expect jsonl "$T/out" "$(printf '2\t')"
fi
if run jsonl-nested 1 "$T/docs.jsonl" -- "$ND" hash --jsonl --id-field meta.id --text-field body.t; then
  expect jsonl-nested "$T/err" "neardup hash: -:1: no text field 'body.t'"
fi
printf '{"text":"ok"}\n{"text": broken\n' >"$T/bad.jsonl"
if run jsonl-malformed 1 "$T/empty" -- "$ND" hash --jsonl "$T/bad.jsonl"; then
  expect jsonl-malformed "$T/err" "$T/bad.jsonl:2: malformed JSON"
  [[ $(wc -l <"$T/out") -eq 1 ]] && ok || fail jsonl-malformed "the good first line was not written"
fi
printf '{"text":["not","a","string"]}\n' >"$T/type.jsonl"
if run jsonl-type 1 "$T/type.jsonl" -- "$ND" hash --jsonl; then
  expect jsonl-type "$T/err" "-:1: text field 'text' is an array, expected a string"
fi
head -c 3000 /dev/zero | tr '\0' 'a' | sed 's/^/{"text":"/; s/$/"}/' >"$T/long.jsonl"
if run jsonl-long 1 "$T/long.jsonl" -- "$ND" hash --jsonl --max-line-bytes 1K; then
  expect jsonl-long "$T/err" "-:1: line longer than the limit of 1024 bytes"
fi

# --- one output may be standard output
printf 'a b c d e f\na b c d e f\nx y z w v u\n' >"$T/stdout-in.txt"
if run dedup-stdout 0 /dev/null -- "$ND" dedup "$T/stdout-in.txt" -o - --dups "$T/stdout-dups.tsv" --quiet; then
  expect_same dedup-stdout "$T/out" "$(printf 'a b c d e f\nx y z w v u')"
  expect_same dedup-stdout-dups "$T/stdout-dups.tsv" "$(printf '2\t1\t1.0000')"
  [[ ! -e ./- ]] && ok || fail dedup-stdout "a file named '-' was written"
fi
if run dedup-two-stdout 1 /dev/null -- "$ND" dedup "$T/stdout-in.txt" -o - --dups - --quiet; then
  expect dedup-two-stdout "$T/err" "only one output can go to standard output ('-')"
fi

# --- --lang: en cuts every Han character (no dictionary), zh and auto segment
printf '中文文本的重复检测 hello world\n' >"$T/han.txt"
printf '中 文 文 本 的 重 复 检 测 hello world\n' >"$T/han-spaced.txt"
if run lang-en 0 "$T/han.txt" -- "$ND" hash --lang en; then
  cp "$T/out" "$T/lang-en"
  run lang-spaced 0 "$T/han-spaced.txt" -- "$ND" hash && expect_same lang-en "$T/lang-en" "$(cat "$T/out")"
fi
if run lang-zh 0 "$T/han.txt" -- "$ND" hash --lang zh; then
  cp "$T/out" "$T/lang-zh"
  run lang-auto 0 "$T/han.txt" -- "$ND" hash && expect_same lang-zh "$T/lang-zh" "$(cat "$T/out")"
  [[ "$(cat "$T/lang-zh")" != "$(cat "$T/lang-en")" ]] && ok || fail lang-zh "same fingerprint as en"
fi
if run lang-bad 2 "$T/han.txt" -- "$ND" dedup - -o "$T/k.txt" --lang fr; then
  expect lang-bad "$T/err" "--lang: fr not in {auto,zh,en}"
fi
if run lang-keywords 1 "$T/han.txt" -- "$ND" dedup - -o "$T/k.txt" --method simhash --mode keywords --lang en; then
  expect lang-keywords "$T/err" "the keywords mode segments Chinese with the dictionary: it needs language auto or zh"
fi

# --- bad input
printf 'ok line\nab\xffcd\n' >"$T/invalid.txt"
if run utf8-reject 1 "$T/invalid.txt" -- "$ND" hash --invalid-utf8 reject; then
  expect utf8-reject "$T/err" "neardup hash: -:2: invalid UTF-8 at byte offset 2"
fi
if run utf8-replace 0 "$T/invalid.txt" -- "$ND" hash; then
  [[ $(wc -l <"$T/out") -eq 2 ]] && ok || fail utf8-replace "expected 2 lines"
fi
if run missing-file 1 "$T/empty" -- "$ND" hash "$T/does-not-exist.txt"; then
  expect missing-file "$T/err" "$T/does-not-exist.txt: cannot open: No such file or directory"
fi
if run unknown-option 2 "$T/empty" -- "$ND" hash --frobnicate; then
  expect unknown-option "$T/err" "--frobnicate"
fi
if run bad-mode 2 "$T/empty" -- "$ND" hash --mode fuzzy; then
  expect bad-mode "$T/err" "fuzzy"
fi
if run bad-size 2 "$T/empty" -- "$ND" hash --max-doc-bytes 12Q; then
  expect bad-size "$T/err" "unknown size unit"
fi
if run no-command 2 "$T/empty" -- "$ND"; then ok; fi

# --- a 100 MB single line: streams in bounded memory; a limit gives a clear message
yes 'lorem ipsum dolor sit amet consectetur adipiscing elit' | head -c 100000000 | tr '\n' ' ' >"$T/huge.txt"
echo >>"$T/huge.txt"
if [[ -z "${NEARDUP_SANITIZED:-}" ]]; then
  # 150 MB of address space: a program that held the line in memory could not run.
  if run huge-line 0 "$T/huge.txt" -- bash -c "ulimit -v 150000; exec \"$ND\" hash"; then
    [[ $(wc -l <"$T/out") -eq 1 ]] && ok || fail huge-line "expected one fingerprint"
  fi
else
  if run huge-line 0 "$T/huge.txt" -- "$ND" hash; then ok; fi
fi
if run huge-limit 1 "$T/huge.txt" -- "$ND" hash --max-doc-bytes 10M; then
  expect huge-limit "$T/err" "neardup hash: -:1: document longer than the limit of 10485760 bytes"
fi
rm -f "$T/huge.txt"

# --- compare
printf 'The quick brown fox jumps over the lazy dog near the river bank today.\n' >"$T/a.txt"
printf 'The quick brown fox jumps over the lazy dog near the river bank today!\n' >"$T/b.txt"
printf 'Completely unrelated words about database indexes and query planning.\n' >"$T/c.txt"
if run compare-near 0 "$T/empty" -- "$ND" compare "$T/a.txt" "$T/b.txt"; then
  expect compare-near "$T/out" "distance: 0 of 64 bits: near-duplicates at k=3"
fi
if run compare-far 0 "$T/empty" -- "$ND" compare "$T/a.txt" "$T/c.txt" --json; then
  expect compare-far "$T/out" "\"near_duplicate\":false"
  expect compare-far "$T/out" "\"only_a\":[[\"brown fox jumps\",1]"
fi
if run compare-text 0 "$T/empty" -- "$ND" compare --text 'alpha beta gamma' --text 'alpha beta delta' --mode terms; then
  expect compare-text "$T/out" "top features only in A:"
  expect compare-text "$T/out" "gamma"
fi
if run compare-usage 2 "$T/empty" -- "$ND" compare "$T/a.txt"; then
  expect compare-usage "$T/err" "give two files"
fi
if run compare-missing 1 "$T/empty" -- "$ND" compare "$T/a.txt" "$T/nope.txt"; then
  expect compare-missing "$T/err" "nope.txt: cannot open"
fi

# --- dedup
{
  echo 'The quick brown fox jumps over the lazy dog near the river bank today'
  echo 'An entirely different sentence about databases and query planning here'
  echo 'The quick brown fox jumps over the lazy dog near the river bank today!'
  echo 'An entirely different sentence about databases and query planning here'
  echo 'Something else again, with its own words and nothing shared at all'
} >"$T/corpus.txt"
if run dedup-basic 0 "$T/empty" -- "$ND" dedup "$T/corpus.txt" -o "$T/kept.txt" --dups "$T/dups.tsv" \
    --clusters "$T/clusters.jsonl" --pairs "$T/pairs.tsv" --report "$T/report.json"; then
  expect_same dedup-basic "$T/kept.txt" "$(sed -n '1p;2p;5p' "$T/corpus.txt")"
  # The default method's score column is the estimated Jaccard similarity (1 for identical texts).
  expect_same dedup-basic "$T/dups.tsv" "$(printf '3\t1\t1.0000\n4\t2\t1.0000')"
  expect dedup-basic "$T/clusters.jsonl" '{"representative":"1","size":2,"members":["1","3"]}'
  expect dedup-basic "$T/pairs.tsv" "$(printf '2\t4\t1.0000')"
  expect dedup-basic "$T/report.json" '"documents":5,'
  expect dedup-basic "$T/err" "duplicates  2 (40.0%)"
fi
if run dedup-quiet 0 "$T/corpus.txt" -- "$ND" dedup - -o "$T/kept2.txt" --quiet --keep last; then
  expect_same dedup-quiet "$T/err" ""
  expect_same dedup-quiet "$T/kept2.txt" "$(sed -n '3p;4p;5p' "$T/corpus.txt")"
fi
printf '{"id":"a","text":"one two three four five"}\n{"id":"b","text": oops}\n' >"$T/bad-dedup.jsonl"
if run dedup-bad 1 "$T/empty" -- "$ND" dedup "$T/bad-dedup.jsonl" -o "$T/never.jsonl"; then
  expect dedup-bad "$T/err" "neardup dedup: $T/bad-dedup.jsonl:2: malformed JSON"
  [[ ! -e "$T/never.jsonl" ]] && ok || fail dedup-bad "an output was left behind"
  [[ -z "$(ls "$T" | grep -F '.tmp-')" ]] && ok || fail dedup-bad "a temporary file was left behind"
fi
if run dedup-skip 0 "$T/empty" -- "$ND" dedup "$T/bad-dedup.jsonl" -o "$T/skip.jsonl" --on-error skip; then
  expect dedup-skip "$T/err" "skipped     1 bad documents, first: $T/bad-dedup.jsonl:2: malformed JSON"
  [[ $(wc -l <"$T/skip.jsonl") -eq 1 ]] && ok || fail dedup-skip "expected one kept line"
fi
if run dedup-missing 1 "$T/empty" -- "$ND" dedup "$T/nope" -o "$T/x"; then
  expect dedup-missing "$T/err" "$T/nope: cannot open"
fi
if run dedup-bad-k 2 "$T/empty" -- "$ND" dedup "$T/corpus.txt" -k 12; then ok; fi
# SIGINT while the job waits on a pipe: exit 130, no output, no temporary file.
mkfifo "$T/fifo"
( printf 'some words to start with\n'; sleep 4 ) >"$T/fifo" &
writer=$!
"$ND" dedup "$T/fifo" -o "$T/interrupted.txt" --report "$T/interrupted.json" 2>"$T/err" >"$T/out" &
job=$!
sleep 1
kill -INT "$job"
wait "$job"
code=$?
wait "$writer" 2>/dev/null
if [[ $code -eq 130 ]]; then ok; else fail dedup-sigint "exit $code, expected 130"; fi
expect dedup-sigint "$T/err" "interrupted by SIGINT; no output was written"
[[ ! -e "$T/interrupted.txt" && ! -e "$T/interrupted.json" && -z "$(ls "$T" | grep -F '.tmp-')" ]] && ok ||
  fail dedup-sigint "output left behind"
# --- dedup: the accurate method (default) against the simhash method
{
  echo 'Near-duplicate detection finds documents that are almost the same, such as copies of a page with a changed date or a typo.'
  echo 'Near-duplicate detection finds documents that are almost the same, such as copies of a page with a changed date or a tpyo.'
  echo '這個國家的學生說時間來了，我們對此會有很多看法'
  echo '这个国家的学生说时间来了，我们对此会有很多看法'
  echo 'Completely unrelated words about database indexes and query planning.'
} >"$T/dedup.txt"
if run dedup-accurate 0 "$T/empty" -- "$ND" dedup -q "$T/dedup.txt" -o "$T/kept.txt" --pairs "$T/pairs.tsv" --dups "$T/dups.tsv" --report "$T/report.json"; then
  expect dedup-accurate "$T/pairs.tsv" "$(printf '3\t4\t1.0000')"
  grep -qE '^1'$'\t''2'$'\t''0\.9[0-9]{3}$' "$T/pairs.tsv" && ok || fail dedup-accurate "pairs: 1 2 with a Jaccard estimate"
  expect_same dedup-accurate-kept "$T/kept.txt" "$(sed -n '1p;3p;5p' "$T/dedup.txt")"
  expect dedup-accurate-report "$T/report.json" 'method=accurate mode=shingles:char:5 weighting=distinct lang=auto fold=t2s threshold=0.8 sketch=1024x1 bands=20x6'
fi
if run dedup-simhash 0 "$T/empty" -- "$ND" dedup -q --method simhash -k 7 "$T/dedup.txt" --pairs "$T/pairs.tsv"; then
  grep -qE '^1'$'\t''2'$'\t''[0-7]$' "$T/pairs.tsv" && ok || fail dedup-simhash "pairs: 1 2 with a distance"
fi
if run dedup-threshold 2 "$T/empty" -- "$ND" dedup "$T/dedup.txt" --threshold 1.5; then
  expect dedup-threshold "$T/err" "threshold"
fi
if run dedup-no-table 1 "$T/empty" -- "$ND" dedup "$T/dedup.txt" --fold-table "$T/nope.ocd2"; then
  expect dedup-no-table "$T/err" "nope.ocd2: character folding table not found"
  expect dedup-no-table "$T/err" "libopencc-data"
fi
if run dedup-no-fold 0 "$T/empty" -- "$ND" dedup -q "$T/dedup.txt" --fold none --fold-table "$T/nope.ocd2" --pairs "$T/pairs.tsv"; then
  [[ $(grep -c '^3' "$T/pairs.tsv") -eq 0 ]] && ok || fail dedup-no-fold "Traditional and Simplified paired without folding"
fi

# --- help and version
for command in hash compare dedup; do
  if run "help-$command" 0 "$T/empty" -- "$ND" "$command" --help; then
    expect "help-$command" "$T/out" "Example"
  fi
done
if run version 0 "$T/empty" -- "$ND" version; then expect version "$T/out" "simd:"; fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
