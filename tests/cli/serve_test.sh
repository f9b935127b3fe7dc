#!/usr/bin/env bash
# CLI tests of `neardup serve`: a real server on a free loopback port, driven with curl. Every
# endpoint over HTTP, keep-alive, the body limit, the token, a second server kept out by the lock,
# SIGTERM (in-flight answers, exit 0, documents kept), bad addresses and malformed HTTP.
# Usage: serve_test.sh PATH/TO/neardup
set -u
ND=${1:?usage: $0 PATH/TO/neardup}
T=$(mktemp -d)
pid=""
trap '[[ -n "$pid" ]] && kill -9 "$pid" 2>/dev/null; rm -rf "$T"' EXIT
source "$(dirname "$0")/testlib.sh"

# start [--store] DIR [FLAGS...]: a server on a free port of 127.0.0.1 for store DIR (given as
# --data DIR, or --store DIR); waits until it is ready (at most 20 s) and sets pid and URL.
start() {
  local flag=--data
  if [[ $1 == --store ]]; then
    flag=--store
    shift
  fi
  local data=$1
  shift
  # Emptied first: the server opens it after the fork, and a loop that read the last server's
  # lines meanwhile would take its port.
  : >"$T/serve.err"
  "$ND" serve "$flag" "$data" --listen 127.0.0.1:0 "$@" 2>"$T/serve.err" &
  pid=$!
  port=""
  for _ in $(seq 1 200); do
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$T/serve.err")
    [[ -n "$port" ]] && grep -q "ready:" "$T/serve.err" && break
    sleep 0.1
  done
  URL="http://127.0.0.1:$port"
}
# stop: SIGTERM, and the exit code in $stopped
stop() {
  kill -TERM "$pid"
  wait "$pid"
  stopped=$?
  pid=""
}
# call NAME METHOD PATH BODY WANT_STATUS WANT_BODY_PART [CURL ARGS...]
call() {
  local name=$1 method=$2 path=$3 body=$4 want_status=$5 want=$6
  shift 6
  local got
  got=$(curl -s -o "$T/out" -w '%{http_code}' -X "$method" --data-binary "$body" \
    -H 'Content-Type: application/json' "$@" "$URL$path" 2>"$T/err")
  if [[ "$got" == "$want_status" ]] && grep -qF -- "$want" "$T/out"; then ok; else
    fail "$name" "status $got (expected $want_status), body lacks '$want'"
  fi
}

S=$T/docs.store
start "$S"
if [[ -z "$port" ]]; then fail "start" "$(cat "$T/serve.err")"; fi
call "health" GET /healthz "" 200 '{"status":"ready","documents":0,"loaded_from":"records","load_seconds":'
call "new" POST /v1/documents '{"id":"a","text":"the quick brown fox jumps over the lazy dog again and again"}' 200 \
  '{"id":"a","status":"new","stored":true,"matches":[],"matches_total":0}'
call "duplicate" POST /v1/documents '{"id":"b","text":"the quick brown fox jumps over the lazy dog again and again!"}' 200 \
  '{"id":"b","status":"duplicate","stored":false,"matches":[{"id":"a","score":1}],"matches_total":1}'
call "check only" POST '/v1/documents?insert=false' '{"id":"c","text":"nothing like the others at all, really"}' 200 \
  '"status":"new","stored":false'
call "conflict" POST /v1/documents '{"id":"a","text":"x"}' 409 '{"error":"conflict","message":"id '"'"'a'"'"' is already stored"}'
call "query" POST /v1/query '{"text":"the quick brown fox jumps over the lazy dog again and again"}' 200 \
  '{"matches":[{"id":"a","score":1}],"matches_total":1,'
call "compare" POST /v1/compare '{"a":"one two three four five six","b":"one two three four five six"}' 200 \
  '"near_duplicate":true,"score":1'
# An id with a slash and a space, percent-encoded in the path.
call "odd id" POST /v1/documents '{"id":"x/y z","text":"a document whose id needs encoding in a path"}' 200 '"stored":true'
call "get encoded" GET '/v1/documents/x%2Fy%20z' "" 200 '{"id":"x/y z","simhash":"'
call "get" GET /v1/documents/a "" 200 '"sketch":"'
# A signature made by `neardup hash --sketch` queries the server as the text does.
printf 'the quick brown fox jumps over the lazy dog again and again\n' | "$ND" hash --sketch >"$T/sig" 2>"$T/err"
sketch=$(cut -f2 "$T/sig") bands=$(cut -f3 "$T/sig")
call "query by hash --sketch" POST /v1/query "{\"sketch\":\"$sketch\",\"bands\":\"$bands\"}" 200 '{"matches":[{"id":"a","score":1}]'
"$ND" hash --sketch --mode terms </dev/null >"$T/out" 2>"$T/err"
code=$?
if [[ $code -eq 2 ]] && grep -qF -- "--mode excludes --sketch" "$T/err"; then ok; else fail "hash --sketch --mode" "exit $code: $(cat "$T/err")"; fi
call "metadata" POST /v1/documents '{"id":"m1","text":"a document with metadata beside it","metadata":{"url":"http://x/1", "n": 2}}' 200 '"stored":true'
call "metadata back" GET /v1/documents/m1 "" 200 ',"metadata":{"url":"http://x/1","n":2}}'
call "delete m1" DELETE /v1/documents/m1 "" 200 '"removed":true'
call "missing" GET /v1/documents/none "" 404 '{"error":"not_found","message":"no document with id '"'"'none'"'"'"}'
call "malformed" POST /v1/documents '{"id":' 400 '{"error":"bad_request","message":"malformed JSON'
call "missing field" POST /v1/documents '{"id":"q"}' 400 'missing field \"text\"'
call "bad utf-8" POST /v1/documents $'{"id":"q","text":"\xff"}' 400 'not valid UTF-8'
call "unknown path" GET /v2/nothing "" 404 '"error":"not_found"'
call "wrong method" PUT /v1/query "" 405 '"error":"method_not_allowed"'
# Unknown and repeated query parameters, keys given twice, bad percent-encoding: 400, named.
call "stats parameter" GET '/v1/stats?x=1' "" 400 '{"error":"bad_request","message":"unknown query parameter \"x\""}'
call "health parameter" GET '/healthz?x=1' "" 400 'unknown query parameter \"x\"'
call "parameter twice" POST '/v1/documents?insert=false&insert=true' '{"id":"tw","text":"given twice, never stored"}' 400 \
  'query parameter \"insert\" is given twice'
call "parameter twice stored nothing" GET /v1/documents/tw "" 404 'no document'
call "key twice" POST /v1/documents '{"id":"a4","text":"hello world","id":"a5"}' 400 'field \"id\" is given twice'
call "key twice stored nothing" GET /v1/documents/a4 "" 404 'no document'
call "bad percent-encoding" GET '/v1/documents/%zz' "" 400 "the request path has a '%' not followed by two hex digits"
# An absolute-form target (RFC 9112: a server must accept it).
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET http://x/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&3
timeout 5 cat <&3 >"$T/out"
exec 3<&-
if head -1 "$T/out" | grep -q "^HTTP/1.1 200" && grep -q '"status":"ready"' "$T/out"; then ok; else fail "absolute-form target" "$(head -1 "$T/out")"; fi
# Texts without features are not comparable (never near-duplicates), and no figure says otherwise;
# `neardup compare` says the same.
call "compare without features" POST /v1/compare '{"a":"","b":""}' 200 \
  '"near_duplicate":false,"score":null,"comparable":false,"reason":"neither text has features (empty, or symbols only): a text without features is never a near-duplicate","simhash_a":"0000000000000000","simhash_b":"0000000000000000","hamming_distance":null,'
if grep -qF '"jaccard_estimate":null,"shared_bands":null,' "$T/out"; then ok; else fail "compare without features: figures" "$(cat "$T/out")"; fi
call "compare one without features" POST /v1/compare '{"a":"the quick brown fox jumps","b":"!!!"}' 200 \
  '"comparable":false,"reason":"text b has no features'
"$ND" compare --text '' --text '!!!' >"$T/out" 2>"$T/err"
if [[ $? -eq 0 ]] && grep -qx "not comparable: neither text has features (empty, or symbols only): a text without features is never a near-duplicate" "$T/out" &&
  ! grep -q "near-duplicates at" "$T/out" && ! grep -q "^distance:" "$T/out"; then ok; else fail "compare CLI without features" "$(cat "$T/out" "$T/err")"; fi
"$ND" compare --text 'the quick brown fox jumps over the lazy dog' --text '!!!' --json >"$T/out" 2>"$T/err"
if grep -qF '"distance":null,"k":3,"near_duplicate":false,"comparable":false,"reason":"text B has no features' "$T/out"; then ok; else
  fail "compare CLI --json without features" "$(cat "$T/out")"; fi
# An id of 65535 bytes (the longest POST takes), of 3-byte characters, is stored, read and deleted
# through its percent-encoded path (196605 bytes); header fields stay bounded to 64 KiB.
if python3 - "$port" <<'PY'
import http.client, json, sys, urllib.parse
port = int(sys.argv[1])
def call(method, path, body=None, headers={}):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, data
ident = "\u6f22" * 21845
assert len(ident.encode()) == 65535
path = "/v1/documents/" + urllib.parse.quote(ident, safe="")
status, body = call("POST", "/v1/documents", json.dumps({"id": ident, "text": "a document with the longest id"}))
assert status == 200 and json.loads(body)["stored"], (status, body[:300])
status, body = call("GET", path)
assert status == 200 and json.loads(body)["id"] == ident, (status, body[:300])
status, body = call("DELETE", path)
assert status == 200 and json.loads(body)["removed"], (status, body[:300])
status, body = call("GET", path)
assert status == 404, (status, body[:300])
status, body = call("GET", "/healthz", headers={"X-Big-%d" % i: "a" * 2048 for i in range(33)})
assert status == 431 and json.loads(body)["error"] == "too_large", (status, body[:300])
# One field over 64 KiB, which Beast cannot hold: that connection is dropped, the server goes on.
try:
    status, body = call("GET", "/healthz", headers={"X-Big": "a" * (65 << 10)})
    assert status == 431, (status, body[:300])
except (ConnectionError, http.client.RemoteDisconnected):
    pass
status, body = call("GET", "/healthz")
assert status == 200, (status, body[:300])
PY
then ok; else fail "longest id over GET and DELETE" "see above"; fi
printf '%s\n' '{"id":"n1","text":"first line of the batch, a new text"}' '' \
  '{"id":"n2","text":"first line of the batch, a new text!"}' 'oops' >"$T/batch.ndjson"
curl -s -o "$T/out" -w '%{http_code} %{content_type}' --data-binary @"$T/batch.ndjson" "$URL/v1/batch" >"$T/status"
if [[ "$(cat "$T/status")" == "200 application/x-ndjson" && $(wc -l <"$T/out") -eq 3 ]] &&
  head -1 "$T/out" | grep -qF '{"line":1,"id":"n1","status":"new","stored":true' &&
  sed -n 2p "$T/out" | grep -qF '{"line":3,"id":"n2","status":"duplicate","stored":false,"matches":[{"id":"n1"' &&
  sed -n 3p "$T/out" | grep -qF '{"line":4,"id":"","status":400,"error":"bad_request","message":"line 4: malformed JSON'; then
  ok
else fail "batch" "$(cat "$T/status")"; fi
call "delete" DELETE /v1/documents/b "" 404 'no document'
call "delete" DELETE /v1/documents/n2 "" 404 'no document'
call "delete n1" DELETE /v1/documents/n1 "" 200 '{"id":"n1","removed":true}'
call "stats" GET /v1/stats "" 200 '"documents":2,'
call "metrics" GET /metrics "" 200 'neardup_requests_total{endpoint="/v1/documents",status="409"} 1'
# Keep-alive: two requests of one curl share a connection.
curl -sv "$URL/healthz" "$URL/healthz" >/dev/null 2>"$T/err"
if grep -q "Re-using existing connection" "$T/err"; then ok; else fail "keep-alive" "$(grep -i connection "$T/err" | head -3)"; fi
# HEAD: the GET's status and headers, no body.
curl -sI "$URL/healthz" >"$T/out" 2>"$T/err"
if grep -q "^HTTP/1.1 200" "$T/out" && grep -qi "^Content-Length: [1-9]" "$T/out" && ! grep -q "status" "$T/out"; then ok; else fail "HEAD" "$(cat "$T/out")"; fi
# Malformed HTTP: a 400, and the server goes on.
printf 'NOT HTTP AT ALL\r\n\r\n' >"$T/garbage"
exec 3<>"/dev/tcp/127.0.0.1/$port" && cat "$T/garbage" >&3 && timeout 5 head -1 <&3 >"$T/out"
exec 3<&-
if grep -q "400" "$T/out"; then ok; else fail "malformed HTTP" "$(cat "$T/out")"; fi
call "still up" GET /healthz "" 200 '"status":"ready"'

# A second server on the same store is kept out, naming why.
timeout 20 "$ND" serve --data "$S" --listen 127.0.0.1:0 >"$T/out" 2>"$T/err"
code=$?
if [[ $code -eq 1 ]] && grep -qF "in use by another process" "$T/err"; then ok; else fail "second server" "exit $code"; fi
# The same port twice: a clear error.
timeout 20 "$ND" serve --data "$T/other.store" --listen "127.0.0.1:$port" >"$T/out" 2>"$T/err"
code=$?
if [[ $code -eq 1 ]] && grep -qF "cannot listen on 127.0.0.1:$port" "$T/err"; then ok; else fail "port in use" "exit $code"; fi

# SIGTERM: exit 0, and the documents are there after a restart.
stop
if [[ $stopped -eq 0 ]] && grep -q "stopped" "$T/serve.err"; then ok; else fail "sigterm" "exit $stopped: $(cat "$T/serve.err")"; fi
# The exit wrote a snapshot, which the restart loads.
if ls "$S"/snapshot-*.ndx >/dev/null 2>&1; then ok; else fail "snapshot at exit" "$(ls "$S")"; fi
start "$S"
call "kept" GET /v1/documents/a "" 200 '{"id":"a",'
call "kept count" GET /v1/stats "" 200 '"documents":2,'
call "loaded from the snapshot" GET /healthz "" 200 '"loaded_from":"snapshot"'
call "snapshot age" GET /metrics "" 200 'neardup_snapshot_age_seconds '
call "log bytes" GET /metrics "" 200 'neardup_log_bytes '
call "write after the snapshot" POST /v1/documents '{"id":"after","text":"written after the snapshot was taken, replayed at start"}' 200 '"stored":true'
call "delete after the snapshot" DELETE /v1/documents/a "" 200 '"removed":true'
kill -9 "$pid"
wait "$pid" 2>/dev/null
pid=""
# --store DIR is the same embedded store as --data DIR.
start --store "$S"
call "replayed insert" GET /v1/documents/after "" 200 '{"id":"after",'
call "replayed delete" GET /v1/documents/a "" 404 'no document'
call "replayed count" GET /v1/stats "" 200 '"documents":2,'
call "embedded backend" GET /healthz "" 200 '"backend":"embedded"}'
stop

# Connections beyond --max-connections wait to be accepted, and are served once one closes.
start "$T/conn.store" --max-connections 2
exec 5<>"/dev/tcp/127.0.0.1/$port"
exec 6<>"/dev/tcp/127.0.0.1/$port"
sleep 0.2
curl -s --max-time 1 -o /dev/null "$URL/healthz"
code=$?
if [[ $code -eq 28 ]]; then ok; else fail "third connection waits" "curl exit $code"; fi
curl -s --max-time 10 -o "$T/out" "$URL/healthz" &
waiter=$!
sleep 0.3
exec 5<&-
if wait "$waiter" && grep -q '"status":"ready"' "$T/out"; then ok; else fail "served once one closes" "$(cat "$T/out")"; fi
exec 6<&-
stop

# The body limit, and the token.
printf 's3cret\n' >"$T/token"
start "$T/token.store" --token-file "$T/token" --max-body-bytes 100 --method simhash --store-text \
  --timeout 1 --keep-alive 1
call "no token" POST /v1/query '{"text":"x"}' 401 '"error":"unauthorized"'
call "wrong token" POST /v1/query '{"text":"x"}' 401 '"error":"unauthorized"' -H 'Authorization: Bearer s3cre'
call "token" POST /v1/query '{"text":"x"}' 200 '{"matches":[]' -H 'Authorization: Bearer s3cret'
call "health needs no token" GET /healthz "" 200 '"status":"ready"'
call "text kept" POST /v1/documents '{"id":"t","text":"kept text"}' 200 '"stored":true' -H 'Authorization: Bearer s3cret'
call "text back" GET /v1/documents/t "" 200 '"text":"kept text"}' -H 'Authorization: Bearer s3cret'
# A client that stops in the middle of its body is dropped after --timeout (1 s), and an idle
# keep-alive connection is closed after --keep-alive (1 s); the server answers the others meanwhile.
exec 4<>"/dev/tcp/127.0.0.1/$port"
printf 'POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{"te' >&4
call "answers while one is slow" GET /healthz "" 200 '"status":"ready"'
if timeout 5 cat <&4 >/dev/null; then ok; else fail "slow client dropped" "still open after 5 s"; fi
exec 4<&-
exec 4<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n' >&4
if timeout 5 cat <&4 >"$T/out" && grep -q '"status":"ready"' "$T/out"; then ok; else fail "idle keep-alive closed" "$(cat "$T/out")"; fi
exec 4<&-
call "too large" POST /v1/documents "{\"id\":\"big\",\"text\":\"$(head -c 200 /dev/zero | tr '\0' a)\"}" 413 \
  '"error":"too_large"' -H 'Authorization: Bearer s3cret'
stop

# stop_timed: SIGTERM (twice with "twice": the second 3 s after the first, once the server is seen
# still up) and the seconds until the server ended in $took (a server still up after 30 s is killed).
stop_timed() {
  local began guard
  began=$(date +%s%N)
  ( sleep 30; kill -9 "$pid" 2>/dev/null ) &
  guard=$!
  kill -TERM "$pid"
  if [[ ${1:-} == twice ]]; then
    sleep 3
    if kill -0 "$pid" 2>/dev/null; then still_up=1; else still_up=0; fi
    kill -TERM "$pid"
  fi
  wait "$pid"
  stopped=$?
  took=$(( ($(date +%s%N) - began) / 1000000000 ))
  kill "$guard" 2>/dev/null
  wait "$guard" 2>/dev/null
  pid=""
}
# SIGTERM while a client is in the middle of sending its request: it gets a short grace (2 s), not
# --timeout (60 s); the server exits 0.
start "$T/stall.store" --timeout 60
exec 4<>"/dev/tcp/127.0.0.1/$port"
printf 'POST /v1/documents HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"id":' >&4
sleep 0.5
stop_timed
exec 4<&-
if [[ $stopped -eq 0 && $took -lt 10 ]]; then ok; else fail "stop with a stalled client" "exit $stopped after $took s"; fi
# A request being answered is waited for (a batch whose client does not read its answer, here), and
# a second signal closes it at once; the store is closed and what was stored is kept.
start "$T/stall.store" --timeout 60 --fsync never
python3 -c 'import sys; sys.stdout.write("not json\n" * 60000)' >"$T/unread.ndjson"
python3 - "$port" "$T/unread.ndjson" <<'PY' &
import socket, sys, time
body = open(sys.argv[2], "rb").read()
client = socket.socket()
client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
client.connect(("127.0.0.1", int(sys.argv[1])))
client.sendall(b"POST /v1/batch HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
time.sleep(60)  # never reads the answer
PY
reader=$!
sleep 2
stop_timed twice
kill "$reader" 2>/dev/null
wait "$reader" 2>/dev/null
if [[ $still_up -eq 1 && $stopped -eq 0 && $took -lt 10 ]] &&
  grep -qF "again: closing every connection now, then the store" "$T/serve.err"; then ok; else
  fail "second signal" "up after the first: $still_up, exit $stopped after $took s: $(cat "$T/serve.err")"; fi
start "$T/stall.store"
call "stored before the signals" GET /v1/stats "" 200 '"documents":0,'
stop

# A disk-resident store has no snapshots: said once at the start, never tried.
printf 'one two three four five six seven\n' | "$ND" index add "$T/disk.store" --disk-resident --fsync never >/dev/null 2>&1
start "$T/disk.store" --snapshot-every 1
call "disk-resident store served" POST /v1/documents '{"id":"d2","text":"another text to store on disk"}' 200 '"stored":true'
sleep 2.5
stop
if [[ $stopped -eq 0 ]] && ! grep -q "snapshot" <(grep -v "no snapshots" "$T/serve.err") &&
  [[ $(grep -c "is disk-resident (its index is the database): no snapshots (--snapshot-every does not apply)" "$T/serve.err") -eq 1 ]]; then
  ok
else fail "disk-resident snapshots" "$(cat "$T/serve.err")"; fi

# A damaged snapshot is said on stderr at the start (and in /healthz).
start "$T/snap.store"
call "before the snapshot" POST /v1/documents '{"id":"s1","text":"a text kept in the snapshot written at exit"}' 200 '"stored":true'
stop
snapshot=$(ls "$T/snap.store"/snapshot-*.ndx)
printf 'damaged' | dd of="$snapshot" bs=1 seek=40 conv=notrunc 2>/dev/null
start "$T/snap.store"
if grep -q "neardup serve: snapshot not used (the index was rebuilt from the records): " "$T/serve.err"; then ok; else
  fail "damaged snapshot on stderr" "$(cat "$T/serve.err")"; fi
call "damaged snapshot in health" GET /healthz "" 200 '"loaded_from":"records"'
call "damaged snapshot, document kept" GET /v1/documents/s1 "" 200 '"id":"s1"'
stop

# An IPv6 address is written in brackets in the URL logged.
"$ND" serve --data "$T/v6.store" --listen '[::1]:0' 2>"$T/v6.err" &
pid=$!
for _ in $(seq 1 200); do grep -q "ready:\|cannot listen" "$T/v6.err" && break; sleep 0.1; done
if grep -q "cannot listen" "$T/v6.err"; then
  echo "skipped: no IPv6 loopback"
  wait "$pid"
  pid=""
else
  v6port=$(sed -n 's|.*listening on http://\[::1\]:\([0-9]*\)/.*|\1|p' "$T/v6.err")
  if [[ -n "$v6port" ]] && curl -sg "http://[::1]:$v6port/healthz" | grep -q '"status":"ready"'; then ok; else
    fail "IPv6 URL" "$(cat "$T/v6.err")"; fi
  stop
fi

# Bad options and files: usage errors before anything is opened.
timeout 20 "$ND" serve --data "$T/x.store" --listen nowhere >"$T/out" 2>"$T/err"
code=$?
if [[ $code -eq 2 ]] && grep -qF "neardup serve: usage: --listen takes HOST:PORT" "$T/err"; then ok; else fail "bad listen" "exit $code"; fi
timeout 20 "$ND" serve --data "$T/x.store" --token-file "$T/no-such-token" >"$T/out" 2>"$T/err"
code=$?
if [[ $code -eq 1 ]] && grep -qF "no-such-token: cannot open the token file" "$T/err"; then ok; else fail "missing token file" "exit $code"; fi
# A file that is there but unusable is an error of the input, as a missing one is (exit 1).
: >"$T/empty-token"
timeout 20 "$ND" serve --data "$T/x.store" --token-file "$T/empty-token" >"$T/out" 2>"$T/err"
code=$?
if [[ $code -eq 1 ]] && grep -qF "empty-token: the token file is empty" "$T/err"; then ok; else fail "empty token file" "exit $code"; fi
# A setting of the other method is a usage error, naming it (it would be ignored).
timeout 20 "$ND" serve --data "$T/x.store" --listen 127.0.0.1:0 -k 2 >"$T/out" 2>"$T/err"
code=$?
if [[ $code -eq 2 ]] && grep -qF "neardup serve: usage: -k applies to the simhash method only, and the new store $T/x.store would be of the accurate method" "$T/err"; then ok; else
  fail "-k of an accurate store" "exit $code: $(cat "$T/err")"; fi
timeout 20 "$ND" serve --data "$T/x.store" --store "$T/x.store" >"$T/out" 2>"$T/err"
code=$?
if [[ $code -eq 2 ]] && grep -qF "neardup serve: usage: --data and --store exclude each other" "$T/err"; then ok; else fail "--data and --store" "exit $code"; fi
timeout 20 "$ND" serve >"$T/out" 2>"$T/err"
code=$?
if [[ $code -eq 2 ]] && grep -qF "neardup serve: usage: give --data DIR or --store LOCATION" "$T/err"; then ok; else fail "no store" "exit $code"; fi
timeout 20 "$ND" serve --store "$T/x.store" --redis-timeout 1 >"$T/out" 2>"$T/err"
code=$?
if [[ $code -eq 2 ]] && grep -qF "usage: the --redis-* options go with --store redis://" "$T/err"; then ok; else fail "redis flag for a directory" "exit $code"; fi
timeout 20 "$ND" serve --store "rediss://localhost:6379" >"$T/out" 2>"$T/err"
code=$?
if [[ $code -eq 1 ]] && grep -qF "bad store location 'rediss://localhost:6379': unknown scheme 'rediss'" "$T/err"; then ok; else fail "bad scheme" "exit $code"; fi
[[ ! -e "$T/x.store" ]] && ok || fail "nothing created" "$T/x.store exists"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
