#!/usr/bin/env bash
# A streamreg cluster on one machine, loopback only (docs/cluster.md): three
# NATS JetStream nodes (nats-cluster.sh) and three streamreg-server
# processes in cluster mode, each on free loopback ports.
#
#   deploy/cluster/local-cluster.sh up DIR     start it; wait until every
#                                              server has joined; write
#                                              DIR/nats and DIR/servers, one
#                                              "HOST:PORT PID" per line
#                                              (nats://HOST:PORT for NATS)
#   deploy/cluster/local-cluster.sh down DIR   stop everything DIR names
#   deploy/cluster/local-cluster.sh restart DIR server|nats I
#                                              stop server (or NATS node) I
#                                              with SIGTERM and start it
#                                              again where it was; wait until
#                                              it has joined (is healthy)
#
# Server i keeps its data directory in DIR/server$i and logs to
# DIR/server$i.log. The servers are streamreg-server from $STREAMREG_SERVER,
# else build/dev, else PATH; extra flags for them come from
# $STREAMREG_SERVER_FLAGS (say "--cluster_replicas 2"). A server started
# with $STREAMREG_SERVER_NATS set is given those NATS URLs instead of every
# node's (a proxy in front of one node: bench/cluster_faults.sh's slow
# link).
set -euo pipefail

usage() { echo "usage: $0 up|down DIR, or restart DIR server|nats I" >&2; exit 2; }
[ $# -ge 2 ] || usage
command=$1 dir=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=deploy/cluster/stop-process.sh
. "$here/stop-process.sh"
root=$(cd "$here/../.." && pwd)

server_binary() {
  if [ -n "${STREAMREG_SERVER:-}" ]; then echo "$STREAMREG_SERVER"; return; fi
  if [ -x "$root/build/dev/server/streamreg-server" ]; then
    echo "$root/build/dev/server/streamreg-server"; return
  fi
  command -v streamreg-server || { echo "no streamreg-server" >&2; exit 1; }
}

up() {
  mkdir -p "$dir"
  [ -e "$dir/servers" ] && { echo "$dir/servers exists: is a cluster up?" >&2; exit 1; }
  "$here/nats-cluster.sh" up "$dir" >/dev/null
  server_binary > "$dir/server.binary"
  echo "${STREAMREG_SERVER_FLAGS:-}" > "$dir/server.flags"
  : > "$dir/servers.starting"
  for i in 0 1 2; do
    # The log exists before the server does: the wait below reads it at once,
    # while the background child may not yet have opened its redirection.
    : > "$dir/server$i.log"
    # Port 0: each server takes a free port and advertises it.
    launch_server "$i" 127.0.0.1:0
    echo "$!" > "$dir/server$i.pid"
  done
  for i in 0 1 2; do
    local pid address=
    pid=$(cat "$dir/server$i.pid")
    address=$(joined_address "$i" "$pid" 0)
    if [ -z "$address" ]; then
      echo "server$i did not start; see $dir/server$i.log, which ends:" >&2
      tail -n 20 "$dir/server$i.log" >&2
      mv "$dir/servers.starting" "$dir/servers"
      down
      exit 1
    fi
    echo "$address $pid" >> "$dir/servers.starting"
    rm -f "$dir/server$i.pid"
  done
  mv "$dir/servers.starting" "$dir/servers"
  cat "$dir/servers"
}

launch_server() {  # launch_server I LISTEN: server I, in the background
  local nats
  nats=${STREAMREG_SERVER_NATS:-$(cut -d' ' -f1 "$dir/nats" | paste -sd, -)}
  # shellcheck disable=SC2046
  setsid "$(cat "$dir/server.binary")" --listen "$2" --metrics_listen= \
    --data_dir "$dir/server$1" --cluster "$nats" \
    $(cat "$dir/server.flags") </dev/null >>"$dir/server$1.log" 2>&1 &
}

# joined_address I PID SKIP: the address server I announces once it has
# joined the cluster (its "listening" line after the first SKIP of its
# log); empty if it ends or a minute passes first.
joined_address() {
  local address=
  for _ in $(seq 600); do
    address=$(sed -n 's/^streamreg-server listening on //p' "$dir/server$1.log" |
      tail -n +"$(($3 + 1))" | head -1)
    [ -n "$address" ] && break
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "$address"
}

restart() {
  local kind=$1 i=$2 address pid seen
  [ -e "$dir/servers" ] || { echo "no $dir/servers" >&2; exit 1; }
  case "$kind" in
    nats) "$here/nats-cluster.sh" restart "$dir" "$i"; return ;;
    server) ;;
    *) usage ;;
  esac
  read -r address pid < <(sed -n "$((i + 1))p" "$dir/servers")
  [ -n "$pid" ] || { echo "no server $i in $dir/servers" >&2; exit 1; }
  # A server drains its calls for up to 10 s (--drain_timeout), then
  # snapshots the models it snapshots (up to 10 s waiting for a model's
  # background work, then the put).
  stop_process "$pid" 40
  seen=$(grep -c '^streamreg-server listening on ' "$dir/server$i.log" || true)
  launch_server "$i" "$address"
  pid=$!
  sed -i "$((i + 1))s|.*|$address $pid|" "$dir/servers"
  [ -n "$(joined_address "$i" "$pid" "$seen")" ] ||
    { echo "server$i did not start again; see $dir/server$i.log" >&2; exit 1; }
}

stop_pids() {
  local list=$1
  while read -r _ pid; do
    kill "$pid" 2>/dev/null || true
    kill -CONT "$pid" 2>/dev/null || true  # a paused server takes it
  done < "$list"
  # As restart waits for a server's drain and last snapshots.
  while read -r _ pid; do
    for _ in $(seq 800); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$pid" 2>/dev/null || true
  done < "$list"
}

down() {
  [ -e "$dir/servers" ] || { echo "no $dir/servers" >&2; exit 1; }
  for pidfile in "$dir"/server*.pid; do
    [ -e "$pidfile" ] && echo "- $(cat "$pidfile")" >> "$dir/servers"
    rm -f "$pidfile"
  done
  stop_pids "$dir/servers"
  rm -f "$dir/servers"
  [ -e "$dir/nats" ] && "$here/nats-cluster.sh" down "$dir"
  return 0
}

case "$command" in
  up) [ $# -eq 2 ] || usage; up ;;
  down) [ $# -eq 2 ] || usage; down ;;
  restart) [ $# -eq 4 ] || usage; restart "$3" "$4" ;;
  *) usage ;;
esac
