#!/usr/bin/env bash
# Hosting while one NATS node is killed, on a local cluster
# (deploy/cluster/local-cluster.sh: 3 NATS nodes, 3 servers,
# --cluster_replicas 3): makes MODELS models of 2,000 simulated-arm samples,
# kills NATS node 2 (kill -9: nats-server 2.9 keeps placing consumers on
# it), then ROUNDS times kills server 1 and starts it again, timing from
# its start until it hosts every model again (event=cluster_hosting) and
# until each has replayed its log (event=cluster_caught_up). Prints one
# line per round; writes the servers' and nodes' logs into OUT_DIR.
#
# usage: bench/cluster_host_down.sh BUILD_DIR OUT_DIR [MODELS] [ROUNDS]
#        (12 models, 3 rounds by default)
#
# CLUSTER_HOST_SERVERS="A B ...": server binaries the restarted server
# takes in turn each round (default: BUILD_DIR's), to compare two builds
# in one run on one cluster.
set -euo pipefail
models=${3:-12} rounds=${4:-3}
# shellcheck source=bench/local_cluster_run.sh
. "$(dirname "$0")/local_cluster_run.sh"
local_cluster_run "$1" "$2"
binaries=${CLUSTER_HOST_SERVERS:-$build/server/streamreg-server}

"$build/client/streamreg-robot-sim" --samples 2000 --out "$work/arm.csv" >/dev/null
STREAMREG_SERVER="$build/server/streamreg-server" \
  STREAMREG_SERVER_FLAGS="--cluster_replicas 3" \
  "$cluster_sh" up "$dir" >/dev/null
all=$(cut -d' ' -f1 "$dir/servers" | paste -sd, -)
for m in $(seq 1 "$models"); do
  "$cli" --server "$all" ingest --model "m$m" --csv "$work/arm.csv" --create \
    >"$work/ingest.txt" 2>&1 || { cat "$work/ingest.txt" >&2; exit 1; }
done
sleep 3  # every replica applies the last batches
kill -9 "$(sed -n 3p "$dir/nats" | cut -d' ' -f2)"
echo "NATS node 2 killed; restarting server 1 $rounds times"
sleep 5

count() { grep -c "$1" "$dir/server1.log" || true; }
# wait_for EVENT BEFORE: until server 1 logged EVENT for every model since
# it had logged it BEFORE times (at most two minutes).
wait_for() {
  for _ in $(seq 2400); do
    [ $(($(count "$1") - $2)) -ge "$models" ] && return 0
    sleep 0.05
  done
  echo "server 1 did not log $1 for every model in 2 minutes" >&2
  exit 1
}
for round in $(seq 1 "$rounds"); do
  for binary in $binaries; do
    kill -9 "$(sed -n 2p "$dir/servers" | cut -d' ' -f2)"
    sleep 1
    hosted=$(count event=cluster_hosting) caught=$(count event=cluster_caught_up)
    failures=$(count event=cluster_host_failed)
    echo "$binary" >"$dir/server.binary"
    start=$(date +%s.%N)
    "$cluster_sh" restart "$dir" server 1 >/dev/null
    wait_for event=cluster_hosting "$hosted"
    hosting=$(seconds_since "$start")
    wait_for event=cluster_caught_up "$caught"
    printf 'round %s %s: %s models hosted in %.2f s, caught up in %.2f s, %s hostings failed\n' \
      "$round" "$(basename "$binary")" "$models" "$hosting" \
      "$(seconds_since "$start")" \
      "$(($(count event=cluster_host_failed) - failures))"
    sleep 2
  done
done
