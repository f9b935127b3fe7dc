#!/usr/bin/env bash
# CLI tests of `neardup serve --store redis-cluster://...`: two servers sharing one index in a local
# Redis Cluster (scripts/redis-cluster.sh, 3 masters + 3 replicas, with a password). What one server
# stores the other finds, gets and deletes with the same answers; near-duplicates posted at the same
# moment to both are stored once; a Redis-backed server answers 340 real documents (the checked-in
# collections of tests/data/quality) exactly as an embedded store does, for both methods; bad
# locations, passwords and flags are refused quickly with clear messages. Skipped (exit 77) when
# redis-server is not installed.
# Usage: serve_redis_test.sh PATH/TO/neardup [BASE_PORT]   (the cluster takes BASE_PORT..+5)
set -u
ND=${1:?usage: $0 PATH/TO/neardup [BASE_PORT]}
BASE=${2:-7300}
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  echo "SKIP: redis-server or redis-cli is not installed (Debian: apt-get install redis-server)"
  exit 77
fi
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
declare -A pid url
cleanup() {
  local p
  for p in "${pid[@]}"; do kill -9 "$p" 2>/dev/null; done
  for p in "${pid[@]}"; do wait "$p" 2>/dev/null; done
  [[ -f "$T/cluster/cluster.env" ]] && "$ROOT/scripts/redis-cluster.sh" stop --dir "$T/cluster" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
source "$(dirname "$0")/testlib.sh"

printf 'neardup-test-pass\n' >"$T/pass"
printf 'not-the-password\n' >"$T/wrong"
if ! "$ROOT/scripts/redis-cluster.sh" start --dir "$T/cluster" --port "$BASE" --password-file "$T/pass" \
  >"$T/seeds" 2>"$T/cluster.err"; then
  echo "FAIL: the Redis Cluster did not start on ports $BASE..$((BASE + 5)):"
  tail -5 "$T/cluster.err"
  exit 1
fi
SEEDS=$(tail -1 "$T/seeds")
REDIS=(--redis-password-file "$T/pass" --redis-timeout 2)

# serve NAME ARGS...: a server on a free port of 127.0.0.1; waits until it is ready (at most 20 s)
# and sets pid[NAME] and url[NAME].
serve() {
  local name=$1 port=""
  shift
  : >"$T/$name.err"
  "$ND" serve --listen 127.0.0.1:0 "$@" 2>"$T/$name.err" &
  pid[$name]=$!
  for _ in $(seq 1 200); do
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$T/$name.err")
    [[ -n "$port" ]] && grep -q "ready:" "$T/$name.err" && break
    kill -0 "${pid[$name]}" 2>/dev/null || break
    sleep 0.1
  done
  url[$name]="http://127.0.0.1:$port"
  grep -q "ready:" "$T/$name.err" || fail "start $name" "$(cat "$T/$name.err")"
}
# stop NAME: SIGTERM; the exit code in $stopped.
stop() {
  kill -TERM "${pid[$1]}"
  wait "${pid[$1]}"
  stopped=$?
  unset "pid[$1]"
}
# call NAME SERVER METHOD PATH BODY WANT_STATUS WANT_BODY_PART: the body in $T/out.
call() {
  local name=$1 server=$2 method=$3 path=$4 body=$5 want_status=$6 want=$7 got
  got=$(curl -s -o "$T/out" -w '%{http_code}' -X "$method" --data-binary "$body" \
    "${url[$server]}$path" 2>"$T/err")
  if [[ "$got" == "$want_status" ]] && grep -qF -- "$want" "$T/out"; then ok; else
    fail "$name" "status $got (expected $want_status), body lacks '$want'"
  fi
}
# same NAME FILE_A FILE_B: the two answers are equal byte for byte.
same() {
  if [[ -s "$2" ]] && cmp -s "$2" "$3"; then ok; else
    fail "$1" "answers differ: $(diff "$2" "$3" | head -4)"
  fi
}
# refused NAME WANT_CODE WANT_MESSAGE_PART MAX_SECONDS SERVE_ARGS...: serve exits with WANT_CODE
# within MAX_SECONDS, saying WANT_MESSAGE_PART on stderr.
refused() {
  local name=$1 want_code=$2 want=$3 most=$4 code start=$SECONDS
  shift 4
  timeout 30 "$ND" serve --listen 127.0.0.1:0 "$@" >"$T/out" 2>"$T/err"
  code=$?
  if [[ $code -eq $want_code ]] && grep -qF -- "$want" "$T/err" && ((SECONDS - start <= most)); then
    ok
  else
    fail "$name" "exit $code (expected $want_code) after $((SECONDS - start)) s"
  fi
}

# ---- Bad locations, passwords and flags: refused quickly, naming the problem.
refused "nothing listens" 1 "redis://127.0.0.1:1: no Redis seed answered: redis 127.0.0.1:1: connect" 10 \
  --store redis://127.0.0.1:1 --redis-timeout 1
refused "unknown scheme" 1 "bad store location 'rediss://x': unknown scheme 'rediss'" 2 --store rediss://x
refused "no port" 1 "bad store location 'redis://host': 'host' has no :PORT" 2 --store redis://host
refused "wrong password" 1 "redis-cluster://127.0.0.1:$BASE/testprefix: redis 127.0.0.1:$BASE refused AUTH: WRONGPASS" 5 \
  --store "redis-cluster://127.0.0.1:$BASE/testprefix" --redis-password-file "$T/wrong" --redis-timeout 1
refused "no password" 1 "(give the password with --redis-password-file" 5 --store "redis-cluster://127.0.0.1:$BASE/testprefix" --redis-timeout 1
refused "user without password" 2 "usage: --redis-user needs --redis-password-file" 2 \
  --store "redis-cluster://127.0.0.1:$BASE/testprefix" --redis-user bob
refused "missing password file" 1 "$T/none: cannot open the Redis password file" 2 \
  --store "redis-cluster://127.0.0.1:$BASE/testprefix" --redis-password-file "$T/none"
refused "redis:// to a cluster" 1 "is a Redis Cluster node (cluster_enabled:1): use a redis-cluster://" 5 \
  --store "redis://127.0.0.1:$BASE/testprefix" "${REDIS[@]}"
refused "both --data and --store" 2 "usage: --data and --store exclude each other" 2 \
  --data "$T/x.store" --store "redis-cluster://127.0.0.1:$BASE"
refused "neither --data nor --store" 2 "usage: give --data DIR or --store LOCATION" 2
refused "redis flags with --data" 2 "usage: the --redis-* options go with --store redis://" 2 \
  --data "$T/x.store" --redis-wait 1
[[ ! -e "$T/x.store" ]] && ok || fail "nothing created" "$T/x.store exists"

# ---- Two servers, one index: what A stores, B finds, gets and deletes.
LOCATION="redis-cluster://127.0.0.1:$BASE/testprefix"
serve A --store "$LOCATION" "${REDIS[@]}" --store-text
serve B --store "redis-cluster://$SEEDS/testprefix" "${REDIS[@]}" --store-text --redis-user default
call "health" A GET /healthz "" 200 '{"status":"ready","documents":0,"backend":"redis-cluster","remote_memory_bytes":'
FOX="the quick brown fox jumps over the lazy dog again and again, then sleeps in the sun"
call "new through A" A POST /v1/documents "{\"id\":\"a\",\"text\":\"$FOX\",\"metadata\":{\"n\":1}}" 200 \
  '{"id":"a","status":"new","stored":true,"matches":[],"matches_total":0}'
call "duplicate through B" B POST /v1/documents "{\"id\":\"b\",\"text\":\"$FOX!\"}" 200 \
  '{"id":"b","status":"duplicate","stored":false,"matches":[{"id":"a","score":1}],"matches_total":1}'
call "conflict through B" B POST /v1/documents '{"id":"a","text":"something else entirely"}' 409 '"error":"conflict"'
for server in A B; do
  call "query through $server" $server POST /v1/query "{\"text\":\"$FOX\"}" 200 '{"matches":[{"id":"a","score":1}],"matches_total":1,'
  cp "$T/out" "$T/query.$server"
  call "get through $server" $server GET /v1/documents/a "" 200 '{"id":"a","simhash":"'
  cp "$T/out" "$T/get.$server"
done
same "same query answers" "$T/query.A" "$T/query.B"
same "same get answers" "$T/get.A" "$T/get.B"
if grep -qF '"sketch":"' "$T/get.B" && ! grep -qF '"bands"' "$T/get.B" &&
  grep -qF "\"text\":\"$FOX\",\"metadata\":{\"n\":1}}" "$T/get.B"; then ok; else
  fail "get without bands, with text and metadata" "$(cat "$T/get.B")"
fi
call "stats through B" B GET /v1/stats "" 200 '"documents":1,'
if grep -qF '"backend":"redis-cluster","remote_memory_bytes":' "$T/out" && ! grep -qF '"fsync"' "$T/out"; then ok; else
  fail "stats name the backend" "$(cat "$T/out")"
fi
call "metrics" A GET /metrics "" 200 'neardup_backend_info{backend="redis-cluster"} 1'
grep -q '^neardup_remote_memory_bytes [1-9]' "$T/out" && ok || fail "remote memory metric" "$(grep remote "$T/out")"
call "delete through B" B DELETE /v1/documents/a "" 200 '{"id":"a","removed":true}'
call "gone through A" A GET /v1/documents/a "" 404 "no document with id 'a'"
call "not found through A" A POST /v1/query "{\"text\":\"$FOX\"}" 200 '{"matches":[],"matches_total":0,'
call "deleted twice" A DELETE /v1/documents/a "" 404 'no document'
# Documents posted in turn to A and B answer as they do from one embedded store.
serve E --data "$T/turns.store"
python3 - "$ROOT/tests/data/quality/long.jsonl" "$T/turns" <<'EOF'
import json, sys
with open(sys.argv[1], encoding="utf-8") as f:
    rows = [json.loads(line) for line in f]
# Passages 0..19, each followed by its edited copy (rows 70..89).
rows = [row for i in range(20) for row in (rows[i], rows[70 + i])]
for i, row in enumerate(rows):
    with open("%s.%d" % (sys.argv[2], i), "w", encoding="utf-8") as out:
        out.write(json.dumps({"id": "t" + row["id"], "text": row["text"]}, ensure_ascii=False))
EOF
: >"$T/turns.redis"
: >"$T/turns.embedded"
for i in $(seq 0 39); do
  server=$([[ $((i % 2)) -eq 0 ]] && echo A || echo B)
  curl -s --data-binary @"$T/turns.$i" "${url[$server]}/v1/documents" >>"$T/turns.redis"
  curl -s --data-binary @"$T/turns.$i" "${url[E]}/v1/documents" >>"$T/turns.embedded"
done
same "posted in turn to A and B" "$T/turns.embedded" "$T/turns.redis"
grep -q '"status":"duplicate"' "$T/turns.redis" && ok || fail "turns hold duplicates" "$(head -3 "$T/turns.redis")"

# ---- Near-duplicates posted at the same moment to A and B: exactly one is stored, the other
# names it.
race_failures=0
for round in $(seq 1 15); do
  text="race $round: $(for _ in $(seq 1 30); do printf 'w%d ' $RANDOM; done)"
  curl -s "${url[A]}/v1/documents" --data-binary "{\"id\":\"ra$round\",\"text\":\"$text\"}" >"$T/race.A" &
  first=$!
  curl -s "${url[B]}/v1/documents" --data-binary "{\"id\":\"rb$round\",\"text\":\"$text!\"}" >"$T/race.B" &
  second=$!
  wait "$first" "$second"
  stored=$(cat "$T/race.A" "$T/race.B" | grep -c '"status":"new","stored":true')
  if grep -q '"stored":true' "$T/race.A"; then winner=ra$round loser=$T/race.B; else winner=rb$round loser=$T/race.A; fi
  if [[ $stored -ne 1 ]] || ! grep -qF "\"status\":\"duplicate\",\"stored\":false,\"matches\":[{\"id\":\"$winner\"" "$loser"; then
    race_failures=$((race_failures + 1))
    echo "  race $round: $(cat "$T/race.A") $(cat "$T/race.B")"
  fi
done
[[ $race_failures -eq 0 ]] && ok || fail "one of each race stored" "$race_failures of 15 rounds wrong"

# ---- A Redis-backed server answers as an embedded store: 200 poems (the accurate method) and 140
# passages (simhash), each with its near-duplicates, as a batch (check-and-insert), then queried.
python3 - "$ROOT/tests/data/quality" "$T" <<'EOF'
import json, sys
for name, count in (("short", 200), ("long", 140)):
    with open("%s/%s.jsonl" % (sys.argv[1], name), encoding="utf-8") as f, \
         open("%s/%s.ndjson" % (sys.argv[2], name), "w", encoding="utf-8") as out:
        for line in list(f)[:count]:
            row = json.loads(line)
            out.write(json.dumps({"id": row["id"], "text": row["text"]}, ensure_ascii=False) + "\n")
EOF
stop A
stop B
stop E
compare() {  # compare NAME CORPUS FLAGS...
  local name=$1 corpus=$2 server
  shift 2
  serve R --store "redis-cluster://$SEEDS/compare-$name" "${REDIS[@]}" "$@"
  serve E --data "$T/compare-$name.store" "$@"
  for server in R E; do
    curl -s --data-binary @"$T/$corpus.ndjson" "${url[$server]}/v1/batch" >"$T/insert.$server"
    curl -s --data-binary @"$T/$corpus.ndjson" "${url[$server]}/v1/batch?insert=false" >"$T/query.$server"
    for id in 0 3 19 64 99; do
      curl -s "${url[$server]}/v1/documents/$id" | sed 's/,"bands":"[0-9a-f]*"//'
    done >"$T/get.$server"
    curl -s "${url[$server]}/v1/stats" | grep -o '"documents":[0-9]*,"empty_documents":[0-9]*' >"$T/stats.$server"
  done
  same "$name: check-and-insert answers" "$T/insert.E" "$T/insert.R"
  same "$name: query answers" "$T/query.E" "$T/query.R"
  same "$name: stored signatures" "$T/get.E" "$T/get.R"
  same "$name: document counts" "$T/stats.E" "$T/stats.R"
  if [[ $(grep -c '"status":"duplicate"' "$T/insert.R") -ge 20 ]]; then ok; else
    fail "$name: near-duplicates found" "$(grep -c '"status":"duplicate"' "$T/insert.R") duplicates"
  fi
  stop E
  stop R
  if [[ $stopped -eq 0 ]] && grep -q "stopped" "$T/R.err" && ! grep -q "snapshot" "$T/R.err"; then ok; else
    fail "$name: SIGTERM" "exit $stopped: $(cat "$T/R.err")"
  fi
}
compare accurate short
compare simhash long --method simhash -k 3

# ---- A restart takes the index's own settings; other settings are refused, naming them.
serve R --store "redis-cluster://$SEEDS/compare-simhash" "${REDIS[@]}"
call "reopened" R GET /v1/stats "" 200 '"method":"simhash"'
stop R
refused "other settings" 1 "settings differ (they are chosen when an index is created): method accurate given, simhash in the index" 5 \
  --store "redis-cluster://$SEEDS/compare-simhash" "${REDIS[@]}" --method accurate

# ---- Redis loses the index while a server uses it (FLUSHALL: as a restart without persistence):
# writes are refused with 503 and write nothing (no keys of a half index that nothing could open);
# a batch answers every line; a server started again makes the index anew.
serve L --store "redis-cluster://$SEEDS/lost" "${REDIS[@]}"
call "lost: before" L POST /v1/documents '{"id":"l1","text":"An index that Redis will lose in a moment."}' 200 '"stored":true'
for port in $(seq "$BASE" $((BASE + 5))); do
  redis-cli -p "$port" -a neardup-test-pass --no-auth-warning flushall >/dev/null 2>&1
done
call "lost: refused" L POST /v1/documents '{"id":"l2","text":"Written after Redis lost the index."}' 503 "the index's meta key lost:{meta} is gone"
keys=0
for port in $(seq "$BASE" $((BASE + 5))); do
  keys=$((keys + $(redis-cli -p "$port" -a neardup-test-pass --no-auth-warning dbsize 2>/dev/null || echo 0)))
done
if [[ $keys -eq 0 ]]; then ok; else fail "lost: nothing written" "$keys keys in the cluster"; fi
printf '{"id":"b%d","text":"batch line %d of a lost index"}\n' $(seq 1 600 | sed 'p') >"$T/lost.ndjson"
curl -s --data-binary @"$T/lost.ndjson" "${url[L]}/v1/batch" >"$T/lost.out"
if [[ $(grep -c '"status":503' "$T/lost.out") -eq 600 && $(wc -l <"$T/lost.out") -eq 600 ]]; then ok; else
  fail "lost: every batch line answered" "$(wc -l <"$T/lost.out") lines: $(head -c 300 "$T/lost.out")"
fi
stop L
serve L --store "redis-cluster://$SEEDS/lost" "${REDIS[@]}"
call "lost: made anew" L POST /v1/documents '{"id":"l3","text":"The index made again after the loss."}' 200 '"stored":true'
stop L

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
