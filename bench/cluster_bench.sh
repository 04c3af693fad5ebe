#!/usr/bin/env bash
# Cluster mode against a single server, in one run on one machine
# (bench/notes/results-history.md, "Cluster mode"): the robot loop (`streamreg bench
# learn`, one simulated arm at 1 kHz into a fresh model) and a bulk ingest
# of simulated-arm samples, first into a single server with the local
# journal (--sync=always), then into a local cluster (deploy/cluster/
# local-cluster.sh: 3 NATS nodes, 3 servers, --cluster_replicas 3) through
# the list of its servers; then a cluster server killed -9 and restarted,
# timed until it has replayed the bulk model's log. Prints one line per
# measurement and writes the bench reports, the CLI's ingest output and
# the cluster servers' logs into OUT_DIR.
#
# usage: bench/cluster_bench.sh BUILD_DIR OUT_DIR [SECONDS] [INGEST_SAMPLES]
#
# CLUSTER_BENCH_PARTS=recovery measures only the cluster's ingest and the
# recovery (no single server, no robot loop), and CLUSTER_BENCH_REPLICAS
# (default 3) sets --cluster_replicas: the recovery of a large model
# (bench/notes/results-history.md, 10^6 samples) on a machine whose cores would otherwise
# learn every sample three times.
#
# CLUSTER_BENCH_PARTS=reads measures predictions served by 1, 2 and 3
# replicas instead: for each, a local cluster with --cluster_replicas R, a
# model of INGEST_SAMPLES simulated-arm samples, then one closed-loop
# `streamreg bench predict` (unary, concurrency 2, SECONDS long) per
# server at once, each given only its own server: a server that serves the
# model answers, one that does not sends its client to one that does.
#
# CLUSTER_BENCH_RESTART=term stops the recovered server with SIGTERM
# instead of kill -9 (an operator's restart: the server drains and, as the
# model's snapshotter, snapshots it before it leaves) and prints how long
# the stop took.
#
# CLUSTER_BENCH_SERVER_FLAGS: more flags for the cluster's servers (e.g.
# --cluster_snapshot_increment_samples=0, whole snapshots only).
#
# CLUSTER_BENCH_INGEST_FLAGS: more flags for the bulk ingest's model (e.g.
# --metric egop, a model without MLKR fits).
#
# CLUSTER_BENCH_REALTIME=N runs the servers (single and cluster) and the
# robot loop's arm at SCHED_FIFO priority N (--realtime_priority; needs
# CAP_SYS_NICE or RLIMIT_RTPRIO >= N: docs/threading.md, "Real-time
# answers").
set -euo pipefail
build=$(cd "$1" && pwd) out=$2 seconds=${3:-20} samples=${4:-20000}
parts=${CLUSTER_BENCH_PARTS:-all} replicas=${CLUSTER_BENCH_REPLICAS:-3}
restart=${CLUSTER_BENCH_RESTART:-kill}
server_flags=${CLUSTER_BENCH_SERVER_FLAGS:-}
ingest_flags=${CLUSTER_BENCH_INGEST_FLAGS:-}
realtime=${CLUSTER_BENCH_REALTIME:-0}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/listening_address.sh"
cli="$build/client/streamreg"
mkdir -p "$out"
work=$(mktemp -d)
server_pid=
cleanup() {
  cp "$work"/cluster/server*.log "$out"/ 2>/dev/null || true
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" || true
  for dir in "$work"/cluster "$work"/reads?; do
    [ -e "$dir/servers" ] && "$here/../deploy/cluster/local-cluster.sh" down "$dir" >/dev/null 2>&1
  done
  rm -rf "$work"
}
trap cleanup EXIT

"$build/client/streamreg-robot-sim" --samples "$samples" --out "$work/arm.csv"

measure() {  # measure NAME SERVERS: the robot loop, then the ingest
  local name=$1 servers=$2 report=
  if [ "$parts" = all ]; then
    report="$out/learn-$name.json"
    "$cli" --server "$servers" bench learn --model "loop-$name" --create \
      --robots 1 --rate 1000 --duration "$seconds" \
      --realtime_priority "$realtime" --json "$report" >/dev/null
  fi
  local start end
  start=$(date +%s.%N)
  "$cli" --server "$servers" ingest --model "bulk-$name" --csv "$work/arm.csv" \
    --create --batch 1000 $ingest_flags >"$out/ingest-$name.log" 2>&1
  end=$(date +%s.%N)
  /usr/bin/python3 - "$name" "$report" "$samples" "$start" "$end" <<'EOF'
import json, sys
name, report, samples, start, end = sys.argv[1:]
loop = ""
if report:
    r = json.load(open(report))
    lat = r["latency_us"]
    robot = r["per_robot"][0]
    loop = (f"robot loop 1 kHz: p50 {lat['p50']:.0f} us, p99 {lat['p99']:.0f} us, "
            f"p99.9 {lat['p999']:.0f} us, late ticks {robot['late_ticks']} of "
            f"{lat['count']}; ")
print(f"{name:8s} {loop}ingest {int(samples) / (float(end) - float(start)):.0f} samples/s")
EOF
}

reads() {  # reads R: predictions of one model served by R replicas
  local r=$1 dir="$work/reads$1" i=0 address hosts
  STREAMREG_SERVER="$build/server/streamreg-server" \
    STREAMREG_SERVER_FLAGS="--cluster_replicas $r" \
    "$here/../deploy/cluster/local-cluster.sh" up "$dir" >/dev/null
  local all
  all=$(cut -d' ' -f1 "$dir/servers" | paste -sd, -)
  "$cli" --server "$all" ingest --model reads --csv "$work/arm.csv" --create \
    --batch 1000 >"$out/ingest-reads$r.log" 2>&1
  # Every replica has applied every sample before the load starts.
  for _ in $(seq 600); do
    hosts=$(grep -l "event=cluster_hosting model=reads" "$dir"/server?.log | wc -l)
    [ "$hosts" -ge "$r" ] && break
    sleep 0.1
  done
  for server in "$dir"/server?.log; do
    grep -q "event=cluster_hosting model=reads" "$server" || continue
    i=${server%.log}; i=${i##*server}
    address=$(sed -n "$((i + 1))p" "$dir/servers" | cut -d' ' -f1)
    for _ in $(seq 600); do
      "$cli" --server "$address" info --model reads --json |
        /usr/bin/python3 -c 'import json,sys; sys.exit(int(json.load(sys.stdin)["stats"].get("num_samples", 0)) < int(sys.argv[1]))' "$samples" &&
        break
      sleep 0.1
    done
  done
  sleep 5  # the refresh and rebuilds the ingest started
  local pids=()
  i=0
  for address in $(cut -d' ' -f1 "$dir/servers"); do
    "$cli" --server "$address" bench predict --model reads --unary \
      --concurrency 2 --duration "$seconds" \
      --json "$out/reads$r-server$i.json" >/dev/null 2>&1 &
    pids+=($!)
    i=$((i + 1))
  done
  wait "${pids[@]}"
  "$here/../deploy/cluster/local-cluster.sh" down "$dir" >/dev/null
  /usr/bin/python3 - "$r" "$out"/reads"$r"-server?.json <<'EOF'
import json, sys
r, reports = sys.argv[1], [json.load(open(p)) for p in sys.argv[2:]]
total = sum(x["throughput_per_s"] for x in reports)
p50 = sorted(x["latency_us"]["p50"] for x in reports)
p99 = max(x["latency_us"]["p99"] for x in reports)
print(f"reads    {r} replica(s): {total:.0f} predictions/s from 3 clients; "
      f"per client p50 {', '.join(f'{v:.0f}' for v in p50)} us, worst p99 {p99:.0f} us")
EOF
}

if [ "$parts" = reads ]; then
  for r in 1 2 3; do reads "$r"; done
  exit 0
fi

if [ "$parts" = all ]; then
  "$build/server/streamreg-server" --listen 127.0.0.1:0 --metrics_listen= \
    --data_dir "$work/single" --sync always --realtime_priority "$realtime" \
    >"$work/single.out" 2>"$work/single.log" &
  server_pid=$!
  address=$(listening_address "$work/single.out" "$server_pid")
  measure single "$address"
  kill "$server_pid"; wait "$server_pid" || true; server_pid=
fi

STREAMREG_SERVER="$build/server/streamreg-server" \
  STREAMREG_SERVER_FLAGS="--cluster_replicas $replicas --realtime_priority $realtime $server_flags" \
  "$here/../deploy/cluster/local-cluster.sh" up "$work/cluster" >/dev/null
measure cluster "$(cut -d' ' -f1 "$work/cluster/servers" | paste -sd, -)"

# Recovery: a server that hosts the bulk model killed -9 (or stopped with
# SIGTERM) and restarted on its address (with nothing of its models on its
# own disk, as a fresh server) takes its models back (still placed on it):
# the newest snapshot of each (taken every --snapshot_every_samples,
# 100,000, and by a server that stops), then the log after it; timed until
# its replica of the bulk model holds every sample.
owner=0
for i in 0 1 2; do
  if grep -q "event=cluster_hosting model=bulk-cluster" "$work/cluster/server$i.log"; then
    owner=$i; break
  fi
done
read -r owner_address owner_pid < <(sed -n "$((owner + 1))p" "$work/cluster/servers")
stopping=$(date +%s.%N)
if [ "$restart" = term ]; then
  kill -TERM "$owner_pid"
  # The drain and the snapshot of what it snapshots.
  for _ in $(seq 6000); do kill -0 "$owner_pid" 2>/dev/null || break; sleep 0.02; done
  awk -v from="$stopping" -v to="$(date +%s.%N)" \
    'BEGIN { printf "stop     the owner stopped (SIGTERM) in %.2f s\n", to - from }'
else
  kill -9 "$owner_pid"
  # Its port is free once it is gone.
  for _ in $(seq 250); do kill -0 "$owner_pid" 2>/dev/null || break; sleep 0.02; done
fi
nats=$(cut -d' ' -f1 "$work/cluster/nats" | paste -sd, -)
owner_log="$work/cluster/server$owner.log"
hosted_before=$(grep -c "event=cluster_hosting model=bulk-cluster" "$owner_log" || true)
restarted=$(date +%s.%N)
"$build/server/streamreg-server" --listen "$owner_address" \
  --metrics_listen 127.0.0.1:0 --data_dir "$work/cluster/server$owner" \
  --cluster "$nats" --cluster_replicas "$replicas" \
  --realtime_priority "$realtime" $server_flags \
  --log_level info \
  >"$work/restart.out" 2>>"$owner_log" &
sed -i "$((owner + 1))s/.*/$owner_address $!/" "$work/cluster/servers"
listening_address "$work/restart.out" "$!" >/dev/null || true
metrics=$(sed -n 's|^streamreg-server metrics on http://\(.*\)/metrics$|\1|p' "$work/restart.out")
[ -n "$metrics" ] || {
  echo "the restarted server did not start; see $owner_log" >&2
  tail -5 "$owner_log" >&2
  exit 1
}
/usr/bin/python3 - "$metrics" "$samples" "$restarted" "$owner_log" "$hosted_before" <<'PYEOF'
import re, sys, time, urllib.request
metrics, samples, restarted, log = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
hosted_before = int(sys.argv[5])
pattern = re.compile(r'^streamreg_model_samples_seen_total\{model="bulk-cluster"\} (\d+)', re.M)
deadline = time.time() + 600
hosted_after = None
while time.time() < deadline:
    if hosted_after is None and open(log).read().count(
            "event=cluster_hosting model=bulk-cluster") > hosted_before:
        hosted_after = time.time() - restarted
        print(f"hosting  the restarted server hosts the bulk model after {hosted_after:.2f} s")
        sys.stdout.flush()
    text = urllib.request.urlopen(f"http://{metrics}/metrics", timeout=5).read().decode()
    match = pattern.search(text)
    if match and int(match.group(1)) >= samples:
        seconds = time.time() - restarted
        hosted = re.findall(r"event=cluster_hosting model=bulk-cluster from_log_sequence=(\d+)",
                            open(log).read())
        start = int(hosted[-1]) if hosted else 1
        source = ("the whole log" if start <= 1
                  else f"its snapshot and the log from entry {start}")
        print(f"replay   a restarted server recovered the bulk model's {samples} "
              f"samples from {source} in {seconds:.2f} s ({samples / seconds:.0f} samples/s)")
        sys.exit(0)
    time.sleep(0.05)
sys.exit("the restarted server did not recover the bulk model")
PYEOF
