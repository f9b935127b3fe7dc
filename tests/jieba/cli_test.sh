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

if [[ $failures -ne 0 ]]; then echo "$failures CLI checks failed"; exit 1; fi
echo "all CLI checks passed"
