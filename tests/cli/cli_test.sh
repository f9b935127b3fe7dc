#!/usr/bin/env bash
# CLI behaviour of neardup: expected stdout, stderr and exit code of each case.
# Usage: cli_test.sh PATH/TO/neardup
set -u
ND=$1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck source=testlib.sh
source "$(dirname "$0")/testlib.sh"

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
# expect NAME FILE PATTERN: FILE contains the fixed string PATTERN.
expect() {
  if grep -qF -- "$3" "$2"; then ok; else fail "$1" "$(basename "$2") lacks '$3'"; fi
}
# expect_same NAME FILE CONTENT: FILE is exactly CONTENT.
expect_same() {
  if [[ "$(cat "$2")" == "$3" ]]; then ok; else fail "$1" "$(basename "$2") is not '$3'"; fi
}
# expect_output NAME STDOUT STDERR: standard output and standard error are exactly these (the last
# newline aside).
expect_output() {
  expect_same "$1 stdout" "$T/out" "$2"
  expect_same "$1 stderr" "$T/err" "$3"
}
# The usage-error lines CLI11 prints after its message.
usage() { printf '%s\nRun with --help for more information.' "$1"; }
# hash of a document with a single feature of weight 1: the fingerprint is the feature's XXH3_64bits
# (doc/fingerprint.md section 5), here computed by libxxhash once: x, ok, "ok line", "ab cd".
XXH3_X=eaf06c6480b2cd11
XXH3_OK=38af4cfed25a8222
XXH3_OK_LINE=a9fd12ec92832843
XXH3_AB_CD=c6324c24fd9ec01b
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
  expect_output hash-terms "$(printf '1\t%s\n2\t%s\n3\t0000000000000000' "$(vector terms 2)" "$(vector terms 3)")" ""
fi
if run hash-char 0 "$T/plain.txt" -- "$ND" hash --shingle-unit char -n 5; then
  expect_output hash-char "$(printf '1\t%s\n2\t%s\n3\t0000000000000000' "$(vector shingles:char:5 2)" \
    "$(vector shingles:char:5 3)")" ""
fi
if run hash-files 0 "$T/empty" -- "$ND" hash "$T/plain.txt" "$T/plain.txt"; then
  # Several inputs: lines are named path:line, as line numbers repeat across files.
  expect_same hash-files <(cut -f1 "$T/out") "$(printf '%s:%d\n' "$T/plain.txt" 1 "$T/plain.txt" 2 "$T/plain.txt" 3 \
    "$T/plain.txt" 1 "$T/plain.txt" 2 "$T/plain.txt" 3)"
fi
gzip -c "$T/plain.txt" >"$T/plain.txt.gz"
if run hash-gzip 0 "$T/empty" -- "$ND" hash "$T/plain.txt.gz"; then
  expect_output hash-gzip "$(printf '1\t%s\n2\t%s\n3\t0000000000000000' "$(vector shingles:word:3 2)" \
    "$(vector shingles:word:3 3)")" ""
fi
if run hash-json 0 "$T/plain.txt" -- "$ND" hash --json; then
  expect_output hash-json "$(printf '{"id":"1","simhash":"%s"}\n{"id":"2","simhash":"%s"}\n%s' \
    "$(vector shingles:word:3 2)" "$(vector shingles:word:3 3)" \
    '{"id":"3","simhash":"0000000000000000","empty":true}')" ""
fi
# Nine words each; "the" twice, then the words of weight 1 by name.
if run hash-explain 0 "$T/plain.txt" -- "$ND" hash --json --explain --mode terms --top 2; then
  expect_output hash-explain "$(printf '{"id":"1","simhash":"%s","features":9,"top":[["the",2],["brown",1]]}\n' "$(vector terms 2)"
    printf '{"id":"2","simhash":"%s","features":9,"top":[["the",2],["brown",1]]}\n' "$(vector terms 3)"
    printf '{"id":"3","simhash":"0000000000000000","empty":true,"features":0,"top":[]}')" ""
fi

# --- hash, JSONL
printf '{"id":"a","text":"The quick brown fox jumps over the lazy dog."}\n{"meta":{"id":7},"text":"x","body":{"t":"nested"}}\n' >"$T/docs.jsonl"
if run jsonl 0 "$T/docs.jsonl" -- "$ND" hash --jsonl; then
  # The second line has no id field: it is named by its line number.
  expect_output jsonl "$(printf 'a\t%s\n2\t%s' "$(vector shingles:word:3 2)" "$XXH3_X")" ""
fi
if run jsonl-nested 1 "$T/docs.jsonl" -- "$ND" hash --jsonl --id-field meta.id --text-field body.t; then
  expect_output jsonl-nested "" "neardup hash: -:1: no text field 'body.t'"
fi
printf '{"text":"ok"}\n{"text": broken\n' >"$T/bad.jsonl"
if run jsonl-malformed 1 "$T/empty" -- "$ND" hash --jsonl "$T/bad.jsonl"; then
  # The good first line is written before the error.
  expect_output jsonl-malformed "$(printf '1\t%s' "$XXH3_OK")" "neardup hash: $T/bad.jsonl:2: malformed JSON: The JSON \
document has an improper structure: missing or superfluous commas, braces, missing keys, etc."
fi
printf '{"text":["not","a","string"]}\n' >"$T/type.jsonl"
if run jsonl-type 1 "$T/type.jsonl" -- "$ND" hash --jsonl; then
  expect_output jsonl-type "" "neardup hash: -:1: text field 'text' is an array, expected a string"
fi
head -c 3000 /dev/zero | tr '\0' 'a' | sed 's/^/{"text":"/; s/$/"}/' >"$T/long.jsonl"
if run jsonl-long 1 "$T/long.jsonl" -- "$ND" hash --jsonl --max-line-bytes 1K; then
  expect_output jsonl-long "" "neardup hash: -:1: line longer than the limit of 1024 bytes"
fi
# .jsonl and .ndjson names (any case) are JSON Lines without --jsonl, as for dedup; .json is not.
cp "$T/docs.jsonl" "$T/docs-upper.JSONL"
if run jsonl-by-name 0 "$T/empty" -- "$ND" hash "$T/docs-upper.JSONL"; then
  expect_output jsonl-by-name "$(printf 'a\t%s\n2\t%s' "$(vector shingles:word:3 2)" "$XXH3_X")" ""
fi
printf '{"id":"n","text":"x"}\n' >"$T/one.ndjson"
if run ndjson-by-name 0 "$T/empty" -- "$ND" hash --json "$T/one.ndjson"; then
  expect_output ndjson-by-name "{\"id\":\"n\",\"simhash\":\"$XXH3_X\"}" ""
fi
# An --id-field that no document has is an error, as in dedup (not line numbers).
if run hash-no-id-field 1 "$T/empty" -- "$ND" hash --id-field nope "$T/one.ndjson"; then
  expect_output hash-no-id-field "$(printf '1\t%s' "$XXH3_X")" "neardup hash: no document has the id field 'nope'"
fi
# Standard input once; folders are dedup's only; --top is unsigned; --user-dict takes one file.
if run hash-stdin-twice 2 "$T/empty" -- "$ND" hash - -; then
  expect_output hash-stdin-twice "" "neardup hash: usage: standard input ('-') given twice"
fi
mkdir -p "$T/folder"
if run hash-folder 1 "$T/empty" -- "$ND" hash "$T/folder"; then
  expect_output hash-folder "" "neardup hash: $T/folder: is a folder, not a file (only dedup reads folders: give the \
files in it)"
fi
if run hash-top-negative 2 "$T/empty" -- "$ND" hash --json --explain --top -1 "$T/one.ndjson"; then
  expect_output hash-top-negative "" "$(usage "--top: '-1' is not a whole number of 0 or more")"
fi
printf 'ok\n' >"$T/user-dict.txt"
if run hash-user-dict-then-input 0 /dev/null -- "$ND" hash --user-dict "$T/user-dict.txt" "$T/one.ndjson"; then
  expect_output hash-user-dict-then-input "$(printf 'n\t%s' "$XXH3_X")" ""
fi

# --- one output may be standard output
printf 'a b c d e f\na b c d e f\nx y z w v u\n' >"$T/stdout-in.txt"
if run dedup-stdout 0 /dev/null -- "$ND" dedup "$T/stdout-in.txt" -o - --dups "$T/stdout-dups.tsv" --quiet; then
  expect_same dedup-stdout "$T/out" "$(printf 'a b c d e f\nx y z w v u')"
  expect_same dedup-stdout-dups "$T/stdout-dups.tsv" "$(printf '2\t1\t1.0000')"
  [[ ! -e ./- ]] && ok || fail dedup-stdout "a file named '-' was written"
fi
if run dedup-two-stdout 1 /dev/null -- "$ND" dedup "$T/stdout-in.txt" -o - --dups - --quiet; then
  expect_output dedup-two-stdout "" "neardup dedup: only one output can go to standard output ('-')"
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
  expect_output lang-bad "" "$(usage "--lang: fr not in {auto,zh,en}")"
fi
if run lang-keywords 1 "$T/han.txt" -- "$ND" dedup - -o "$T/k.txt" --method simhash --mode keywords --lang en; then
  expect_output lang-keywords "" "neardup dedup: the keywords mode segments Chinese with the dictionary: it needs \
language auto or zh, not en"
fi

# --- bad input
printf 'ok line\nab\xffcd\n' >"$T/invalid.txt"
if run utf8-reject 1 "$T/invalid.txt" -- "$ND" hash --invalid-utf8 reject; then
  # Two words: one feature, "ok line"; the first line is written before the error.
  expect_output utf8-reject "$(printf '1\t%s' "$XXH3_OK_LINE")" "neardup hash: -:2: invalid UTF-8 at byte offset 2"
fi
if run utf8-replace 0 "$T/invalid.txt" -- "$ND" hash; then
  # U+FFFD separates words: "ab cd" is the second line's one feature.
  expect_output utf8-replace "$(printf '1\t%s\n2\t%s' "$XXH3_OK_LINE" "$XXH3_AB_CD")" ""
fi
if run missing-file 1 "$T/empty" -- "$ND" hash "$T/does-not-exist.txt"; then
  expect_output missing-file "" "neardup hash: $T/does-not-exist.txt: cannot open: No such file or directory"
fi
if run unknown-option 2 "$T/empty" -- "$ND" hash --frobnicate; then
  expect_output unknown-option "" "$(usage "The following argument was not expected: --frobnicate")"
fi
if run bad-mode 2 "$T/empty" -- "$ND" hash --mode fuzzy; then
  expect_output bad-mode "" "$(usage "--mode: fuzzy not in {shingles,terms,keywords}")"
fi
if run bad-size 2 "$T/empty" -- "$ND" hash --max-doc-bytes 12Q; then
  expect_output bad-size "" "$(usage "--max-doc-bytes: unknown size unit in 12Q (use K, M, G or T)")"
fi
if run no-command 2 "$T/empty" -- "$ND"; then
  expect_output no-command "" "$(usage "A subcommand is required")"
fi

# --- a 100 MB single line: streams in bounded memory; a limit gives a clear message
yes 'lorem ipsum dolor sit amet consectetur adipiscing elit' | head -c 100000000 | tr '\n' ' ' >"$T/huge.txt"
echo >>"$T/huge.txt"
if [[ -z "${NEARDUP_SANITIZED:-}" ]]; then
  # 150 MB of address space: a program that held the line in memory could not run.
  run huge-line 0 "$T/huge.txt" -- bash -c "ulimit -v 150000; exec \"$ND\" hash"
else
  run huge-line 0 "$T/huge.txt" -- "$ND" hash
fi
# One fingerprint, the same as the line's in pieces gives (the builder's streaming is checked by the
# unit tests); here: one line, named 1, nothing on standard error.
grep -qxE '1'$'\t''[0-9a-f]{16}' "$T/out" && [[ $(wc -l <"$T/out") -eq 1 && ! -s "$T/err" ]] && ok ||
  fail huge-line "expected one fingerprint and no message"
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
# One text per --text: the words after it are not a second text.
if run compare-text-then-word 2 "$T/empty" -- "$ND" compare --text 'alpha beta gamma' 'alpha beta delta'; then
  expect compare-text-then-word "$T/err" "give two files, or --text twice"
fi
# Three features of weight 1 each: every bit is the majority of the three XXH3 hashes (libxxhash:
# alpha be6903b5f625ab5a, beta 28faff7f97dff641, gamma 0070f7bf6f9d29f6, delta 2ad8eef499e131d0).
if run compare-text 0 "$T/empty" -- "$ND" compare --text 'alpha beta gamma' --text 'alpha beta delta' --mode terms; then
  expect_output compare-text "A: 2878f7bff79dab52  (3 features)
B: 2af8eff597e5b350  (3 features)
distance: 16 of 64 bits: not near-duplicates at k=3
differing bits: 1 11 12 19 20 21 22 29 30 33 35 38 43 44 55 57
distinct features in both: 2
top features of A:
    1  alpha
    1  beta
    1  gamma
top features of B:
    1  alpha
    1  beta
    1  delta
top features only in A:
    1  gamma
top features only in B:
    1  delta" ""
fi
# Texts given as files: the error says where texts go.
if run compare-texts-as-files 1 "$T/empty" -- "$ND" compare 'the quick brown fox' 'the lazy dog'; then
  expect_output compare-texts-as-files "" "neardup compare: the quick brown fox: cannot open: No such file or directory (a text on the command line goes after --text)"
fi
if run compare-usage 2 "$T/empty" -- "$ND" compare "$T/a.txt"; then
  expect_output compare-usage "" "neardup compare: give two files, or --text twice (see --help)"
fi
if run compare-missing 1 "$T/empty" -- "$ND" compare "$T/a.txt" "$T/nope.txt"; then
  expect_output compare-missing "" "neardup compare: $T/nope.txt: cannot open: No such file or directory"
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
  # Lines 1 and 3 differ by a separator only: the same features.
  expect_same dedup-basic "$T/clusters.jsonl" '{"representative":"1","size":2,"members":["1","3"]}
{"representative":"2","size":2,"members":["2","4"]}'
  expect_same dedup-basic "$T/pairs.tsv" "$(printf '1\t3\t1.0000\n2\t4\t1.0000')"
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
  expect dedup-skip "$T/err" "skipped     1 bad document, first: $T/bad-dedup.jsonl:2: malformed JSON"
  [[ $(wc -l <"$T/skip.jsonl") -eq 1 ]] && ok || fail dedup-skip "expected one kept line"
fi
if run dedup-missing 1 "$T/empty" -- "$ND" dedup "$T/nope" -o "$T/x"; then
  expect_output dedup-missing "" "neardup dedup: $T/nope: cannot open: No such file or directory"
fi
if run dedup-bad-k 2 "$T/empty" -- "$ND" dedup "$T/corpus.txt" -k 12; then
  expect_output dedup-bad-k "" "$(usage "-k: Value 12 not in range 0 to 7")"
fi
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
# --all-pairs verifies every candidate, as --pairs does, without the file: the report counts them all.
if run dedup-all-pairs 0 "$T/empty" -- "$ND" dedup -q "$T/dedup.txt" -o "$T/kept-all.txt" --all-pairs --report "$T/report-all.json"; then
  expect dedup-all-pairs "$T/report-all.json" '"pairs_complete":true'
  expect dedup-all-pairs-count "$T/report-all.json" "\"pairs\":$(wc -l <"$T/pairs.tsv"),"
  expect_same dedup-all-pairs-kept "$T/kept-all.txt" "$(cat "$T/kept.txt")"
fi
if run dedup-linear 0 "$T/empty" -- "$ND" dedup -q "$T/dedup.txt" -o /dev/null --report "$T/report-linear.json"; then
  expect dedup-linear "$T/report-linear.json" '"pairs_complete":false'
fi
# --- dedup --save-index then --against with the default method: an index of sketches and band keys
sed -n '1p;3p;5p' "$T/dedup.txt" >"$T/day1.txt"
{ sed -n 2p "$T/dedup.txt"; echo 'A brand new line about gardening, tomatoes and the summer rain.'; } >"$T/day2.txt"
if run save-accurate 0 "$T/empty" -- "$ND" dedup -q "$T/day1.txt" --save-index "$T/day1.idx"; then
  [[ -s "$T/day1.idx" && -s "$T/day1.idx.ids" ]] && ok || fail save-accurate "no index and ids"
fi
if run info-accurate 0 "$T/empty" -- "$ND" index info "$T/day1.idx"; then
  expect_output info-accurate "format: version 2
method: accurate
settings: method=accurate mode=shingles:char:5 weighting=distinct lang=auto fold=t2s threshold=0.8 sketch=1024x1 bands=20x6 fingerprint=1 sketch_version=1
documents: 3
signature: 132-byte sketch, 20 band keys
file: $(stat -c %s "$T/day1.idx") bytes" ""
fi
# --against takes one index: the input after it stays an input.
if run against-then-input 0 "$T/empty" -- "$ND" dedup -q --against "$T/day1.idx" "$T/day2.txt" -o /dev/null --dups "$T/dups2.tsv"; then
  grep -qE '^1'$'\t''1'$'\t''0\.9[0-9]{3}$' "$T/dups2.tsv" && ok || fail against-then-input "dups: 1 of the index's 1 with a Jaccard"
fi
if run against-accurate 0 "$T/empty" -- "$ND" dedup -q "$T/day2.txt" --against "$T/day1.idx" -o "$T/new.txt" --dups "$T/dups2.tsv" --report "$T/report2.json"; then
  grep -qE '^1'$'\t''1'$'\t''0\.9[0-9]{3}$' "$T/dups2.tsv" && ok || fail against-accurate "dups: 1 of the index's 1 with a Jaccard"
  expect_same against-accurate-kept "$T/new.txt" "$(sed -n 2p "$T/day2.txt")"
  expect against-accurate-report "$T/report2.json" '"duplicates_of_index":1'
fi
if run against-other-settings 1 "$T/empty" -- "$ND" dedup -q "$T/day2.txt" --against "$T/day1.idx" --threshold 0.7; then
  expect_output against-other-settings "" "neardup dedup: $T/day1.idx was built with other settings: bands 20x4 here, 20x6 in the index; threshold 0.7 here, 0.8 in the index (--against-settings runs with the index's settings)"
fi
if run against-settings 0 "$T/empty" -- "$ND" dedup -q "$T/day2.txt" --against "$T/day1.idx" --against-settings --dups "$T/dups3.tsv"; then
  expect_same against-settings "$T/dups3.tsv" "$(cat "$T/dups2.tsv")"
fi
# The summary names the threshold the run used: the index's (0.7), not the option's default (0.8).
if run save-accurate-07 0 "$T/empty" -- "$ND" dedup -q "$T/day1.txt" --threshold 0.7 --save-index "$T/day1-07.idx"; then
  if run against-settings-summary 0 "$T/empty" -- "$ND" dedup "$T/day2.txt" --against "$T/day1-07.idx" --against-settings -o /dev/null; then
    expect against-settings-summary "$T/err" "pairs with estimated Jaccard >= 0.7 ("
  fi
fi
if run against-settings-and-threshold 2 "$T/empty" -- "$ND" dedup -q "$T/day2.txt" --against "$T/day1.idx" --against-settings --threshold 0.7; then
  expect_output against-settings-and-threshold "" "neardup dedup: usage: --against-settings takes the method and its settings from the index: leave out --threshold"
fi
printf 'q\t0000000000000000\n' >"$T/q.tsv"
if run query-accurate 1 "$T/empty" -- "$ND" index query "$T/day1.idx" "$T/q.tsv"; then
  expect_output query-accurate "" "neardup index query: $T/day1.idx: an index of the accurate method (sketches, not fingerprints): query it with texts, \`neardup dedup NEW --against $T/day1.idx\`"
fi
if run dedup-simhash 0 "$T/empty" -- "$ND" dedup -q --method simhash -k 7 "$T/dedup.txt" --pairs "$T/pairs.tsv"; then
  grep -qE '^1'$'\t''2'$'\t''[0-7]$' "$T/pairs.tsv" && ok || fail dedup-simhash "pairs: 1 2 with a distance"
fi
if run dedup-threshold 2 "$T/empty" -- "$ND" dedup "$T/dedup.txt" --threshold 1.5; then
  expect_output dedup-threshold "" "$(usage "--threshold: Value 1.5 not in range 0.010000 to 1.000000")"
fi
# Bad values of the options of the default method at scale: usage errors (2) naming the option, or an
# error naming the folder (1); nothing written.
for bad in "--memory abc|--memory: size must start with digits: abc" \
  "--memory -5|--memory: size must start with digits: -5" \
  "--boundary-sigmas -1|--boundary-sigmas: Value -1 not in range 0.000000 to 10.000000" \
  "--boundary-sigmas nan|--boundary-sigmas: Value nan is not a number" \
  "--boundary-sigmas 1e400|--boundary-sigmas: Value 1e400 not in range 0.000000 to 10.000000"; do
  read -r -a args <<<"${bad%%|*}"
  rm -f "$T/kept-bad.txt"
  if run "dedup ${bad%%|*}" 2 "$T/empty" -- "$ND" dedup "$T/dedup.txt" -o "$T/kept-bad.txt" "${args[@]}"; then
    expect_output "dedup ${bad%%|*}" "" "$(usage "${bad#*|}")"
    [[ ! -e $T/kept-bad.txt ]] && ok || fail "dedup ${bad%%|*}" "wrote the output"
  fi
done
for dir in "$T/nope" /dev/null; do
  why="No such file or directory"
  [[ $dir == /dev/null ]] && why="Not a directory"
  if run "dedup --tmp-dir $dir" 1 "$T/empty" -- "$ND" dedup "$T/dedup.txt" -o "$T/kept-bad.txt" --tmp-dir "$dir"; then
    expect_output "dedup --tmp-dir $dir" "" "neardup dedup: cannot create a temporary folder in $dir: $why (--tmp-dir chooses where)"
    [[ ! -e $T/kept-bad.txt ]] && ok || fail "dedup --tmp-dir $dir" "wrote the output"
  fi
done
if run dedup-no-table 1 "$T/empty" -- "$ND" dedup "$T/dedup.txt" --fold-table "$T/nope.ocd2"; then
  expect_output dedup-no-table "" "neardup dedup: $T/nope.ocd2: character folding table not found \
(Traditional-to-Simplified folding reads OpenCC's TSCharacters.ocd2: install Debian package libopencc-data, \
name another table, or turn folding off)"
fi
if run dedup-no-fold 0 "$T/empty" -- "$ND" dedup -q "$T/dedup.txt" --fold none --fold-table "$T/nope.ocd2" --pairs "$T/pairs.tsv"; then
  [[ $(grep -c '^3' "$T/pairs.tsv") -eq 0 ]] && ok || fail dedup-no-fold "Traditional and Simplified paired without folding"
fi

# --- help and version
# The examples of each --help, to the end of the text; hash's first one is run: "the quick brown fox"
# has the two features "the quick brown" (XXH3 4d8c409bb88cc391) and "quick brown fox"
# (5a97d37b81ad982f), so its fingerprint is their AND, for both lines.
help_examples() { sed -n '/^Examples*:$/,$p' "$T/out"; }
if run help-hash 0 "$T/empty" -- "$ND" hash --help; then
  expect_same help-hash "$(help_examples >"$T/examples"; echo "$T/examples")" "Example:
  printf 'the quick brown fox\nthe quick brown fox!\n' | neardup hash
  neardup hash --jsonl --id-field url --json --explain pages.jsonl"
  if run help-hash-example 0 "$T/empty" -- bash -c "$(sed -n 2p "$T/examples" | sed "s|neardup|\"$ND\"|")"; then
    expect_output help-hash-example "$(printf '1\t4884401b808c8001\n2\t4884401b808c8001')" ""
  fi
fi
if run help-compare 0 "$T/empty" -- "$ND" compare --help; then
  expect_same help-compare "$(help_examples >"$T/examples"; echo "$T/examples")" "Example:
  neardup compare a.txt b.txt
  neardup compare --text 'the quick brown fox' --text 'the quick brown fox jumps' --json"
fi
if run help-dedup 0 "$T/empty" -- "$ND" dedup --help; then
  expect_same help-dedup "$(help_examples >"$T/examples"; echo "$T/examples")" "Examples:
  neardup dedup crawl/ -o kept.jsonl --dups dups.tsv --report report.json
  neardup dedup posts.txt.zst -o kept.txt --keep longest --threshold 0.7 --on-error skip
  neardup dedup posts.txt --method simhash -k 3 -o kept.txt
  neardup dedup today.jsonl --against yesterday.idx --save-index today.idx -o new.jsonl
  neardup dedup crawl/ --store redis-cluster://10.0.0.5:7000/crawl1 --shard 0/4 --shard-output part0
  neardup dedup crawl/ --merge part0,part1,part2,part3 -o kept.jsonl   (doc/dedup.md)"
fi
# The project's version, and the level in use: NEARDUP_SIMD's when it is set (cli_test_portable).
if run version 0 "$T/empty" -- "$ND" version; then
  version=$(sed -n 's/^project(neardup VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
  [[ $(sed -n 1p "$T/out") == "neardup $version" && $(wc -l <"$T/out") -eq 2 ]] && ok || fail version "first line"
  sed -n 2p "$T/out" | grep -qxE "simd: ${NEARDUP_SIMD:-(portable|avx2|avx512)} \(detected: (portable|avx2|avx512)\)" &&
    ok || fail version "simd line"
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
