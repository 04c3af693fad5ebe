#!/usr/bin/env bash
# Creating models while one NATS node is down, on a local cluster
# (deploy/cluster/local-cluster.sh: 3 NATS nodes, 3 servers,
# --cluster_replicas 3): stops a NATS node that is not the metadata leader
# with SIGNAL (KILL: a crash, which nats-server 2.9 never takes for offline;
# TERM: a shutdown for maintenance, which it does), waits WAIT seconds, then
# for each of MODELS models times `streamreg create` and a first 50-row
# ingest through the list of all three servers. Prints one line per model
# (seconds from the create's start to its answer, and to the ingest's),
# and how many new logs the creates gave up (no leader elected in time),
# then restarts the node and checks that every model takes writes and, for
# TERM, that each log got its copies back. Writes the servers' and nodes'
# logs into OUT_DIR. Exits non-zero if a create or an ingest failed.
#
# usage: bench/cluster_create_down.sh BUILD_DIR OUT_DIR [MODELS] [SIGNAL] [WAIT]
#        (10 models, KILL, 15 s by default)
set -euo pipefail
models=${3:-10} signal=${4:-KILL} wait=${5:-15}
# shellcheck source=bench/local_cluster_run.sh
. "$(dirname "$0")/local_cluster_run.sh"
local_cluster_run "$1" "$2"

"$build/client/streamreg-robot-sim" --samples 50 --out "$work/rows.csv" >/dev/null
STREAMREG_SERVER="$build/server/streamreg-server" \
  STREAMREG_SERVER_FLAGS="--cluster_replicas 3" \
  "$cluster_sh" up "$dir" >/dev/null
all=$(cut -d' ' -f1 "$dir/servers" | paste -sd, -)
sleep 3  # the streams' leaders settle
victim=''
for i in 0 1 2; do
  grep -q "Self is new JetStream cluster metadata leader" "$dir/node$i.log" ||
    victim=$i
done
[ -n "$victim" ] || { echo "no NATS node that is not the leader" >&2; exit 1; }
pid=$(sed -n "$((victim + 1))p" "$dir/nats" | cut -d' ' -f2)
kill "-$signal" "$pid"
echo "NATS node $victim stopped with SIG$signal; creating after ${wait} s"
sleep "$wait"

failed=0
for m in $(seq 1 "$models"); do
  start=$(date +%s.%N)
  if "$cli" --server "$all" create --name "down$m" --inputs 21 --targets 7 \
    >"$work/create.txt" 2>&1; then
    created=$(seconds_since "$start")
  else
    created="failed ($(cat "$work/create.txt"))"
    failed=1
  fi
  if "$cli" --server "$all" ingest --model "down$m" --csv "$work/rows.csv" \
    --by_position >"$work/ingest.txt" 2>&1; then
    ingested=$(seconds_since "$start")
  else
    ingested="failed ($(cat "$work/ingest.txt"))"
    failed=1
  fi
  printf 'model down%-3s create %s s, first ingest done %s s\n' "$m" \
    "$created" "$ingested"
done
# A create gives up a new log that elects no leader within a second for
# one of the next generation (docs/cluster.md, "Create and delete").
given_up=$(cat "$dir"/server?.log | grep -c "event=cluster_log_given_up" || true)
echo "logs given up for another: $given_up"

"$cluster_sh" restart "$dir" nats "$victim" >/dev/null
for m in $(seq 1 "$models"); do
  "$cli" --server "$all" ingest --model "down$m" --csv "$work/rows.csv" \
    --by_position >/dev/null 2>&1 ||
    { echo "model down$m: an ingest after the node's restart failed"; failed=1; }
done
if [ "$signal" = TERM ]; then
  # Logs made with two copies get the third once their snapshotting server
  # looks again (every 10 s): waited for up to 30 s.
  restored=0
  for _ in $(seq 30); do
    restored=$(cat "$dir"/server?.log |
      grep -cE "event=cluster_stream_replicas_restored stream=streamreg-log[0-9]+_down" || true)
    [ "$restored" -ge "$models" ] && break
    sleep 1
  done
  echo "logs given their third copy back: $restored of $models"
  [ "$restored" -ge "$models" ] || failed=1
fi
exit "$failed"
