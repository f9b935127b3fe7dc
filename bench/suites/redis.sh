#!/usr/bin/env bash
# The Redis backend of the index store on a local Redis Cluster of 3 masters and 3 replicas
# (scripts/redis-cluster.sh), started here and stopped at the end: pipelined bulk insert of
# REDIS_DOCS documents (default 1,000,000) signed beforehand, Redis used_memory per document, and
# query latency from 2 client processes; 3 runs per method, each on a fresh prefix, medians printed.
# Usage: bench/suites/redis.sh BUILD_DIR DATA_DIR
set -euo pipefail
build=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
docs=${REDIS_DOCS:-1000000}
port=${REDIS_PORT:-7800}
dir=$(mktemp -d)
trap '"$root/scripts/redis-cluster.sh" stop --dir "$dir" >/dev/null 2>&1; rm -rf "$dir"' EXIT
seeds=$("$root/scripts/redis-cluster.sh" start --dir "$dir" --port "$port" 2>/dev/null | tail -1)
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for method in accurate simhash; do
  : >"$dir/results"
  for run in 1 2 3; do
    "$build/bench/redis_bench" "redis-cluster://$seeds/bench-$method-$run" --docs "$docs" \
      --queries 40000 --clients 2 --method "$method" | tee -a "$dir/results"
    # Each run on an empty cluster: the next run's memory is its own.
    for p in 0 1 2 3 4 5; do redis-cli -p $((port + p)) flushall >/dev/null 2>&1 || true; done
  done
  echo "$method: median of 3 runs at $docs documents:"
  echo "  insert documents/s: $(grep '^insert' "$dir/results" | awk '{ print $4 }' | median)"
  echo "  used_memory bytes/document: $(grep '^memory' "$dir/results" | awk '{ print $5 }' | median)"
  echo "  after compact: $(grep '^compact' "$dir/results" | awk '{ print $(NF - 1) }' | median)"
  echo "  query p99 ms: $(grep '^query' "$dir/results" | awk '{ print $(NF - 1) }' | median)"
  echo "  queries/s (2 processes): $(grep '^query' "$dir/results" | awk '{ print $6 }' | median)"
done
