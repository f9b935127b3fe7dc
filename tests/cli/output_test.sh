#!/usr/bin/env bash
# Output safety of every neardup command: devices, FIFOs and links given as outputs are never replaced,
# outputs naming each other or an input are refused before any work, a job's outputs are committed
# together or not at all, every failed write (a full device, a file-size limit) is an error naming the
# output, a closed pipe ends quietly, signals leave nothing behind, and documents without features
# pass with the defaults. Compares whole stdout, stderr and exit codes.
# Usage: output_test.sh PATH/TO/neardup
set -u
ND=$1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
M=$(mktemp -d)  # a tiny file system is mounted here where mounting is allowed
trap 'umount "$M" 2>/dev/null; rm -rf "$T" "$M"' EXIT
export TMPDIR=$T/tmp  # every temporary folder of the runs below lands here, to be checked
mkdir -p "$TMPDIR"
# shellcheck source=testlib.sh
source "$(dirname "$0")/testlib.sh"

# check NAME CONDITION_DESCRIPTION COMMAND...: the command (a test) succeeds.
check() {
  local name=$1 what=$2
  shift 2
  if "$@"; then ok; else fail "$name" "$what"; fi
}
# same NAME FILE CONTENT: FILE is exactly CONTENT.
same() {
  if [[ "$(cat "$2")" == "$3" ]]; then ok; else fail "$1" "$(basename "$2") is not '$3'"; fi
}
# status NAME WANT GOT
status() {
  if [[ $3 -eq $2 ]]; then ok; else fail "$1" "exit $3, expected $2"; fi
}
# Nothing but the named entries in folder $1 (no temporary files).
only() {
  local dir=$1
  shift
  local want got
  want=$(printf '%s\n' "$@" | sort)
  got=$(ls -A "$dir" | sort)
  [[ "$got" == "$want" ]]
}

printf 'alpha beta gamma delta epsilon zeta\nalpha beta gamma delta epsilon zeta\nomega psi chi phi upsilon tau\n' >"$T/in.txt"

# --- devices, FIFOs and links given as outputs are written in place, never replaced
mkdir "$T/dev"
if mknod "$T/dev/null" c 1 3 2>/dev/null && mknod "$T/dev/full" c 1 7; then
  "$ND" dedup "$T/in.txt" -o "$T/dev/null" --report "$T/dev/null" --dups "$T/dups.tsv" --quiet >"$T/out" 2>"$T/err"
  status device-output 0 $?
  check device-output "null is no longer a character device" test -c "$T/dev/null"
  same device-output-dups "$T/dups.tsv" "$(printf '2\t1\t1.0000')"
  rm -f "$T/dups.tsv"
  # A full device among the outputs: the job fails naming it, and no other output is committed.
  printf 'old kept\n' >"$T/kept.txt"
  "$ND" dedup "$T/in.txt" -o "$T/kept.txt" --report "$T/dev/full" --dups "$T/dups.tsv" --quiet >"$T/out" 2>"$T/err"
  status device-full 1 $?
  same device-full-message "$T/err" "neardup dedup: $T/dev/full: write failed: No space left on device"
  same device-full-kept "$T/kept.txt" "old kept"
  check device-full "a temporary file or dups.tsv was left" only "$T" dev in.txt kept.txt out err tmp
  check device-full "full is no longer a character device" test -c "$T/dev/full"
  rm -f "$T/kept.txt"
else
  [[ $(id -u) -ne 0 ]] || { fail device-output "mknod refused to root"; }
  echo "note: not root, the device-node cases did not run"
fi
mkfifo "$T/fifo"
cat "$T/fifo" >"$T/fifo-read" &
reader=$!
"$ND" dedup "$T/in.txt" -o "$T/fifo" --quiet >"$T/out" 2>"$T/err"
status fifo-output 0 $?
wait $reader
check fifo-output "the FIFO was replaced" test -p "$T/fifo"
same fifo-output-content "$T/fifo-read" "$(printf 'alpha beta gamma delta epsilon zeta\nomega psi chi phi upsilon tau')"
printf 'old\n' >"$T/target.txt"
ln -s target.txt "$T/link.txt"
"$ND" dedup "$T/in.txt" -o "$T/link.txt" --quiet >"$T/out" 2>"$T/err"
status symlink-output 0 $?
check symlink-output "the link was replaced" test -L "$T/link.txt"
same symlink-output-target "$T/target.txt" "$(printf 'alpha beta gamma delta epsilon zeta\nomega psi chi phi upsilon tau')"
"$ND" dedup "$T/in.txt" -o /dev/stdout --quiet >"$T/out" 2>"$T/err"
status dev-stdout 0 $?
same dev-stdout "$T/out" "$(printf 'alpha beta gamma delta epsilon zeta\nomega psi chi phi upsilon tau')"
# /dev/stdout, /dev/stderr and /dev/fd/N are the descriptors the shell opened: written in place
# (appended under >>), never replaced by a new file.
printf 'old out\n' >"$T/app.out"
printf 'old log\n' >"$T/app.log"
inode=$(stat -c %i "$T/app.out")
"$ND" dedup "$T/in.txt" -o /dev/stdout --dups /dev/stderr --quiet >>"$T/app.out" 2>>"$T/app.log"
status dev-stdout-append 0 $?
check dev-stdout-append "the file the shell opened was replaced" test "$(stat -c %i "$T/app.out")" = "$inode"
same dev-stdout-append "$T/app.out" "$(printf 'old out\nalpha beta gamma delta epsilon zeta\nomega psi chi phi upsilon tau')"
same dev-stderr-append "$T/app.log" "$(printf 'old log\n2\t1\t1.0000')"
"$ND" dedup "$T/in.txt" -o /dev/fd/7 --quiet 7>>"$T/app.out" >"$T/out" 2>"$T/err"
status dev-fd-append 0 $?
same dev-fd-append "$T/app.out" "$(printf 'old out\nalpha beta gamma delta epsilon zeta\nomega psi chi phi upsilon tau\nalpha beta gamma delta epsilon zeta\nomega psi chi phi upsilon tau')"
"$ND" dedup "$T/in.txt" -o /dev/fd/7 --quiet 7<"$T/app.log" >"$T/out" 2>"$T/err"
status dev-fd-read-only 1 $?
same dev-fd-read-only "$T/err" "neardup dedup: /dev/fd/7: descriptor 7 is open for reading only"
rm -f "$T/app.out" "$T/app.log"
rm -f "$T/fifo" "$T/fifo-read" "$T/link.txt" "$T/target.txt"

# --- outputs naming each other or an input are refused before any work, and the input survives
cp "$T/in.txt" "$T/keep.txt"
"$ND" dedup "$T/keep.txt" -o "$T/out.txt" --save-index "$T/keep.txt" --quiet >"$T/out" 2>"$T/err"
status save-index-over-input 1 $?
same save-index-over-input "$T/err" "neardup dedup: saved index $T/keep.txt is also an input ($T/keep.txt): refusing to overwrite an input"
check save-index-over-input "the input changed" cmp -s "$T/in.txt" "$T/keep.txt"
check save-index-over-input "an output was written" test ! -e "$T/out.txt"
"$ND" dedup "$T/in.txt" -o "$T/x.tsv" --dups "$T/./x.tsv" --quiet >"$T/out" 2>"$T/err"
status same-output-twice 1 $?
same same-output-twice "$T/err" "neardup dedup: dups output $T/./x.tsv and kept output $T/x.tsv name the same file: give each output its own file"
ln "$T/keep.txt" "$T/hardlink.txt"
"$ND" dedup "$T/keep.txt" -o "$T/hardlink.txt" --quiet >"$T/out" 2>"$T/err"
status output-is-input-hardlink 1 $?
check output-is-input-hardlink "the input changed" cmp -s "$T/in.txt" "$T/keep.txt"
mkdir "$T/corpus"
cp "$T/in.txt" "$T/corpus/part.txt"
"$ND" dedup "$T/corpus" -o "$T/corpus/part.txt" --quiet >"$T/out" 2>"$T/err"
status output-inside-input-folder 1 $?
check output-inside-input-folder "the input changed" cmp -s "$T/in.txt" "$T/corpus/part.txt"
mkdir "$T/folder"
"$ND" dedup "$T/in.txt" -o "$T/kept.txt" --report "$T/folder" --quiet >"$T/out" 2>"$T/err"
status output-is-folder 1 $?
same output-is-folder "$T/err" "neardup dedup: report output: $T/folder: is a folder (outputs are regular files, character devices such as /dev/null, FIFOs or standard output)"
check output-is-folder "the kept output was committed" test ! -e "$T/kept.txt"
"$ND" index build "$T/in.txt" -o "$T/in.txt" >"$T/out" 2>"$T/err"
status index-build-over-input 1 $?
check index-build-over-input "the input changed" cmp -s "$T/in.txt" "$T/keep.txt"
"$ND" idf build "$T/keep.txt" -o "$T/keep.txt" >"$T/out" 2>"$T/err"
status idf-build-over-input 1 $?
check idf-build-over-input "the input changed" cmp -s "$T/in.txt" "$T/keep.txt"
rm -rf "$T/corpus" "$T/folder" "$T/hardlink.txt"
check refused-runs "temporary files were left" only "$T" in.txt keep.txt out err tmp dev

# --- a job's outputs, the saved index and its ids included, are committed together or not at all
# Distinct documents of random words, about 170 KB: over the file-size limit (ulimit -f, in KiB) below.
awk 'BEGIN { srand(7); for (i = 0; i < 4000; i++) { line = "";
  for (w = 0; w < 6; w++) line = line sprintf("w%05d ", int(rand() * 90000)); print line } }' >"$T/many.txt"
printf 'old kept\n' >"$T/kept.txt"
(ulimit -f 64; exec "$ND" dedup "$T/many.txt" -o "$T/kept.txt" --save-index "$T/day.idx" --pairs "$T/pairs.tsv" --quiet) >"$T/out" 2>"$T/err"
status file-size-limit 1 $?
same file-size-limit "$T/err" "neardup dedup: $T/kept.txt: write failed: File too large"
same file-size-limit-kept "$T/kept.txt" "old kept"
check file-size-limit "an output, the index or a temporary file was left" only "$T" in.txt keep.txt kept.txt many.txt out err tmp dev
"$ND" dedup "$T/in.txt" -o "$T/kept.txt" --save-index "$T/day.idx" --quiet >"$T/out" 2>"$T/err"
status save-index 0 $?
check save-index "the index and its ids were not both written" test -s "$T/day.idx" -a -s "$T/day.idx.ids"
"$ND" dedup "$T/in.txt" -o "$T/new.txt" --against "$T/day.idx" --save-index "$T/day.idx" --quiet >"$T/out" 2>"$T/err"
status save-over-against 1 $?
same save-over-against "$T/err" "neardup dedup: saved index $T/day.idx is also an input ($T/day.idx): refusing to overwrite an input"
rm -f "$T/kept.txt" "$T/day.idx" "$T/day.idx.ids" "$T/new.txt"

# --- every command: a failed write of standard output is an error naming it, exit 1
printf 'the quick brown fox\nthe quick brown fox\n' >"$T/fox.txt"
"$ND" hash "$T/fox.txt" >"$T/fox.tsv"
full_cases=(
  "hash|$ND hash $T/fox.txt"
  "segment|$ND segment $T/fox.txt"
  "keywords|$ND keywords $T/fox.txt"
  "compare|$ND compare --text a --text b"
  "plan|$ND plan --n 1000"
  "version|$ND version"
  "dedup|$ND dedup $T/in.txt -o - --quiet"
)
"$ND" index build "$T/fox.tsv" -o "$T/fox.idx" 2>/dev/null
full_cases+=("index query|$ND index query $T/fox.idx $T/fox.tsv" "index pairs|$ND index pairs $T/fox.tsv"
  "index info|$ND index info $T/fox.idx")
for entry in "${full_cases[@]}"; do
  name=${entry%%|*}
  read -ra cmd <<<"${entry#*|}"
  "${cmd[@]}" >/dev/full 2>"$T/err"
  status "full-$name" 1 $?
  same "full-$name-message" "$T/err" "neardup $name: standard output: write failed: No space left on device"
done
"$ND" --help >/dev/full 2>"$T/err"
status full-help 1 $?
same full-help-message "$T/err" "neardup: standard output: write failed: No space left on device"
rm -f "$T/fox.idx" "$T/fox.tsv"

# --- a closed pipe ends quietly (killed by SIGPIPE, as Unix tools end), nothing left behind
awk 'BEGIN { srand(3); for (i = 0; i < 200000; i++) { line = "";
  for (w = 0; w < 6; w++) line = line sprintf("w%05d ", int(rand() * 90000)); print line } }' >"$T/long.txt"
for cmd in "hash $T/long.txt" "segment $T/long.txt" "dedup $T/long.txt -o - --dups $T/pipe-dups.tsv --quiet"; do
  # shellcheck disable=SC2086
  "$ND" $cmd 2>"$T/err" | head -1 >/dev/null
  got=${PIPESTATUS[0]}
  status "pipe-${cmd%% *}" 141 "$got"
  same "pipe-${cmd%% *}-quiet" "$T/err" ""
done
check pipe-dedup "an output or temporary file was left" only "$T" in.txt keep.txt many.txt long.txt fox.txt out err tmp dev

# --- a full disk: a tiny tmpfs (root, as in CI); the file-size limit above covers other machines
if mount -t tmpfs -o size=128k tmpfs "$M" 2>/dev/null; then
  printf 'old kept\n' >"$M/kept.txt"
  "$ND" dedup "$T/long.txt" -o "$M/kept.txt" --dups "$M/dups.tsv" --save-index "$M/day.idx" --quiet >"$T/out" 2>"$T/err"
  status full-disk 1 $?
  # The first output to meet the full disk is named (the index is written before the kept lines).
  check full-disk-message "the message does not name the full output" \
    grep -qxE "neardup dedup: $M/(kept.txt|dups.tsv|day.idx|day.idx.ids): write failed: No space left on device" "$T/err"
  same full-disk-kept "$M/kept.txt" "old kept"
  check full-disk "an output, the index or a temporary file was left" only "$M" kept.txt
  "$ND" hash "$T/long.txt" >"$M/hashes.tsv" 2>"$T/err"
  status full-disk-hash 1 $?
  same full-disk-hash-message "$T/err" "neardup hash: standard output: write failed: No space left on device"
  umount "$M"
else
  echo "note: mounting a tmpfs is not allowed here; the full-disk case ran as a file-size limit only"
fi

# --- the default method's spill files (--tmp-dir): removed on success, failure, SIGINT and a full disk
S=$T/spill
mkdir -p "$S"
"$ND" dedup "$T/long.txt" --dups "$T/spill-dups.tsv" --report "$T/spill.json" --tmp-dir "$S" --quiet >"$T/out" 2>"$T/err"
status spill-success 0 $?
check spill-success "the report counts no spill bytes" grep -q '"spill_bytes":[1-9]' "$T/spill.json"
check spill-success "spill files were left" only "$S"
"$ND" dedup "$T/long.txt" "$T/missing.txt" --dups "$T/spill-dups.tsv" --tmp-dir "$S" --quiet >"$T/out" 2>"$T/err"
status spill-failure 1 $?
check spill-failure "spill files were left" only "$S"
"$ND" dedup "$T/long.txt" --dups "$T/spill-dups.tsv" --tmp-dir "$T/no-such-dir" --quiet >"$T/out" 2>"$T/err"
status spill-no-dir 1 $?
same spill-no-dir "$T/err" "neardup dedup: cannot create a temporary folder in $T/no-such-dir: No such file or directory (--tmp-dir chooses where)"
# kill_spilling NAME SIGNAL: starts a job, sends it SIGNAL once its signatures are being written,
# and checks that it ended with the shell's status for the signal.
kill_spilling() {
  "$ND" dedup "$T/long.txt" --dups "$T/spill-dups.tsv" --tmp-dir "$S" --quiet >"$T/out" 2>"$T/err" &
  local pid=$!
  for _ in $(seq 200); do compgen -G "$S/neardup-*/sketches" >/dev/null && break; sleep 0.05; done
  check "$1" "the spill files never appeared" compgen -G "$S/neardup-*/sketches"
  kill -s "$2" $pid
  wait $pid
  local got=$?
  status "$1" $((128 + $(kill -l "$2"))) $got
}
kill_spilling spill-sigint INT
check spill-sigint "spill files were left" only "$S"
# kill -9 (the out-of-memory killer's signal) leaves the folder and the temporary --dups file: the
# next job in the same place removes the folder first, and says so, and the next output to the same
# target removes the file.
kill_spilling spill-kill KILL
left=$(compgen -G "$S/neardup-*")
check spill-kill "no folder was left to remove" test -f "$left/sketches"
check spill-kill "no temporary --dups file was left to remove" compgen -G "$T/spill-dups.tsv.tmp-*"
"$ND" dedup "$T/long.txt" --dups "$T/spill-dups.tsv" --tmp-dir "$S" --quiet >"$T/out" 2>"$T/err"
status spill-reclaim 0 $?
check spill-reclaim "the folder removed is not named" \
  grep -qE "^neardup dedup: warning: removed the temporary folder $left \([0-9.]+ (bytes|KB|MB|GB)\), left by an earlier job that was killed or crashed$" "$T/err"
check spill-reclaim "the killed job's folder was left" only "$S"
check spill-reclaim "the killed job's temporary --dups file was left" \
  test -z "$(compgen -G "$T/spill-dups.tsv.tmp-*")"
# A file-size limit (as a full disk) met by the spill files, which are written first.
(ulimit -f 2048; exec "$ND" dedup "$T/long.txt" --dups "$T/spill-dups.tsv" --tmp-dir "$S" --quiet) >"$T/out" 2>"$T/err"
status spill-size-limit 1 $?
check spill-size-limit "the message does not name the spill file and --tmp-dir" \
  grep -qE "^neardup dedup: temporary file $S/neardup-[A-Za-z0-9]+/(sketches|band-[0-9]+): File too large .*--tmp-dir" "$T/err"
check spill-size-limit "spill files were left" only "$S"
if mount -t tmpfs -o size=1m tmpfs "$M" 2>/dev/null; then
  "$ND" dedup "$T/long.txt" --dups "$T/spill-dups.tsv" --tmp-dir "$M" --quiet >"$T/out" 2>"$T/err"
  status spill-full-disk 1 $?
  check spill-full-disk "the message does not name the spill file" \
    grep -qE "^neardup dedup: temporary file $M/neardup-[A-Za-z0-9]+/(sketches|band-[0-9]+): No space left on device" "$T/err"
  check spill-full-disk "spill files were left" only "$M"
  umount "$M"
fi
rm -rf "$S" "$T/spill-dups.tsv" "$T/spill.json"

# --- SIGTERM and SIGINT: exit 143 / 130, temporary files and folders removed
# Standard input is a FIFO this script holds open (descriptor 8), so the command is still reading (dedup:
# copying it to $TMPDIR) when the signal comes; its writing end is closed afterwards.
hold() { rm -f "$T/stdin.fifo"; mkfifo "$T/stdin.fifo"; }
for signal in TERM INT; do
  want=$([[ $signal == TERM ]] && echo 143 || echo 130)
  hold
  "$ND" dedup - -o "$T/sig.txt" --dups "$T/sig.tsv" <"$T/stdin.fifo" >"$T/out" 2>"$T/err" &
  pid=$!
  exec 8>"$T/stdin.fifo"
  printf 'some text to copy\n' >&8
  sleep 1
  kill -s "$signal" $pid
  wait $pid
  status "signal-$signal" "$want" $?
  exec 8>&-
  rm -f "$T/stdin.fifo"
  same "signal-$signal-message" "$T/err" "neardup dedup: interrupted by SIG$signal; no output was written"
  check "signal-$signal" "outputs or temporary files were left" only "$T" in.txt keep.txt many.txt long.txt fox.txt out err tmp dev
  check "signal-$signal" "the copy of standard input was left in TMPDIR" only "$TMPDIR"
done
hold
"$ND" hash <"$T/stdin.fifo" >"$T/out" 2>"$T/err" &
pid=$!
exec 8>"$T/stdin.fifo"
sleep 0.5
kill -TERM $pid
wait $pid
status signal-hash-143 143 $?
exec 8>&-
rm -f "$T/stdin.fifo"
check signals "outputs or temporary files were left" only "$T" in.txt keep.txt many.txt long.txt fox.txt out err tmp dev

# --- documents without features: the default dedup runs on real corpora with blank and symbol lines
/usr/bin/python3 - "$ROOT/tests/data/quality/short.jsonl" "$T/poems.txt" <<'PY'
import json, sys
# Every poem line by line, a blank line between poems, and the symbol-only lines real collections have.
with open(sys.argv[1], encoding="utf-8") as f, open(sys.argv[2], "w", encoding="utf-8") as out:
    for i, line in enumerate(f):
        for verse in json.loads(line)["text"].split("\n"):
            out.write(verse + "\n")
        out.write("\n" if i % 3 else "□□□□□，□□□□□。\n\n")
PY
"$ND" dedup "$T/poems.txt" -o "$T/poems-kept.txt" --report "$T/poems.json" --quiet >"$T/out" 2>"$T/err"
status empty-default 0 $?
blank=$(grep -c -x '' "$T/poems.txt")
symbols=$(grep -c -x '□□□□□，□□□□□。' "$T/poems.txt")
# hash flags the same documents (the same features: character 5-grams), the blank and symbol lines among them.
featureless=$("$ND" hash --shingle-unit char -n 5 --weighting distinct --fold t2s --json "$T/poems.txt" | grep -c '"empty":true')
check empty-default "fewer documents without features than blank and symbol lines" test "$featureless" -ge $((blank + symbols))
check empty-default "the report does not count $featureless documents without features" \
  grep -q "\"empty_documents\":$featureless,\"empty_documents_kept\":true" "$T/poems.json"
check empty-default "blank and symbol lines were not all kept" \
  test "$(grep -c -x '' "$T/poems-kept.txt")" -eq "$blank" -a "$(grep -c -x '□□□□□，□□□□□。' "$T/poems-kept.txt")" -eq "$symbols"
"$ND" dedup "$T/poems.txt" -o "$T/poems-kept.txt" --empty drop --method simhash --quiet >"$T/out" 2>"$T/err"
status empty-drop 0 $?
check empty-drop "blank or symbol lines were kept" test "$(grep -c -x -e '' -e '□□□□□，□□□□□。' "$T/poems-kept.txt")" -eq 0
"$ND" dedup "$T/poems.txt" -o "$T/poems-kept.txt" --empty fail --quiet >"$T/out" 2>"$T/err"
status empty-fail 1 $?
first=$(grep -n -m1 -x -e '' -e '□□□□□，□□□□□。' "$T/poems.txt" | cut -d: -f1)
same empty-fail "$T/err" "neardup dedup: $T/poems.txt:$first: no features: a blank line or text of symbols only (--empty keep or drop lets it through) (--on-error skip leaves such documents out)"
# The summary says so; hash flags such documents.
"$ND" dedup "$T/poems.txt" -o "$T/poems-kept.txt" >"$T/out" 2>"$T/err"
check empty-summary "the summary does not name them" grep -qx "no features $featureless (blank or symbols only: kept, never matched)" "$T/err"
printf '□□□□□，□□□□□。\n\n' | "$ND" hash --json >"$T/out" 2>"$T/err"
same empty-hash "$T/out" "$(printf '{"id":"1","simhash":"0000000000000000","empty":true}\n{"id":"2","simhash":"0000000000000000","empty":true}')"
# English help pages: paragraphs, blank lines between pages.
/usr/bin/python3 "$ROOT/bench/corpus/help_text.py" en-US "$T/help.txt" --per paragraph --limit 300 >/dev/null 2>&1
if [[ -s "$T/help.txt" ]]; then
  awk 'NR % 7 == 0 { print ""; print "---- * ----" } { print }' "$T/help.txt" >"$T/help-blank.txt"
  "$ND" dedup "$T/help-blank.txt" -o "$T/help-kept.txt" --quiet >"$T/out" 2>"$T/err"
  status empty-help 0 $?
  "$ND" dedup "$T/help-blank.txt" -o "$T/help-kept.txt" --method simhash --quiet >"$T/out" 2>"$T/err"
  status empty-help-simhash 0 $?
else
  fail empty-help "no LibreOffice help text (libreoffice-help-en-us is installed by the test set-up)"
fi

echo "output_test: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
