#!/usr/bin/env bash
# Cluster mode against a single server, in one run on one machine
# (bench/RESULTS.md, "Cluster mode"): the robot loop (`streamreg bench
# learn`, one simulated arm at 1 kHz into a fresh model) and a bulk ingest
# of simulated-arm samples, first into a single server with the local
# journal (--sync=always), then into a local cluster (deploy/cluster/
# local-cluster.sh: 3 NATS nodes, 3 servers, --cluster_replicas 3) through
# the list of its servers; then a cluster server killed -9 and restarted,
# timed until it has replayed the bulk model's log. Prints one line per
# measurement and writes the bench reports into OUT_DIR.
#
# usage: bench/cluster_bench.sh BUILD_DIR OUT_DIR [SECONDS] [INGEST_SAMPLES]
set -euo pipefail
build=$(cd "$1" && pwd) out=$2 seconds=${3:-20} samples=${4:-20000}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/listening_address.sh"
cli="$build/client/streamreg"
mkdir -p "$out"
work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" || true
  [ -e "$work/cluster/servers" ] && "$here/../deploy/cluster/local-cluster.sh" down "$work/cluster" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

"$build/client/streamreg-robot-sim" --samples "$samples" --out "$work/arm.csv"

measure() {  # measure NAME SERVERS: the robot loop, then the ingest
  local name=$1 servers=$2
  "$cli" --server "$servers" bench learn --model "loop-$name" --create \
    --robots 1 --rate 1000 --duration "$seconds" --json "$out/learn-$name.json" \
    >/dev/null
  local start end
  start=$(date +%s.%N)
  "$cli" --server "$servers" ingest --model "bulk-$name" --csv "$work/arm.csv" \
    --create --batch 1000 >/dev/null 2>&1
  end=$(date +%s.%N)
  /usr/bin/python3 - "$name" "$out/learn-$name.json" "$samples" "$start" "$end" <<'EOF'
import json, sys
name, report, samples, start, end = sys.argv[1:]
r = json.load(open(report))
lat = r["latency_us"]
robot = r["per_robot"][0]
print(f"{name:8s} robot loop 1 kHz: p50 {lat['p50']:.0f} us, p99 {lat['p99']:.0f} us, "
      f"p99.9 {lat['p999']:.0f} us, late ticks {robot['late_ticks']} of "
      f"{lat['count']}; ingest {int(samples) / (float(end) - float(start)):.0f} samples/s")
EOF
}

"$build/server/streamreg-server" --listen 127.0.0.1:0 --metrics_listen= \
  --data_dir "$work/single" --sync always >"$work/single.out" 2>"$work/single.log" &
server_pid=$!
address=$(listening_address "$work/single.out" "$server_pid")
measure single "$address"
kill "$server_pid"; wait "$server_pid" || true; server_pid=

STREAMREG_SERVER="$build/server/streamreg-server" \
  STREAMREG_SERVER_FLAGS="--cluster_replicas 3" \
  "$here/../deploy/cluster/local-cluster.sh" up "$work/cluster" >/dev/null
measure cluster "$(cut -d' ' -f1 "$work/cluster/servers" | paste -sd, -)"

# Recovery from the log: the first server killed -9 and restarted on its
# address takes its models back (still placed on it) and replays their logs;
# timed until its replica of the bulk model holds every sample.
read -r first_address first_pid < "$work/cluster/servers"
kill -9 "$first_pid"
# Its port is free once it is gone.
for _ in $(seq 250); do kill -0 "$first_pid" 2>/dev/null || break; sleep 0.02; done
nats=$(cut -d' ' -f1 "$work/cluster/nats" | paste -sd, -)
restarted=$(date +%s.%N)
"$build/server/streamreg-server" --listen "$first_address" \
  --metrics_listen 127.0.0.1:0 --data_dir "$work/cluster/server0" \
  --cluster "$nats" --cluster_replicas 3 --log_level info \
  >"$work/restart.out" 2>>"$work/cluster/server0.log" &
sed -i "1s/.*/$first_address $!/" "$work/cluster/servers"
listening_address "$work/restart.out" "$!" >/dev/null || true
metrics=$(sed -n 's|^streamreg-server metrics on http://\(.*\)/metrics$|\1|p' "$work/restart.out")
[ -n "$metrics" ] || {
  echo "the restarted server did not start; see $work/cluster/server0.log" >&2
  tail -5 "$work/cluster/server0.log" >&2
  exit 1
}
/usr/bin/python3 - "$metrics" "$samples" "$restarted" <<'PYEOF'
import re, sys, time, urllib.request
metrics, samples, restarted = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
pattern = re.compile(r'^streamreg_model_samples_seen_total\{model="bulk-cluster"\} (\d+)', re.M)
deadline = time.time() + 600
while time.time() < deadline:
    text = urllib.request.urlopen(f"http://{metrics}/metrics", timeout=5).read().decode()
    match = pattern.search(text)
    if match and int(match.group(1)) >= samples:
        seconds = time.time() - restarted
        print(f"replay   a restarted server recovered the bulk model's {samples} "
              f"samples from the log in {seconds:.2f} s ({samples / seconds:.0f} samples/s)")
        sys.exit(0)
    time.sleep(0.05)
sys.exit("the restarted server did not recover the bulk model")
PYEOF
