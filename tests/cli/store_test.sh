#!/usr/bin/env bash
# CLI tests of the durable store: `neardup index add|remove|query|info DIR`. Expected stdout, stderr
# and exit code per case; JSON output read back by python3.
# Usage: store_test.sh PATH/TO/neardup
set -u
ND=${1:?usage: $0 PATH/TO/neardup}
T=$(mktemp -d)
holder=""
trap '[[ -n "$holder" ]] && kill "$holder" 2>/dev/null; rm -rf "$T"' EXIT
source "$(dirname "$0")/testlib.sh"

# check NAME EXIT STDIN STDOUT STDERR -- COMMAND...: the exit code and the whole stdout and stderr
# (each without its last newline).
check() {
  local name=$1 want_exit=$2 input=$3 want_out=$4 want_err=$5
  shift 6
  "$@" <"$input" >"$T/out" 2>"$T/err"
  local got=$?
  if [[ $got -ne $want_exit || "$(cat "$T/out")" != "$want_out" || "$(cat "$T/err")" != "$want_err" ]]; then
    fail "$name" "exit $got (expected $want_exit); wanted stdout '$want_out', stderr '$want_err'"
  else
    ok
  fi
}
# contains NAME TEXT: the last command's stderr contains TEXT.
contains() {
  if grep -qF -- "$2" "$T/err"; then ok; else fail "$1" "stderr lacks '$2'"; fi
}

S=$T/docs.store
cat >"$T/docs.jsonl" <<'EOF'
{"id":"a","text":"the quick brown fox jumps over the lazy dog again and again"}
{"id":"b","text":"the quick brown fox jumps over the lazy dog again and again!"}
{"id":"c","text":"something entirely different here, nothing like the others"}
EOF
check add 0 "$T/docs.jsonl" "$(cat <<'EOF'
{"id":"a","inserted":true,"matches":[]}
{"id":"b","inserted":false,"matches":[{"id":"a","score":1}]}
{"id":"c","inserted":true,"matches":[]}
EOF
)" "" -- "$ND" index add "$S" --jsonl
# Every output line is a JSON object with the fields of the contract.
if python3 -c '
import json, sys
for line in open(sys.argv[1]):
    record = json.loads(line)
    assert set(record) == {"id", "inserted", "matches"}, record
    assert all(set(m) == {"id", "score"} for m in record["matches"]), record
' "$T/out"; then ok; else fail "add output parses" "python3 json"; fi

check "query plain text" 0 <(printf 'the quick brown fox jumps over the lazy dog again and again\nunrelated words\n') \
  "$(printf '%s\n%s' '{"id":"q1","matches":[{"id":"a","score":1}]}' '{"id":"q2","matches":[]}')" "" \
  -- "$ND" index query "$S" --id-prefix q
check "add --always, repeated id" 1 <(printf '%s\n' '{"id":"b2","text":"the quick brown fox jumps over the lazy dog again and again"}' '{"id":"a","text":"x"}') \
  "$(printf '%s\n%s' '{"id":"b2","inserted":true,"matches":[{"id":"a","score":1}]}' '{"id":"a","inserted":false,"matches":[],"error":"id already stored"}')" \
  'neardup index add: documents not stored: 1 (see the "error" of their lines)' \
  -- "$ND" index add "$S" --jsonl --always --fsync always
# A file named .jsonl is JSON Lines without --jsonl (as for dedup); a mix of names needs --jsonl.
cp "$T/docs.jsonl" "$T/named.jsonl"
check "query .jsonl by name" 0 /dev/null "$(printf '%s\n%s\n%s' '{"id":"a","matches":[{"id":"a","score":1},{"id":"b2","score":1}]}' \
  '{"id":"b","matches":[{"id":"a","score":1},{"id":"b2","score":1}]}' '{"id":"c","matches":[{"id":"c","score":1}]}')" "" \
  -- "$ND" index query "$S" "$T/named.jsonl"
# Sketches kept in a scratch file: the same answers, and nothing left in the store afterwards.
cp "$T/out" "$T/in_memory.out"
check "query --sketches-on-disk" 0 /dev/null "$(cat "$T/in_memory.out")" "" \
  -- "$ND" index query "$S" "$T/named.jsonl" --sketches-on-disk
if ls -A "$S" | grep -q sketch; then fail "sketch file left" "$(ls -A "$S")"; else ok; fi
printf 'plain text\n' >"$T/plain.txt"
check "mixed input names" 2 /dev/null "" \
  "neardup index add: usage: some inputs are named .jsonl or .ndjson and some are not: give --jsonl, or one kind per run" \
  -- "$ND" index add "$S" "$T/named.jsonl" "$T/plain.txt"
check remove 0 <(printf 'b2\nnone\n') "$(printf '%s\n%s' '{"id":"b2","removed":true}' '{"id":"none","removed":false}')" "" \
  -- "$ND" index remove "$S"
check "remove jsonl" 0 <(printf '%s\n' '{"id":"c"}') '{"id":"c","removed":true}' "" -- "$ND" index remove "$S" --jsonl
"$ND" index info "$S" >"$T/info" 2>"$T/err"
if grep -qx "documents: 1 (0 without features)" "$T/info" && grep -qx "rows: 3" "$T/info" &&
   grep -q "^settings: method=accurate .*threshold=0.8" "$T/info" && grep -qE "^disk: [0-9]+ bytes" "$T/info" &&
   grep -qE "^memory: [0-9]+ bytes" "$T/info"; then ok; else fail info "$(cat "$T/info")"; fi

# index snapshot: a later open loads it; bad places and a disk-resident store are refused by name;
# a failed report line is an error (the snapshot itself is written).
"$ND" index snapshot "$S" >"$T/out" 2>"$T/err"
if [[ $? -eq 0 ]] && grep -q "^snapshot: 3 rows, [0-9]* bytes" "$T/out" && ls "$S"/snapshot-3-*.ndx >/dev/null 2>&1; then ok; else fail "snapshot" "$(cat "$T/out")"; fi
"$ND" index info "$S" >"$T/out" 2>"$T/err"
if grep -q "^loaded from: snapshot" "$T/out" && grep -q "^snapshot: 3 rows" "$T/out"; then ok; else fail "info after snapshot" "$(cat "$T/out")"; fi
"$ND" index info "$S"/snapshot-3-*.ndx >"$T/out" 2>"$T/err"
if grep -q "^kind: online index" "$T/out" && grep -q "^rows: 1 " "$T/out"; then ok; else fail "info of a snapshot file" "$(cat "$T/out")"; fi
"$ND" index snapshot "$S" --rebuild >"$T/out" 2>"$T/err"
if grep -q "loaded from records" "$T/out"; then ok; else fail "snapshot --rebuild" "$(cat "$T/out")"; fi
check "snapshot of no store" 1 /dev/null "" "neardup index snapshot: $T/none: no store there" \
  -- "$ND" index snapshot "$T/none"
check "snapshot bad flag" 2 /dev/null "" "$(printf 'The following argument was not expected: --bogus\nRun with --help for more information.')" \
  -- "$ND" index snapshot "$S" --bogus
"$ND" index snapshot "$S" >/dev/full 2>"$T/err"
code=$?
if [[ $code -eq 1 ]]; then contains "snapshot to /dev/full" "write failed"; else fail "snapshot to /dev/full" "exit $code"; fi

# Settings: chosen at creation; the same given again is fine, others are refused by name.
check "same settings" 0 /dev/null "" "" -- "$ND" index add "$S" --method accurate --threshold 0.8
check "other threshold" 1 /dev/null "" \
  "neardup index add: $S: settings differ (they are chosen when a store is created): threshold 0.7 given, 0.8 in the store" \
  -- "$ND" index add "$S" --threshold 0.7
check "other method" 1 /dev/null "" \
  "neardup index query: $S: settings differ (they are chosen when a store is created): method simhash given, accurate in the store" \
  -- "$ND" index query "$S" --method simhash
printf 'one two three four five six seven\none two three four five six seven\n' >"$T/plain.txt"
check "simhash store" 0 "$T/plain.txt" \
  "$(printf '%s\n%s' '{"id":"1","inserted":true,"matches":[]}' '{"id":"2","inserted":false,"matches":[{"id":"1","score":0}]}')" "" \
  -- "$ND" index add "$T/sim.store" --method simhash -k 2 --fsync never
check "simhash -k differs" 1 /dev/null "" \
  "neardup index add: $T/sim.store: settings differ (they are chosen when a store is created): k 3 given, 2 in the store" \
  -- "$ND" index add "$T/sim.store" -k 3
# index query -k: below the store's k it filters the matches to that distance; above, the store's
# index cannot answer it.
far="The quick brown fox jumps over the lazy dog while the farmer watches from the old barn. Later that evening the farmer walks to the village, buys bread and cheese at the market, talks with the miller about the coming harvest and the price of grain, and returns home before dark to feed the chickens, mend the fence by the river and write a letter to his sister in the city. In the morning the fog lifts slowly from the fields, the church bell rings seven times, and the children run along the muddy lane to the school house where the teacher waits with chalk, maps of distant countries and a stack of old books that smell of dust and rain."
printf '%s\n' "$far" >"$T/far.txt"
printf '%s\n' "${far/his sister/his brother}" >"$T/far3.txt"  # 3 bits apart
check "k3 store" 0 "$T/far.txt" '{"id":"f1","inserted":true,"matches":[]}' "" \
  -- "$ND" index add "$T/k3.store" --method simhash --id-prefix f --fsync never
check "query at the store's k" 0 "$T/far3.txt" '{"id":"1","matches":[{"id":"f1","score":3}]}' "" \
  -- "$ND" index query "$T/k3.store"
check "query -k 3" 0 "$T/far3.txt" '{"id":"1","matches":[{"id":"f1","score":3}]}' "" \
  -- "$ND" index query "$T/k3.store" -k 3
check "query -k 2 filters" 0 "$T/far3.txt" '{"id":"1","matches":[]}' "" \
  -- "$ND" index query "$T/k3.store" -k 2
check "query -k 0 keeps distance 0" 0 "$T/far.txt" '{"id":"1","matches":[{"id":"f1","score":0}]}' "" \
  -- "$ND" index query "$T/k3.store" -k 0
check "query -k above the store's" 2 "$T/far3.txt" "" \
  "neardup index query: usage: -k 4 is above the store's k, 3: its index finds distances up to 3 only (k is chosen when a store is created; a smaller -k filters)" \
  -- "$ND" index query "$T/k3.store" -k 4
# A setting of the other method is refused, naming it, rather than ignored.
check "-k of an accurate store" 2 /dev/null "" \
  "neardup index add: usage: -k applies to the simhash method only, and store $S is of the accurate method (its matches are set by --threshold)" \
  -- "$ND" index add "$S" -k 5
check "-k of an accurate store, query" 2 /dev/null "" \
  "neardup index query: usage: -k applies to the simhash method only, and store $S is of the accurate method (its matches are set by --threshold)" \
  -- "$ND" index query "$S" -k 2
check "--threshold of a simhash store" 2 /dev/null "" \
  "neardup index query: usage: --threshold applies to the accurate method only, and store $T/k3.store is of the simhash method (its matches are set by -k)" \
  -- "$ND" index query "$T/k3.store" --threshold 0.5
check "--threshold of a new simhash store" 2 /dev/null "" \
  "neardup index add: usage: --threshold applies to the accurate method only, and the new store $T/new.store would be of the simhash method (its matches are set by -k)" \
  -- "$ND" index add "$T/new.store" --method simhash --threshold 0.5
check "-k of a new accurate store" 2 /dev/null "" \
  "neardup index add: usage: -k applies to the simhash method only, and the new store $T/new.store would be of the accurate method (its matches are set by --threshold); give --method simhash for a simhash store" \
  -- "$ND" index add "$T/new.store" -k 2
[[ ! -e "$T/new.store" ]] && ok || fail "refused settings created nothing" "$(ls "$T")"

# A disk-resident store: simhash without --method, the same answers as in memory, kept when
# reopened; the other method and a change of residence are refused.
D=$T/disk.store
check "disk-resident add" 0 "$T/plain.txt" \
  "$(printf '%s\n%s' '{"id":"1","inserted":true,"matches":[]}' '{"id":"2","inserted":false,"matches":[{"id":"1","score":0}]}')" "" \
  -- "$ND" index add "$D" --disk-resident -k 2 --fsync never
check "disk-resident query" 0 <(printf 'one two three four five six seven\nnothing like it\n') \
  "$(printf '%s\n%s' '{"id":"1","matches":[{"id":"1","score":0}]}' '{"id":"2","matches":[]}')" "" \
  -- "$ND" index query "$D"
"$ND" index info "$D" >"$T/out" 2>"$T/err"
grep -qx 'index: disk-resident, tables 3 blocks 22,21,21, key 1 block: 3 tables, exact for k<=2' "$T/out" &&
  grep -qx 'documents: 1 (0 without features)' "$T/out" && ok || fail "disk-resident info" "$(cat "$T/out" "$T/err")"
check "disk-resident snapshot" 1 /dev/null "" \
  "neardup index snapshot: $D: a disk-resident store keeps no index in memory to snapshot" \
  -- "$ND" index snapshot "$D"
check "disk-resident remove" 0 <(printf '1\n') '{"id":"1","removed":true}' "" -- "$ND" index remove "$D"
check "disk-resident after remove" 0 <(printf 'one two three four five six seven\n') '{"id":"1","matches":[]}' "" \
  -- "$ND" index query "$D"
check "disk-resident accurate" 2 /dev/null "" "neardup index add: usage: --disk-resident stores hold the simhash method only" \
  -- "$ND" index add "$T/disk2.store" --disk-resident --method accurate
[[ ! -e "$T/disk2.store" ]] && ok || fail "disk-resident accurate left nothing" "$(ls "$T")"
check "memory store made disk-resident" 1 /dev/null "" \
  "neardup index add: $T/sim.store: the store keeps its index in memory, a disk-resident one was asked for (chosen when a store is created)" \
  -- "$ND" index add "$T/sim.store" --disk-resident

# A bad line stops the command at file:line: the lines before it are stored, it and the rest not.
printf '%s\n' '{"id":"x1","text":"first line is fine and stored"}' '{"id":"x2","text":' \
  '{"id":"x3","text":"never reached"}' >"$T/bad.jsonl"
check "bad JSON line" 1 /dev/null '{"id":"x1","inserted":true,"matches":[]}' \
  "neardup index add: $T/bad.jsonl:2: malformed JSON: The JSON document has an improper structure: missing or superfluous commas, braces, missing keys, etc." \
  -- "$ND" index add "$T/bad.store" "$T/bad.jsonl" --jsonl --fsync always
check "after the bad line" 0 <(printf 'x1\nx2\nx3\n') \
  "$(printf '%s\n%s\n%s' '{"id":"x1","removed":true}' '{"id":"x2","removed":false}' '{"id":"x3","removed":false}')" "" \
  -- "$ND" index remove "$T/bad.store"

# --jsonl by the HTTP API's rules: blank lines skipped (as index remove --jsonl and /v1/batch skip
# them), a line that is not valid UTF-8 refused rather than stored with its bytes replaced.
check "add --jsonl blank lines" 0 <(printf '{"id":"k1","text":"one"}\n\n \t\r\n{"id":"k2","text":"two"}\n\n') \
  "$(printf '%s\n%s' '{"id":"k1","inserted":true,"matches":[]}' '{"id":"k2","inserted":true,"matches":[]}')" "" \
  -- "$ND" index add "$T/blank.store" --jsonl --always
check "query --jsonl blank lines" 0 <(printf '\n{"id":"q","text":"one"}\n') '{"id":"q","matches":[{"id":"k1","score":1}]}' "" \
  -- "$ND" index query "$T/blank.store" --jsonl
check "add --jsonl invalid UTF-8" 1 <(printf '{"id":"k3","text":"fine"}\n{"id":"k4","text":"bad \xff"}\n') \
  '{"id":"k3","inserted":true,"matches":[]}' "neardup index add: -:2: malformed JSON: The input is not valid UTF-8" \
  -- "$ND" index add "$T/blank.store" --jsonl --fsync always
check "invalid UTF-8 not stored" 0 <(printf 'k4\n') '{"id":"k4","removed":false}' "" -- "$ND" index remove "$T/blank.store"

# Where a store is created: through a symbolic link, in the directory it names (the link stays);
# errors name the store and the real reason; a read-only empty directory is refused, or (for root,
# who may write it) kept with its mode and group.
mkdir -p "$T/realdisk/empty"
ln -s "$T/realdisk/empty" "$T/link.store"
check "store through a symlink" 0 <(echo "hello world text") '{"id":"s1","inserted":true,"matches":[]}' "" \
  -- "$ND" index add "$T/link.store" --id-prefix s
[[ -L "$T/link.store" && -f "$T/realdisk/empty/CURRENT" ]] && ok || fail "symlink kept, store in its target" "$(ls -la "$T")"
check "store through a symlink, reopened" 0 <(echo "hello world text") '{"id":"1","matches":[{"id":"s1","score":1}]}' "" \
  -- "$ND" index query "$T/link.store"
check "missing parent" 1 /dev/null "" \
  "neardup index add: $T/nodir/x.store: cannot create the store: $T/nodir: No such file or directory" \
  -- "$ND" index add "$T/nodir/x.store"
# as_user COMMAND...: runs it as a user other than root (nobody when run as root), for whom mode
# 555 means read-only.
as_user() {
  if [[ $(id -u) -eq 0 ]]; then setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; else "$@"; fi
}
chmod 755 "$T"
mkdir -m 777 "$T/shared"
mkdir -m 555 "$T/shared/readonly" "$T/shared/ro.store"
check "read-only parent" 1 /dev/null "" \
  "neardup index add: $T/shared/readonly/x.store: cannot create the store: $T/shared/readonly: Permission denied" \
  -- as_user "$ND" index add "$T/shared/readonly/x.store"
check "read-only empty directory" 1 /dev/null "" \
  "neardup index add: $T/shared/ro.store: cannot create the store: $T/shared/ro.store: Permission denied" \
  -- as_user "$ND" index add "$T/shared/ro.store"
[[ "$(stat -c '%a' "$T/shared/ro.store")" == 555 && -z "$(ls -A "$T/shared/ro.store")" ]] && ok ||
  fail "read-only directory untouched" "$(stat -c '%a %U' "$T/shared/ro.store")"
if [[ $(id -u) -eq 0 ]]; then
  mkdir -m 555 "$T/root.store"
  chgrp 1 "$T/root.store"
  check "root: read-only empty directory" 0 <(echo "hello") '{"id":"1","inserted":true,"matches":[]}' "" \
    -- "$ND" index add "$T/root.store"
  [[ "$(stat -c '%a %g' "$T/root.store")" == "555 1" ]] && ok || fail "mode and group kept" "$(stat -c '%a %g' "$T/root.store")"
fi

check "unknown option" 2 /dev/null "" "$(printf 'The following argument was not expected: --bogus\nRun with --help for more information.')" \
  -- "$ND" index add "$S" --bogus
check "remove from a missing store" 1 /dev/null "" "neardup index remove: $T/none: no store there" -- "$ND" index remove "$T/none"
mkdir "$T/notes" && echo "mine" >"$T/notes/notes.txt"
check "not a store" 1 /dev/null "" \
  "neardup index add: $T/notes is not a neardup store (no CURRENT file); nothing was changed" -- "$ND" index add "$T/notes"
same_notes=$(cat "$T/notes/notes.txt")
[[ "$same_notes" == "mine" && $(ls "$T/notes" | wc -l) -eq 1 ]] && ok || fail "not a store untouched" "$(ls "$T/notes")"

# A full standard output is an error (exit 1), reported.
"$ND" index query "$S" >/dev/full 2>"$T/err" <"$T/docs.jsonl"
rc=$?
[[ $rc -eq 1 ]] && ok || fail "/dev/full exit" "exit $rc"
contains "/dev/full message" "No space left on device"

# A second process is refused while the first holds the store: the first has acknowledged one
# document (its line is out, so it has the store open) and waits for more input.
mkfifo "$T/fifo"
"$ND" index add "$S" --fsync always --id-prefix h <"$T/fifo" >"$T/holder.out" 2>&1 &
holder=$!
exec 3>"$T/fifo"
echo "written while the other waited" >&3
for _ in $(seq 200); do
  [[ -s "$T/holder.out" ]] && break
  sleep 0.05
done
check "holder acknowledged" 0 /dev/null '{"id":"h1","inserted":true,"matches":[]}' "" -- cat "$T/holder.out"
check "second process refused" 1 /dev/null "" \
  "neardup index info: $S is in use by another process (IO error: While lock file: $S/LOCK: Resource temporarily unavailable)" \
  -- "$ND" index info "$S"
exec 3>&-
wait "$holder"
rc=$?
holder=""
[[ $rc -eq 0 ]] && ok || fail "holder exit" "exit $rc: $(cat "$T/holder.out")"
check "after the holder" 0 <(echo "written while the other waited") '{"id":"1","matches":[{"id":"h1","score":1}]}' "" \
  -- "$ND" index query "$S"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
