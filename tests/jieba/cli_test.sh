#!/usr/bin/env bash
# CLI behaviour of segment, keywords, idf build and hash --mode keywords: output, errors, exit codes.
# Usage: cli_test.sh NEARDUP
set -u
neardup=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

expect() {  # expect NAME EXPECTED_EXIT EXPECTED_STDOUT_SUBSTRING EXPECTED_STDERR_SUBSTRING -- COMMAND...
  local name=$1 code=$2 out=$3 err=$4
  shift 5
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [[ $got -ne $code ]] || { [[ -n $out ]] && ! grep -qF -- "$out" "$tmp/out"; } ||
     { [[ -n $err ]] && ! grep -qF -- "$err" "$tmp/err"; }; then
    echo "FAIL $name: exit $got (want $code)"; echo "  stdout: $(head -c 300 "$tmp/out")"; echo "  stderr: $(head -c 300 "$tmp/err")"
    failures=$((failures + 1))
  fi
}

printf '我来到北京清华大学\n' >"$tmp/a.txt"
expect segment-plain 0 '我 / 来到 / 北京 / 清华大学' '' -- "$neardup" segment "$tmp/a.txt"
expect segment-json 0 '["我","来到","北京","清华大学"]' '' -- "$neardup" segment --json "$tmp/a.txt"
expect segment-all 0 '"清华","清华大学","华大","大学"' '' -- "$neardup" segment --json --mode all "$tmp/a.txt"
printf '{"id":"x","text":"清华大学，清华大学是一所大学"}\n' >"$tmp/a.jsonl"
expect keywords-json 0 '[["清华大学",' '' -- "$neardup" keywords --jsonl --json --top 2 "$tmp/a.jsonl"
expect keywords-tsv 0 'x	清华大学:' '' -- "$neardup" keywords --jsonl --top 2 "$tmp/a.jsonl"
printf '清华\xff大学\n' >"$tmp/bad.txt"
expect reject-utf8 1 '' 'invalid UTF-8' -- "$neardup" segment --invalid-utf8 reject "$tmp/bad.txt"
expect replace-utf8 0 '"清华","�","大学"' '' -- "$neardup" segment --json "$tmp/bad.txt"
printf '清华大学 3\n大学\n' >"$tmp/dict.txt"
expect bad-dict 1 '' 'dict.txt:2: invalid dictionary entry' -- "$neardup" segment --dict "$tmp/dict.txt" "$tmp/a.txt"
expect missing-dict 1 '' 'nothere.txt' -- "$neardup" segment --dict "$tmp/nothere.txt" "$tmp/a.txt"
expect missing-idf 1 '' 'nothere_idf.txt' -- "$neardup" keywords --idf "$tmp/nothere_idf.txt" "$tmp/a.txt"
printf '清华大学 1\n大学 x\n' >"$tmp/idf.txt"
expect bad-idf 1 '' 'idf.txt:2:' -- "$neardup" keywords --idf "$tmp/idf.txt" "$tmp/a.txt"
printf '清华大学很好\n北京大学很好\n清华大学\n' >"$tmp/corpus.txt"
expect idf-build 0 '' '3 documents' -- "$neardup" idf build "$tmp/corpus.txt" -o "$tmp/built.txt" --threads 2
expect idf-header 0 '# neardup idf build: documents=3' '' -- head -1 "$tmp/built.txt"
expect idf-value 0 '北京大学 1.0986122886681098' '' -- grep '^北京大学 ' "$tmp/built.txt"
expect idf-use 0 '清华大学:0.1351550360360548' '' -- "$neardup" keywords --idf "$tmp/built.txt" "$tmp/a.txt"
expect hash-keywords 0 '1	' '' -- "$neardup" hash --mode keywords --keywords 5 "$tmp/a.txt"
expect hash-keywords-explain 0 '"top":[["清华大学"' '' -- "$neardup" hash --mode keywords --json --explain "$tmp/a.txt"

# --user-dict takes one file (repeat it for several): the input after it is read, not standard input
# (which would give nothing here). The words are Python jieba's with the same user dictionary.
printf '杭研\n' >"$tmp/mywords.txt"
printf '他来到了网易杭研大厦\n' >"$tmp/in.txt"
expect_exact() {  # expect_exact NAME EXPECTED_EXIT EXPECTED_STDOUT EXPECTED_STDERR -- COMMAND...: whole outputs
  local name=$1 code=$2 out=$3 err=$4
  shift 5
  "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local got=$?
  if [[ $got -ne $code || "$(cat "$tmp/out")" != "$out" || "$(cat "$tmp/err")" != "$err" ]]; then
    echo "FAIL $name: exit $got (want $code)"; echo "  stdout: $(head -c 300 "$tmp/out")"; echo "  stderr: $(head -c 300 "$tmp/err")"
    failures=$((failures + 1))
  fi
}
expect_exact user-dict-then-input 0 '他 / 来到 / 了 / 网易 / 杭研 / 大厦' '' -- "$neardup" segment --user-dict "$tmp/mywords.txt" "$tmp/in.txt"
expect_exact user-dict-twice 0 '他 / 来到 / 了 / 网易 / 杭研 / 大厦' '' -- \
  "$neardup" segment --user-dict "$tmp/mywords.txt" --user-dict "$tmp/mywords.txt" "$tmp/in.txt"
expect keywords-user-dict-then-input 0 '1	杭研:' '' -- "$neardup" keywords --top 1 --user-dict "$tmp/mywords.txt" "$tmp/in.txt"
expect idf-user-dict-then-input 0 '' '1 documents, 6 words' -- \
  "$neardup" idf build --user-dict "$tmp/mywords.txt" "$tmp/in.txt" -o "$tmp/ud_idf.txt"
expect idf-user-dict-word 0 '杭研 0' '' -- cat "$tmp/ud_idf.txt"

# Words that are white space to Python's str.strip() (U+001C..U+001F, U+0085, U+2028, U+2029, U+3000)
# are left out of a built table, which keywords then reads (the weights are Python jieba's with the
# table less its header).
printf '中文文本\n' >"$tmp/corpus_zh.txt"
printf '甲乙\x1f丙丁\n中文\x1c文本\n中文\xc2\x85文本\xe2\x80\xa8中文\xe2\x80\xa9\n' >"$tmp/space_words.txt"
expect idf-space-words 0 '' '3 documents, 4 words' -- "$neardup" idf build "$tmp/space_words.txt" -o "$tmp/space_idf.txt"
expect_exact idf-space-words-load 0 '1	中文:0.2027325540540822	文本:0.2027325540540822' '' -- \
  "$neardup" keywords --idf "$tmp/space_idf.txt" "$tmp/corpus_zh.txt"
# The loader names lines as grep -n counts them, whatever separators Python's splitlines() cuts at.
printf 'a 1\x1cb 2\nc x\n' >"$tmp/sep_idf.txt"
expect_exact idf-line-numbers 1 '' "neardup keywords: $tmp/sep_idf.txt:2: expected 'word idf', got 'c x'" -- \
  "$neardup" keywords --idf "$tmp/sep_idf.txt" "$tmp/a.txt"
# An empty or blank table is an error, and so is building one.
: >"$tmp/empty_idf.txt"
expect_exact idf-empty 1 '' "neardup keywords: $tmp/empty_idf.txt: no entries (an IDF table has 'word idf' lines; every keyword's weight would be 0)" -- \
  "$neardup" keywords --idf "$tmp/empty_idf.txt" "$tmp/a.txt"
printf '\n \n# comment\n' >"$tmp/blank_idf.txt"
expect idf-blank 1 '' "blank_idf.txt: no entries" -- "$neardup" keywords --idf "$tmp/blank_idf.txt" "$tmp/a.txt"
printf '\n\n' >"$tmp/blank_docs.txt"
expect_exact idf-build-no-entries 1 '' "neardup idf build: $tmp/i_e.txt: no entries: the 2 documents have no words (nothing written)" -- \
  "$neardup" idf build "$tmp/blank_docs.txt" -o "$tmp/i_e.txt"
expect idf-build-no-entries-no-file 0 "" "" -- test ! -e "$tmp/i_e.txt"
# Non-finite values are refused when the table is read (JSON has no inf or nan).
printf '清华大学 inf\n大学 -inf\n' >"$tmp/inf_idf.txt"
expect_exact idf-inf 1 '' "neardup keywords: $tmp/inf_idf.txt:1: the idf of '清华大学' is inf, not a finite number" -- \
  "$neardup" keywords --json --idf "$tmp/inf_idf.txt" "$tmp/a.txt"
printf '清华大学 1\n大学 NaN\n' >"$tmp/nan_idf.txt"
expect_exact idf-nan 1 '' "neardup keywords: $tmp/nan_idf.txt:2: the idf of '大学' is NaN, not a finite number" -- \
  "$neardup" keywords --json --idf "$tmp/nan_idf.txt" "$tmp/a.txt"

# Unsigned options refuse negative and too large numbers (usage, exit 2) instead of wrapping.
usage() { printf '%s\nRun with --help for more information.' "$1"; }
expect_exact top-negative 2 '' "$(usage "--top: '-1' is not a whole number of 0 or more")" -- "$neardup" keywords -k -1 "$tmp/a.txt"
expect_exact top-too-large 2 '' "$(usage "--top: 99999999999999999999999 is too large (at most 18446744073709551615)")" -- \
  "$neardup" keywords -k 99999999999999999999999 "$tmp/a.txt"
expect_exact min-df-negative 2 '' "$(usage "--min-df: '-1' is not a whole number of 0 or more")" -- \
  "$neardup" idf build --min-df -1 "$tmp/a.txt" -o "$tmp/m.txt"
expect_exact max-words-negative 2 '' "$(usage "--max-words: '-5000' is not a whole number of 0 or more")" -- \
  "$neardup" idf build --max-words -5000 "$tmp/a.txt" -o "$tmp/m.txt"

# .jsonl and .ndjson names (any case, also compressed) are JSON Lines, as dedup reads them.
printf '{"id":"x","text":"我来到北京清华大学"}\n' >"$tmp/named.JSONL"
cp "$tmp/named.JSONL" "$tmp/named.ndjson"
expect_exact segment-jsonl-name 0 '我 / 来到 / 北京 / 清华大学' '' -- "$neardup" segment "$tmp/named.JSONL"
expect_exact keywords-ndjson-name 0 'x	清华大学:2.6935315738733334' '' -- "$neardup" keywords --top 1 "$tmp/named.ndjson"
gzip -c "$tmp/named.JSONL" >"$tmp/named.jsonl.gz"
expect_exact keywords-jsonl-gz-name 0 'x	清华大学:2.6935315738733334' '' -- "$neardup" keywords --top 1 "$tmp/named.jsonl.gz"
expect idf-jsonl-name 0 '' '1 documents, 4 words' -- "$neardup" idf build "$tmp/named.JSONL" -o "$tmp/named_idf.txt"
expect idf-jsonl-name-words 0 '清华大学 0' '' -- cat "$tmp/named_idf.txt"

# Folders: a clean error (only dedup reads folders), for inputs and for dictionary files.
mkdir -p "$tmp/folder"
expect_exact segment-folder 1 '' "neardup segment: $tmp/folder: is a folder, not a file (only dedup reads folders: give the files in it)" -- \
  "$neardup" segment "$tmp/folder"
expect_exact keywords-folder 1 '' "neardup keywords: $tmp/folder: is a folder, not a file (only dedup reads folders: give the files in it)" -- \
  "$neardup" keywords "$tmp/folder"
expect_exact idf-folder 1 '' "neardup idf build: $tmp/folder: is a folder, not a file (only dedup reads folders: give the files in it)" -- \
  "$neardup" idf build "$tmp/folder" -o "$tmp/f.txt"
expect_exact dict-folder 1 '' "neardup segment: jieba dictionary: $tmp/folder: is a folder, not a file" -- \
  "$neardup" segment --dict "$tmp/folder" "$tmp/a.txt"
expect_exact user-dict-folder 1 '' "neardup segment: user dictionary: $tmp/folder: is a folder, not a file" -- \
  "$neardup" segment --user-dict "$tmp/folder" "$tmp/a.txt"
expect_exact idf-table-folder 1 '' "neardup keywords: IDF table: $tmp/folder: is a folder, not a file" -- \
  "$neardup" keywords --idf "$tmp/folder" "$tmp/a.txt"
# An --id-field that no document has is an error, as in dedup.
expect keywords-no-id-field 1 '' "neardup keywords: no document has the id field 'nope'" -- \
  "$neardup" keywords --id-field nope "$tmp/named.JSONL"
expect keywords-id-field 0 '' '' -- "$neardup" keywords --id-field id "$tmp/named.JSONL"
expect_exact segment-stdin-twice 2 '' "neardup segment: usage: standard input ('-') given twice" -- "$neardup" segment - -

if [[ $failures -ne 0 ]]; then echo "$failures CLI checks failed"; exit 1; fi
echo "all CLI checks passed"
