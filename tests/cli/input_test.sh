#!/usr/bin/env bash
# Checked options and input edge cases: expected stdout, stderr and exit code of each case, compared
# whole. Usage: input_test.sh PATH/TO/neardup
set -u
ND=$1
T=$(mktemp -d)
trap 'chmod -R u+rwx "$T"; rm -rf "$T"' EXIT
passed=0
failed=0

# check NAME EXIT STDIN STDOUT STDERR -- COMMAND...: COMMAND exits with EXIT and writes exactly STDOUT
# and STDERR (each without its last newline).
check() {
  local name=$1 want_exit=$2 input=$3 want_out=$4 want_err=$5
  shift 6
  "$@" <"$input" >"$T/out" 2>"$T/err"
  local got=$?
  local out err
  out=$(cat "$T/out")
  err=$(cat "$T/err")
  if [[ $got -ne $want_exit || "$out" != "$want_out" || "$err" != "$want_err" ]]; then
    echo "FAIL $name: exit $got (expected $want_exit)"
    echo "  stdout: $(head -c 600 "$T/out")"
    echo "  wanted: $want_out"
    echo "  stderr: $(head -c 600 "$T/err")"
    echo "  wanted: $want_err"
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
}
# same NAME FILE CONTENT: FILE is exactly CONTENT (without its last newline).
same() {
  if [[ "$(cat "$2")" == "$3" ]]; then
    passed=$((passed + 1))
  else
    echo "FAIL $1: $(basename "$2") is '$(head -c 600 "$2")', expected '$3'"
    failed=$((failed + 1))
  fi
}

: >"$T/empty"
printf 'one two three four five six seven\nalpha beta gamma delta epsilon zeta\n' >"$T/two.txt"
HELP="Run with --help for more information."
"$ND" hash "$T/two.txt" >"$T/two.hashes"
cut -f2 "$T/two.hashes" >"$T/two.hex"

# --- options that are checked
threads=-1
for command in "dedup $T/two.txt" "idf build $T/two.txt -o $T/idf.txt" "index build -o $T/x.ndx" \
               "index query $T/x.ndx" "index pairs"; do
  # shellcheck disable=SC2086
  check "threads-$threads-${command%% *}" 2 "$T/empty" "" \
    "--threads: Value $threads not in range 0 to 1024
$HELP" -- "$ND" $command --threads "$threads"
  threads=$([[ $threads == -1 ]] && echo 1025 || echo -1)
done
check hash-explain-needs-json 2 "$T/two.txt" "" \
  "neardup hash: usage: --explain adds the features to the JSON output: it needs --json" -- "$ND" hash --explain
check priority-and-keep 2 "$T/empty" "" \
  "neardup dedup: usage: --priority-field keeps the document with the highest value of the field; it cannot be combined with --keep" \
  -- "$ND" dedup "$T/two.txt" --priority-field score --keep last
printf '1\t0000000000000001\n2\t0000000000000003\n' >"$T/fp.tsv"
check index-not-exact 2 "$T/empty" "" \
  "neardup index build: usage: 4 blocks keyed on 2 are exact for k<=2 only, not k=3: use --key-blocks 1 or fewer, or leave --blocks out to let the planner choose" \
  -- "$ND" index build "$T/fp.tsv" -o "$T/x.ndx" --blocks 16,16,16,16 --key-blocks 2
check index-not-exact-blocks 2 "$T/empty" "" \
  "neardup index build: usage: 3 blocks keyed on 1 are exact for k<=2 only, not k=3: use at least 4 blocks, or leave --blocks out to let the planner choose" \
  -- "$ND" index build "$T/fp.tsv" -o "$T/x.ndx" --blocks 22,21,21 --key-blocks 1 -k 3

# --id-field given and --priority-field that no document has
printf '{"id":"a","text":"one two three four five six"}\n{"id":"b","text":"one two three four five six"}\n' >"$T/ab.jsonl"
check id-field-missing 1 "$T/empty" "" "neardup dedup: no document has the id field 'url'" \
  -- "$ND" dedup -q "$T/ab.jsonl" --id-field url -o "$T/k.jsonl"
check priority-field-missing 1 "$T/empty" "" \
  "neardup dedup: no document has the priority field 'score' (a JSONL number field)" \
  -- "$ND" dedup -q "$T/ab.jsonl" --priority-field score -o "$T/k.jsonl"
[[ ! -e "$T/k.jsonl" ]] && passed=$((passed + 1)) || { echo "FAIL field-missing: an output was written"; failed=$((failed + 1)); }
# Blank lines in JSON Lines hold no record: documents without features, as in plain text (kept in
# place by default, left out with --empty drop), never an error.
printf '{"id":"a","text":"one two three four five six"}\n\n  \r\n{"id":"b","text":"one two three four five six"}\n\n' >"$T/blank.jsonl"
check jsonl-blank-lines 0 "$T/empty" "$(printf '{"id":"a","text":"one two three four five six"}\n\n  \r\n\n')" "" \
  -- "$ND" dedup -q "$T/blank.jsonl" -o -
check jsonl-blank-lines-dropped 0 "$T/empty" '{"id":"a","text":"one two three four five six"}' "" \
  -- "$ND" dedup -q "$T/blank.jsonl" -o - --empty drop
# A file given twice (by two names, or in a folder given too) would be read twice: refused.
mkdir -p "$T/twice"
cp "$T/two.txt" "$T/twice/two.txt"
check same-file-twice 1 "$T/empty" "" "neardup dedup: $T/two.txt and $T/./two.txt are the same file: give each input once" \
  -- "$ND" dedup -q "$T/two.txt" "$T/./two.txt" -o /dev/null
ln -s two.txt "$T/two-link.txt"
check same-file-by-link 1 "$T/empty" "" "neardup dedup: $T/two.txt and $T/two-link.txt are the same file: give each input once" \
  -- "$ND" dedup -q "$T/two.txt" "$T/two-link.txt" -o /dev/null
check file-in-folder-twice 1 "$T/empty" "" "neardup dedup: $T/twice/two.txt is given twice: give each input once" \
  -- "$ND" dedup -q "$T/twice" "$T/twice/two.txt" -o /dev/null
check copies-are-two-files 0 "$T/empty" "$(printf '%s:1\t%s:1\t1.0000\n%s:2\t%s:2\t1.0000' "$T/twice/two.txt" "$T/two.txt" "$T/twice/two.txt" "$T/two.txt")" "" \
  -- "$ND" dedup -q "$T/two.txt" "$T/twice/two.txt" -o /dev/null --dups - --id-field none
rm -rf "$T/twice" "$T/two-link.txt"
# Empty field names are usage errors; --id-field none names documents by their lines; beside ids, a
# document without one is named by its line, which the duplicate ids' warning counts when it equals
# another's id.
check text-field-empty 2 "$T/empty" "" "neardup dedup: usage: --text-field is empty: name the JSONL field that holds the text" \
  -- "$ND" dedup -q "$T/ab.jsonl" --text-field '' -o "$T/k.jsonl"
check id-field-empty 2 "$T/empty" "" "neardup dedup: usage: --id-field is empty: name the JSONL field that holds the id, or give none to name every document by its line" \
  -- "$ND" dedup -q "$T/ab.jsonl" --id-field '' -o "$T/k.jsonl"
check id-field-none 0 "$T/empty" "$(printf '2\t1\t1.0000')" "" -- "$ND" dedup -q "$T/ab.jsonl" --id-field none -o /dev/null --dups -
printf '{"id":"a","text":"one two three four five six"}\n{"text":"one two three four five six"}\n{"id":"2","text":"one two three four five six"}\n' >"$T/mixed.jsonl"
check id-missing-named-by-line 0 "$T/empty" "$(printf 'a\t2\t1.0000\na\t2\t1.0000\n2\t2\t1.0000')" \
  "neardup dedup: warning: 1 document has the id of an earlier document (first: '2' at $T/mixed.jsonl:2 and $T/mixed.jsonl:3); outputs name them alike (--unique-ids refuses them)" \
  -- "$ND" dedup -q "$T/mixed.jsonl" -o /dev/null --pairs -

# --- input names: upper-case extensions, .json read as plain text with a warning
cp "$T/ab.jsonl" "$T/AB.JSONL"
check upper-case-jsonl 0 "$T/empty" "" "" -- "$ND" dedup -q "$T/AB.JSONL" --dups "$T/dups.tsv"
same upper-case-jsonl "$T/dups.tsv" "$(printf 'b\ta\t1.0000')"
gzip -c "$T/ab.jsonl" >"$T/AB.NDJSON.GZ"
check upper-case-gz 0 "$T/empty" "" "" -- "$ND" dedup -q "$T/AB.NDJSON.GZ" --dups "$T/dups.tsv"
same upper-case-gz "$T/dups.tsv" "$(printf 'b\ta\t1.0000')"
gzip -c "$T/two.txt" >"$T/TWO.TXT.GZ"
check hash-upper-case-gz 0 "$T/empty" "$(cat "$T/two.hashes")" "" -- "$ND" hash "$T/TWO.TXT.GZ"
# Compressed data on standard input or under a name without its suffix: known by its first bytes.
gzip -c "$T/two.txt" >"$T/two-gzipped"
check hash-gzip-stdin 0 "$T/two-gzipped" "$(cat "$T/two.hashes")" "" -- "$ND" hash
check hash-gzip-no-suffix 0 "$T/empty" "$(cat "$T/two.hashes")" "" -- "$ND" hash "$T/two-gzipped"
zstd -q -c "$T/two.txt" >"$T/two-zstd"
check dedup-zstd-stdin 0 "$T/two-zstd" "$(cat "$T/two.txt")" "" -- "$ND" dedup -q - -o - --empty keep
cp "$T/ab.jsonl" "$T/ab.json"
check json-name-is-text 0 "$T/empty" "$(cat "$T/ab.jsonl")" \
  "neardup dedup: warning: $T/ab.json: read as plain text, one document per line (only .jsonl and .ndjson names are taken for JSON Lines; --format jsonl reads them as JSON Lines)" \
  -- "$ND" dedup -q "$T/ab.json" -o -
check json-name-as-jsonl 0 "$T/empty" '{"id":"a","text":"one two three four five six"}' "" \
  -- "$ND" dedup -q "$T/ab.json" --jsonl -o -

# --- JSON Lines read as plain text (standard input, another name): a warning names the input
cp "$T/ab.jsonl" "$T/ab-lines.txt"  # a .jsonl name is JSON Lines: plain text needs another name
check jsonl-stdin-as-text 0 "$T/ab.jsonl" "$("$ND" hash "$T/ab-lines.txt" 2>/dev/null)" \
  "neardup hash: warning: standard input: its first line looks like a JSON object, but lines are read as plain text (--jsonl reads JSON Lines)" \
  -- "$ND" hash
check jsonl-stdin-with-flag 0 "$T/ab.jsonl" "$(cat "$T/ab.jsonl" | "$ND" hash --jsonl)" "" -- "$ND" hash --jsonl
cp "$T/ab.jsonl" "$T/ab-lines.txt"
check jsonl-name-txt-dedup 0 "$T/empty" "$(cat "$T/ab.jsonl")" \
  "neardup dedup: warning: $T/ab-lines.txt: its first line looks like a JSON object, but it is read as plain text, one document per line (--format jsonl reads JSON Lines; .jsonl and .ndjson names are taken for them)" \
  -- "$ND" dedup -q "$T/ab-lines.txt" -o -
"$ND" index add "$T/store-jsonl" --method simhash "$T/empty" >/dev/null
check jsonl-stdin-store 0 "$T/ab.jsonl" '{"id":"1","matches":[]}
{"id":"2","matches":[]}' \
  "neardup index query: warning: standard input: its first line looks like a JSON object, but lines are read as plain text (--jsonl reads JSON Lines)" \
  -- "$ND" index query "$T/store-jsonl" --method simhash

# --- a UTF-8 byte order mark starts no text and no id; the kept copy keeps the input bytes
printf '\xEF\xBB\xBF{"id":"a","text":"one two three four five six"}\n{"id":"b","text":"one two three four five six"}\n' >"$T/bom.jsonl"
check bom-jsonl 0 "$T/empty" "$(printf '\xEF\xBB\xBF{"id":"a","text":"one two three four five six"}')" "" \
  -- "$ND" dedup -q "$T/bom.jsonl" -o - --dups "$T/dups.tsv"
same bom-jsonl-ids "$T/dups.tsv" "$(printf 'b\ta\t1.0000')"
printf '\xEF\xBB\xBFone two three four five six seven\n' >"$T/bom.txt"
# (--no-normalize: normalisation alone would drop U+FEFF from the text)
check bom-plain 0 "$T/empty" "$("$ND" hash --no-normalize "$T/two.txt" | head -1)" "" -- "$ND" hash --no-normalize "$T/bom.txt"
printf '\xEF\xBB\xBF我来到北京\n' >"$T/bom-zh.txt"
check bom-segment 0 "$T/empty" "我 / 来到 / 北京" "" -- "$ND" segment "$T/bom-zh.txt"
printf '\xEF\xBB\xBFone two three four five six seven\none two three four five six seven\n' >"$T/bom2.txt"
check bom-plain-dedup 0 "$T/empty" "$(printf '\xEF\xBB\xBFone two three four five six seven')" "" \
  -- "$ND" dedup -q "$T/bom2.txt" -o - --dups "$T/dups.tsv"
same bom-plain-dedup-dups "$T/dups.tsv" "$(printf '2\t1\t1.0000')"

# --- numeric ids keep the text they were written with; true, false and null are refused
printf '%s\n' '{"id":123456789012345678901234567890,"text":"one two three four five six"}' \
  '{"id":1.50,"text":"one two three four five six"}' '{"id":-0,"text":"one two three four five six"}' \
  '{"id":-12,"text":"one two three four five six"}' '{"id":1E5,"text":"one two three four five six"}' >"$T/numbers.jsonl"
check number-ids 0 "$T/empty" "" "" -- "$ND" dedup -q "$T/numbers.jsonl" --dups "$T/dups.tsv"
same number-ids "$T/dups.tsv" "$(printf '1.50\t123456789012345678901234567890\t1.0000\n-0\t123456789012345678901234567890\t1.0000\n-12\t123456789012345678901234567890\t1.0000\n1E5\t123456789012345678901234567890\t1.0000')"
check number-ids-hash 0 "$T/numbers.jsonl" "$(printf '123456789012345678901234567890\n1.50\n-0\n-12\n1E5')" "" \
  -- bash -c "'$ND' hash --jsonl | cut -f1"
for value in true false null; do
  printf '{"id":%s,"text":"one two"}\n' "$value" >"$T/bad-id.jsonl"
  kind=$([[ $value == null ]] && echo null || echo "a boolean")
  check "id-$value" 1 "$T/empty" "" \
    "neardup dedup: $T/bad-id.jsonl:1: id field 'id' is $kind, expected a string or number (--on-error skip leaves such documents out)" \
    -- "$ND" dedup -q "$T/bad-id.jsonl"
done

# --- ids that repeat: a warning with a count, or an error naming both places with --unique-ids
printf '{"id":"a","text":"one two three four five six"}\n{"id":"b","text":"seven eight nine ten eleven"}\n' >"$T/day1.jsonl"
printf '{"id":"c","text":"twelve thirteen fourteen fifteen"}\n{"id":"a","text":"sixteen seventeen eighteen"}\n{"id":"b","text":"x y z w v u"}\n' >"$T/day2.jsonl"
check duplicate-ids-warn 0 "$T/empty" "" \
  "neardup dedup: warning: 2 documents have the id of an earlier document (first: 'a' at $T/day1.jsonl:1 and $T/day2.jsonl:2); outputs name them alike (--unique-ids refuses them)" \
  -- "$ND" dedup -q "$T/day1.jsonl" "$T/day2.jsonl" --report "$T/report.json"
grep -qF '"duplicate_ids":2,' "$T/report.json" && passed=$((passed + 1)) || { echo "FAIL duplicate-ids-report: $(cat "$T/report.json")"; failed=$((failed + 1)); }
check duplicate-ids-refused 1 "$T/empty" "" \
  "neardup dedup: id a appears twice: $T/day1.jsonl:1 and $T/day2.jsonl:2" \
  -- "$ND" dedup -q "$T/day1.jsonl" "$T/day2.jsonl" --unique-ids -o "$T/k.jsonl"
cp "$T/two.txt" "$T/two-copy.txt"
check line-ids-never-repeat 0 "$T/empty" "" "" -- "$ND" dedup -q "$T/two.txt" "$T/two-copy.txt" --unique-ids

# --- folders: an empty one is an error, not an empty corpus
mkdir -p "$T/none"
check empty-folder 1 "$T/empty" "" "neardup dedup: $T/none: the folder holds no files" -- "$ND" dedup -q "$T/none"
if [[ $(id -u) -ne 0 ]]; then  # root reads every file
  mkdir -p "$T/locked"
  cp "$T/two.txt" "$T/locked/a.txt"
  chmod 000 "$T/locked/a.txt"
  check unreadable-file 1 "$T/empty" "" "neardup dedup: $T/locked/a.txt: cannot open: Permission denied" \
    -- "$ND" dedup -q "$T/locked"
  chmod 000 "$T/locked"
  check unreadable-folder 1 "$T/empty" "" "neardup dedup: $T/locked: cannot list: Permission denied" \
    -- "$ND" dedup -q "$T/locked"
fi

# --- hash names lines path:line with several inputs; index build takes those ids, refuses repeats
check hash-two-files 0 "$T/empty" \
  "$(printf '%s:1\t%s\n%s:2\t%s\n%s:1\t%s' "$T/two.txt" "$(sed -n 1p "$T/two.hex")" "$T/two.txt" \
     "$(sed -n 2p "$T/two.hex")" "$T/bom.txt" "$(sed -n 1p "$T/two.hex")")" "" -- "$ND" hash "$T/two.txt" "$T/bom.txt"
"$ND" hash "$T/two.txt" "$T/bom.txt" >"$T/two.tsv"
check index-text-ids 0 "$T/empty" "" "" -- bash -c "'$ND' index build '$T/two.tsv' -o '$T/two.ndx' 2>/dev/null"
check index-query-text-ids 0 "$T/empty" \
  "$(printf 'q\t%s:1\t0\nq\t%s:1\t0' "$T/two.txt" "$T/bom.txt")" "" \
  -- bash -c "printf 'q\t%s\n' \"\$(cut -f2 '$T/two.tsv' | head -1)\" | '$ND' index query '$T/two.ndx'"
printf '7\t0000000000000001\n8\t0000000000000002\n' >"$T/a.tsv"
printf '\n9\t0000000000000003\n7\t0000000000000004\n' >"$T/b.tsv"
check index-repeated-id 1 "$T/empty" "" "neardup index build: id 7 appears twice: $T/a.tsv:1 and $T/b.tsv:3" \
  -- "$ND" index build "$T/a.tsv" "$T/b.tsv" -o "$T/r.ndx"
cp "$T/two.tsv" "$T/again.tsv"
check index-repeated-text-id 1 "$T/empty" "" \
  "neardup index build: id $T/two.txt:1 appears twice: $T/two.tsv:1 and $T/again.tsv:1" \
  -- "$ND" index build "$T/two.tsv" "$T/again.tsv" -o "$T/r.ndx"

# Ids are TSV fields: escapes are undone in INDEX.ids and redone in the output.
printf 'a\\tb\t0000000000000001\nc\t0000000000000002\n' >"$T/escaped.tsv"
"$ND" index build "$T/escaped.tsv" -o "$T/escaped.ndx" 2>/dev/null
check index-escaped-ids 0 "$T/empty" "$(printf 'q\ta\\tb\t0\nq\tc\t2')" "" \
  -- bash -c "printf 'q\t0000000000000001\n' | '$ND' index query '$T/escaped.ndx' -k 3"

# --- index query on an index saved by dedup prints the stored ids
printf '{"id":"doc-a","text":"one two three four five six"}\n{"id":"doc-b","text":"alpha beta gamma delta epsilon"}\n' >"$T/saved.jsonl"
"$ND" dedup -q "$T/saved.jsonl" --method simhash --save-index "$T/saved.idx"
"$ND" hash --jsonl "$T/saved.jsonl" >"$T/saved.tsv"
check query-saved-index 0 "$T/saved.tsv" "$(printf 'doc-a\tdoc-a\t0\ndoc-b\tdoc-b\t0')" "" \
  -- "$ND" index query "$T/saved.idx" -k 0

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
