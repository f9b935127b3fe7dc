#!/usr/bin/env bash
# End-to-end benchmark of `neardup serve` on loopback, with wrk (Debian) as the load generator on
# the same machine. For a store of N documents (built once with `neardup index add`, kept in WORK):
#   restart   seconds from the start of the server to its "ready" line (the store's load: from the
#             snapshot the previous run wrote at its exit, or, the first time, from every record)
#   memory    the server's resident memory per stored document after the load
#   query     POST /v1/query with a stored document's signature (sketch and bands, or simhash):
#             requests/s and latency percentiles (wrk --latency)
#   insert    POST /v1/documents, check-and-insert of 1 KB Chinese texts (accurate method only)
# Usage: bench/serve/run.sh NEARDUP WORK [--documents N] [--method accurate|simhash]
#        [--connections C] [--seconds S] [--runs R] [--sketches-on-disk] [--settle S]
# --settle S (default 20): seconds between the server's start and the query load. The previous run's
# exit frees several GB (its memory, the snapshot file it replaced); on a VM that reports freed
# memory to its host (virtio-balloon free page reporting, as on the machine of bench/README.md)
# every process then sees latencies of 10-20 ms at p99 for some seconds, a running server as much as
# a new one (freeing 4 GB of page cache under a running server: p99 2.5 -> 15 ms). 0: no pause.
set -euo pipefail
ND=${1:?usage: $0 NEARDUP WORK [options]}
WORK=${2:?usage: $0 NEARDUP WORK [options]}
shift 2
documents=1000000 method=accurate connections=32 seconds=10 runs=3 settle=20 extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --documents) documents=$2; shift 2 ;;
    --method) method=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --sketches-on-disk) extra+=(--sketches-on-disk); shift ;;
    --settle) settle=$2; shift 2 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$WORK"
docs=$WORK/docs-$documents.txt
store=$WORK/store-$method-$documents
if [[ ! -s "$docs" ]]; then
  echo "generating $documents documents in $docs" >&2
  # 40-120 words a document from a vocabulary of 50,000 random words, word r drawn with
  # probability about 1/r (Zipf).
  awk -v n="$documents" 'BEGIN {
    srand(42)
    for (i = 0; i < 50000; i++) {
      w = ""; l = 2 + int(rand() * 8)
      for (j = 0; j < l; j++) w = w sprintf("%c", 97 + int(rand() * 26))
      words[i] = w
    }
    lv = log(50000)
    for (d = 0; d < n; d++) {
      k = 40 + int(rand() * 81); line = words[int(exp(rand() * lv)) - 1]
      for (j = 1; j < k; j++) line = line " " words[int(exp(rand() * lv)) - 1]
      print line
    }
  }' >"$docs"
fi
if [[ ! -d "$store" ]]; then
  echo "loading $documents documents into $store" >&2
  start=$(date +%s.%N)
  "$ND" index add "$store" "$docs" --method "$method" --always --fsync never --batch 4096 >/dev/null
  echo "load: $(echo "$(date +%s.%N) - $start" | bc) s" >&2
fi

port=$((20000 + RANDOM % 20000))
for run in $(seq 1 "$runs"); do
  start=$(date +%s.%N)
  "$ND" serve --data "$store" --listen "127.0.0.1:$port" "${extra[@]}" 2>"$WORK/serve.err" &
  pid=$!
  until grep -q "ready:" "$WORK/serve.err"; do
    if ! kill -0 "$pid" 2>/dev/null; then cat "$WORK/serve.err" >&2; exit 1; fi
    sleep 0.05
  done
  ready=$(echo "$(date +%s.%N) - $start" | bc)
  rss=$(awk '/VmRSS/ {printf "%d", $2 * 1024}' "/proc/$pid/status")
  health=$(curl -s "http://127.0.0.1:$port/healthz")
  stored=$(echo "$health" | sed 's/.*"documents":\([0-9]*\).*/\1/')
  from=$(echo "$health" | sed 's/.*"loaded_from":"\([a-z]*\)".*/\1/')
  echo "run $run: restart $ready s for $stored documents (loaded from $from); memory $(echo "scale=1; $rss / $stored" | bc) bytes/document (resident $rss)"
  sleep "$settle"
  curl -s "http://127.0.0.1:$port/v1/documents/1" >"$WORK/doc.json"
  /usr/bin/python3 - "$WORK/doc.json" "$method" >"$WORK/query.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
if sys.argv[2] == "simhash":
    print(json.dumps({"simhash": doc["simhash"]}))
else:
    print(json.dumps({"sketch": doc["sketch"], "bands": doc["bands"]}))
EOF
  QUERY_BODY=$WORK/query.json wrk -t1 -c"$connections" -d"${seconds}s" --latency -s "$here/query.lua" \
    "http://127.0.0.1:$port/v1/query" >"$WORK/wrk-query.txt"
  echo "run $run: query $(awk '/Requests\/sec/ {print $2}' "$WORK/wrk-query.txt") requests/s," \
    "p50 $(awk '$1 == "50%" {print $2}' "$WORK/wrk-query.txt"), p99 $(awk '$1 == "99%" {print $2}' "$WORK/wrk-query.txt")," \
    "non-2xx: $(awk '/Non-2xx/ {print $5}' "$WORK/wrk-query.txt")"
  if [[ "$method" == accurate ]]; then
    wrk -t1 -c"$connections" -d"${seconds}s" --latency -s "$here/insert_chinese.lua" \
      "http://127.0.0.1:$port/v1/documents" >"$WORK/wrk-insert.txt"
    echo "run $run: check-and-insert $(awk '/Requests\/sec/ {print $2}' "$WORK/wrk-insert.txt") requests/s," \
      "p50 $(awk '$1 == "50%" {print $2}' "$WORK/wrk-insert.txt"), p99 $(awk '$1 == "99%" {print $2}' "$WORK/wrk-insert.txt")," \
      "non-2xx: $(awk '/Non-2xx/ {print $5}' "$WORK/wrk-insert.txt")"
  fi
  start=$(date +%s.%N)
  kill -TERM "$pid"
  wait "$pid"
  echo "run $run: stop (with its snapshot) $(echo "$(date +%s.%N) - $start" | bc) s"
done
