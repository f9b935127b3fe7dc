#!/usr/bin/env bash
# Starts, stops and inspects a local Redis Cluster made of Debian's redis-server, for the Redis
# backend of the index store (src/store/redis_client.h) and its tests.
#
# Usage: scripts/redis-cluster.sh start|stop|status [--dir DIR] [--port BASE] [--masters 3]
#          [--replicas 1] [--node-timeout MS] [--password-file FILE]
#
#   start   starts masters*(1+replicas) nodes on 127.0.0.1 ports BASE, BASE+1, ... (default 7000),
#           creates the cluster, waits (at most 30 s) until every node reports cluster_state:ok with
#           all 16384 slots covered and every replica linked to its master, and prints the seed list
#           (127.0.0.1:7000,127.0.0.1:7001,...) as the last line of stdout. Progress goes to stderr.
#           The nodes keep their configuration, pid, log and cluster files in DIR (default: a new
#           mktemp -d folder, printed and recorded in ${TMPDIR:-/tmp}/neardup-redis-cluster-BASE.dir
#           so that stop and status find it from --port alone).
#   stop    shuts every node of DIR down (SHUTDOWN NOSAVE, then kill -9 of what is left, by pidfile)
#           and removes DIR if start created it.
#   status  prints each node's role and cluster_state; exits 1 unless every node is up and ok.
#
# --password-file FILE sets requirepass and masterauth of every node to FILE's first line (and the
# tools authenticate through REDISCLI_AUTH, so the password never shows in a process list).
# Exit status: 0 on success, 1 with a message on stderr (redis-server missing, a port in use, a node
# that does not start, a cluster that does not become ok in time), 2 for bad usage.
set -euo pipefail

readonly kHost=127.0.0.1
readonly kWaitSeconds=30

command_name=""
dir=""
base_port=7000
masters=3
replicas=1
node_timeout=2000
password_file=""

die() {
  echo "redis-cluster.sh: $*" >&2
  exit 1
}

usage() {
  sed -n '5,6p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

is_number() { [[ "$1" =~ ^[0-9]+$ ]]; }

parse_args() {
  [[ $# -ge 1 ]] || usage
  command_name="$1"
  shift
  while [[ $# -gt 0 ]]; do
    [[ $# -ge 2 ]] || usage
    case "$1" in
      --dir) dir="$2" ;;
      --port) base_port="$2" ;;
      --masters) masters="$2" ;;
      --replicas) replicas="$2" ;;
      --node-timeout) node_timeout="$2" ;;
      --password-file) password_file="$2" ;;
      *) usage ;;
    esac
    shift 2
  done
  for value in "$base_port" "$masters" "$replicas" "$node_timeout"; do
    is_number "$value" || die "not a number: '$value'"
  done
  ((masters >= 3)) || die "a Redis Cluster needs at least 3 masters (--masters $masters)"
  local nodes=$((masters * (1 + replicas)))
  ((base_port >= 1 && base_port + nodes - 1 + 10000 <= 65535)) ||
    die "ports $base_port..$((base_port + nodes - 1)) and their cluster bus ports (+10000) must be below 65536"
}

# Where start records DIR for the cluster of base port $1.
record_file() { echo "${TMPDIR:-/tmp}/neardup-redis-cluster-$1.dir"; }

# Sets `dir` for stop and status: --dir, or the folder that start recorded for --port.
find_dir() {
  if [[ -z "$dir" ]]; then
    local record
    record="$(record_file "$base_port")"
    [[ -f "$record" ]] || die "no cluster recorded for port $base_port ($record is missing); pass --dir"
    dir="$(cat "$record")"
  fi
  [[ -f "$dir/cluster.env" ]] || die "$dir holds no cluster started by this script (no cluster.env)"
  # cluster.env is written by start: the ports, whether start created the folder, the password file.
  BASE_PORT="" NODES="" CREATED=""
  # shellcheck source=/dev/null
  source "$dir/cluster.env"
}

# The password given with --password-file (start) or recorded in cluster.env, exported for redis-cli.
load_password() {
  [[ -n "$password_file" ]] || return 0
  [[ -r "$password_file" ]] || die "cannot read the password file $password_file"
  local password
  IFS= read -r password <"$password_file" || true
  password="${password%$'\r'}"
  [[ -n "$password" ]] || die "the password file $password_file is empty"
  export REDISCLI_AUTH="$password"
}

cli() {
  local port="$1"
  shift
  timeout 3 redis-cli -h "$kHost" -p "$port" "$@" 2>/dev/null
}

port_in_use() { (exec 3<>"/dev/tcp/$kHost/$1") 2>/dev/null; }

ports() {
  local i
  for ((i = 0; i < NODES; ++i)); do echo $((BASE_PORT + i)); done
}

# The pid of a live redis-server from a pidfile, or nothing (a recycled pid is not ours).
live_pid() {
  local pidfile="$1" pid
  [[ -f "$pidfile" ]] || return 0
  pid="$(cat "$pidfile" 2>/dev/null || true)"
  is_number "$pid" || return 0
  [[ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" == redis-server* ]] && echo "$pid"
  return 0
}

write_config() {
  local port="$1" config="$dir/redis-$1.conf"
  {
    echo "port $port"
    echo "bind $kHost"
    echo "dir $dir"
    echo "daemonize yes"
    echo "pidfile $dir/redis-$port.pid"
    echo "logfile $dir/redis-$port.log"
    echo "cluster-enabled yes"
    echo "cluster-config-file nodes-$port.conf"
    echo "cluster-node-timeout $node_timeout"
    # A test and development cluster: no persistence, a restarted node resyncs from its master.
    echo "appendonly no"
    echo 'save ""'
    # The index layout (doc/redis_layout.md) keeps its tables in hashes of up to 128 short fields
    # and in sets of integer ids; these limits keep such keys in their compact encodings (listpack,
    # intset), several times smaller than hash tables, for keys up to the sizes the layout makes.
    echo "hash-max-listpack-entries 1024"
    echo "hash-max-listpack-value 128"
    echo "set-max-intset-entries 4096"
    if [[ -n "${REDISCLI_AUTH:-}" ]]; then
      local quoted="${REDISCLI_AUTH//\\/\\\\}"
      quoted="${quoted//\"/\\\"}"
      echo "requirepass \"$quoted\""
      echo "masterauth \"$quoted\""
    fi
  } >"$config"
}

start_node() {
  local port="$1" i
  write_config "$port"
  redis-server "$dir/redis-$port.conf" >/dev/null ||
    die "redis-server on port $port did not start; see $dir/redis-$port.log"
  for ((i = 0; i < 100; ++i)); do
    [[ "$(cli "$port" ping || true)" == PONG ]] && return 0
    sleep 0.1
  done
  tail -n 5 "$dir/redis-$port.log" >&2 || true
  die "redis-server on port $port does not answer PING; see $dir/redis-$port.log"
}

# True when every node reports cluster_state:ok, all slots ok, every node known, and every
# replica's link to its master up.
cluster_ready() {
  local port info replication
  for port in $(ports); do
    info="$(cli "$port" cluster info | tr -d '\r')" || return 1
    grep -q '^cluster_state:ok$' <<<"$info" || return 1
    grep -q '^cluster_slots_ok:16384$' <<<"$info" || return 1
    grep -q "^cluster_known_nodes:$NODES\$" <<<"$info" || return 1
    replication="$(cli "$port" info replication | tr -d '\r')" || return 1
    if grep -q '^role:slave$' <<<"$replication"; then
      grep -q '^master_link_status:up$' <<<"$replication" || return 1
    fi
  done
}

start() {
  command -v redis-server >/dev/null ||
    die "redis-server is not installed (Debian: apt-get install redis-server)"
  command -v redis-cli >/dev/null ||
    die "redis-cli is not installed (Debian: apt-get install redis-tools)"
  load_password
  NODES=$((masters * (1 + replicas)))
  BASE_PORT="$base_port"
  local port created=0
  for port in $(ports); do
    port_in_use "$port" && die "port $port is in use"
    port_in_use $((port + 10000)) && die "port $((port + 10000)) (cluster bus of $port) is in use"
  done
  if [[ -z "$dir" ]]; then
    dir="$(mktemp -d -t neardup-redis-cluster.XXXXXX)"
    created=1
  else
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    for port in $(ports); do
      [[ -z "$(live_pid "$dir/redis-$port.pid")" ]] || die "a node of $dir is still running; stop it first"
      rm -f "$dir/nodes-$port.conf" "$dir/redis-$port.pid" "$dir/redis-$port.log"
    done
  fi
  chmod 700 "$dir"
  {
    echo "BASE_PORT=$BASE_PORT"
    echo "NODES=$NODES"
    echo "CREATED=$created"
    printf 'password_file=%q\n' "$(if [[ -n "$password_file" ]]; then realpath "$password_file"; fi)"
  } >"$dir/cluster.env"
  echo "$dir" >"$(record_file "$BASE_PORT")"
  echo "redis-cluster.sh: data in $dir (stop with: $0 stop --dir $dir)" >&2

  # From here on a failure stops the nodes already started.
  trap 'echo "redis-cluster.sh: start failed, stopping the nodes" >&2; stop >/dev/null 2>&1 || true' EXIT
  local addresses=()
  for port in $(ports); do
    start_node "$port"
    addresses+=("$kHost:$port")
  done
  timeout 60 redis-cli --cluster create "${addresses[@]}" --cluster-replicas "$replicas" \
    --cluster-yes >&2 || die "redis-cli --cluster create failed"
  echo >&2 # redis-cli leaves its last line (a colour reset) unterminated
  local deadline=$((SECONDS + kWaitSeconds))
  until cluster_ready; do
    ((SECONDS < deadline)) || die "the cluster is not ok after ${kWaitSeconds} s"
    sleep 0.2
  done
  trap - EXIT
  local IFS=,
  echo "${addresses[*]}"
}

stop() {
  find_dir
  load_password
  local port pid i
  # In parallel, each bounded by cli's timeout; a stopped (SIGSTOP) node is resumed first so that
  # it can answer.
  for port in $(ports); do
    pid="$(live_pid "$dir/redis-$port.pid")"
    if [[ -n "$pid" ]]; then
      kill -CONT "$pid" 2>/dev/null || true
      (cli "$port" shutdown nosave >/dev/null || true) &
    fi
  done
  wait
  for port in $(ports); do
    for ((i = 0; i < 30; ++i)); do
      [[ -z "$(live_pid "$dir/redis-$port.pid")" ]] && break
      sleep 0.1
    done
    pid="$(live_pid "$dir/redis-$port.pid")"
    if [[ -n "$pid" ]]; then
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  local record
  record="$(record_file "$BASE_PORT")"
  if [[ -f "$record" && "$(cat "$record")" == "$dir" ]]; then rm -f "$record"; fi
  if [[ "$CREATED" == 1 ]]; then
    rm -rf "$dir"
  fi
  echo "redis-cluster.sh: stopped the nodes of $dir" >&2
}

status() {
  find_dir
  load_password
  local port role state all_ok=0
  for port in $(ports); do
    if role="$(cli "$port" info replication | tr -d '\r' | sed -n 's/^role://p')" && [[ -n "$role" ]]; then
      state="$(cli "$port" cluster info | tr -d '\r' | grep '^cluster_state:' || true)"
      echo "$kHost:$port $role ${state:-cluster_state:unknown}"
      [[ "$state" == cluster_state:ok ]] || all_ok=1
    else
      echo "$kHost:$port down"
      all_ok=1
    fi
  done
  return "$all_ok"
}

main() {
  parse_args "$@"
  case "$command_name" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) usage ;;
  esac
}

main "$@"
