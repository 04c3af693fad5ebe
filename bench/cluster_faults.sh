#!/usr/bin/env bash
# The faults operators meet, on a local cluster (deploy/cluster/
# local-cluster.sh: 3 NATS nodes, 3 servers) while a simulated arm streams
# through Learn at 1 kHz (`streamreg bench learn`) and a loader ingests
# (`streamreg ingest`), both through the list of servers. In turn: a quiet
# stretch (the baseline); the first server (where the clients' calls go
# first) paused with SIGSTOP for PAUSE seconds, then continued; the first
# NATS node likewise; the first server restarted behind a slow link (a
# delaying proxy, 50 ms each way, in front of the first NATS node as its
# only way to the cluster: streamreg-delaying-proxy) for PAUSE seconds; a
# rolling restart of every server (which gives the first its every node
# again), then of every NATS node, one at a time, each waited for before
# the next (local-cluster.sh restart). Then the invariants: every sample the arm and
# the loader had acknowledged is on every replica of its model (the
# counts), and the replicas answer the same queries bit for bit.
#
# Prints, per phase, the arm's longest wait for an answer (a tick that waits
# is a tick without a prediction; a tick counts in the phase it was sent
# in) and its late ticks in all; writes the arm's report (arm.json), the
# phases' times (phases.txt), the loader's output and the servers' and
# nodes' logs into OUT_DIR. Exits non-zero if an invariant does not hold.
#
# usage: bench/cluster_faults.sh BUILD_DIR OUT_DIR [PAUSE_SECONDS] [LOAD_SAMPLES]
#
# CLUSTER_FAULTS_REPLICAS (default 3) sets --cluster_replicas.
set -euo pipefail
pause=${3:-20} load=${4:-200000}
replicas=${CLUSTER_FAULTS_REPLICAS:-3}
# shellcheck source=bench/local_cluster_run.sh
. "$(dirname "$0")/local_cluster_run.sh"
local_cluster_run "$1" "$2"
arm_pid='' load_pid='' proxy_pid=''
# shellcheck disable=SC2317,SC2086  # called on exit; a pid is empty once done
before_cluster_down() { kill $arm_pid $load_pid $proxy_pid 2>/dev/null || true; }

"$build/client/streamreg-robot-sim" --samples "$load" --out "$work/load.csv"
"$build/client/streamreg-robot-sim" --samples 200 --seed 9 --out "$work/queries.csv"
STREAMREG_SERVER="$build/server/streamreg-server" \
  STREAMREG_SERVER_FLAGS="--cluster_replicas $replicas" \
  "$cluster_sh" up "$dir" >/dev/null
all=$(cut -d' ' -f1 "$dir/servers" | paste -sd, -)
pid_of() { sed -n "$(($2 + 1))p" "$dir/$1" | cut -d' ' -f2; }

phase() { echo "$1 $(date +%s.%N)" >> "$out/phases.txt"; }
: > "$out/phases.txt"
phase start
# Long enough for every phase on this machine (a restarted server catches
# up for up to about 100 s); the figures count the phases only.
duration=$((30 + 3 * pause + 480))
"$cli" --server "$all" bench learn --model arm --create --robots 1 \
  --rate 1000 --duration "$duration" --json "$out/arm.json" \
  >"$out/arm.txt" 2>&1 &
arm_pid=$!
"$cli" --server "$all" ingest --model load --csv "$work/load.csv" --create \
  --batch 500 >"$out/load.txt" 2>&1 &
load_pid=$!

sleep 15
phase baseline_end
kill -STOP "$(pid_of servers 0)"
sleep "$pause"
kill -CONT "$(pid_of servers 0)"
phase server_paused_end
sleep 10
phase nats_pause
kill -STOP "$(pid_of nats 0)"
sleep "$pause"
kill -CONT "$(pid_of nats 0)"
phase nats_paused_end
sleep 10

# Restarts server I and waits until it has caught up on the logs of both
# models (what an operator waits for: its cluster_caught_up events).
restart_caught_up() {
  local seen caught
  seen=$(wc -l < "$dir/server$1.log")
  "$cluster_sh" restart "$dir" server "$1"
  for _ in $(seq 1200); do
    caught=$(tail -n +"$((seen + 1))" "$dir/server$1.log" |
      grep -c "event=cluster_caught_up model=\(arm\|load\) " || true)
    [ "$caught" -ge 2 ] && break
    sleep 0.1
  done
  echo "server$1 $(date +%s.%N) caught up" >> "$out/restarts.txt"
}

phase slow_link
"$build/tests/support/streamreg-delaying-proxy" --delay 50ms \
  --target "$(sed -n 1p "$dir/nats" | cut -d' ' -f1)" >"$work/proxy.txt" 2>&1 &
proxy_pid=$!
proxy=
for _ in $(seq 100); do
  proxy=$(sed -n 's/^listening on //p' "$work/proxy.txt")
  [ -n "$proxy" ] && break
  sleep 0.05
done
[ -n "$proxy" ] || { echo "the delaying proxy did not start" >&2; exit 1; }
STREAMREG_SERVER_NATS=$proxy restart_caught_up 0
sleep "$pause"
phase rolling_servers
for i in 0 1 2; do restart_caught_up "$i"; done
kill "$proxy_pid"
proxy_pid=
phase rolling_nats
for i in 0 1 2; do "$cluster_sh" restart "$dir" nats "$i"; sleep 5; done
phase rolling_end
sleep 10
phase end

# The arm runs its whole duration; the figures are up to the last phase.
arm_status=0
wait "$arm_pid" || arm_status=$?
arm_pid=
load_status=0
wait "$load_pid" || load_status=$?
load_pid=
[ "$arm_status" -eq 0 ] || { echo "the arm failed:" >&2; tail -3 "$out/arm.txt" >&2; }
[ "$load_status" -eq 0 ] || { echo "the loader failed:" >&2; tail -3 "$out/load.txt" >&2; }

# Invariants: every replica holds what was acknowledged (given two minutes
# to catch up), and answers alike.
expected_arm=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["per_robot"][0]["sent"])' "$out/arm.json" 2>/dev/null || echo none)
# The loader's model holds each row once (a resent batch is recognised).
expected_load=$(sed -n 's/^ingested .* the model has \([0-9]*\) samples$/\1/p' "$out/load.txt")
[ -n "$expected_load" ] || expected_load=none
fail=0
for model in arm load; do
  expected=$expected_arm
  [ "$model" = load ] && expected=$expected_load
  prev=
  for address in $(cut -d' ' -f1 "$dir/servers"); do
    count=
    for _ in $(seq 600); do
      count=$("$cli" --server "$address" info --model "$model" --json 2>/dev/null |
        /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["stats"].get("num_samples", 0))' 2>/dev/null) || true
      [ "$count" = "$expected" ] || [ "$expected" = none ] && break
      sleep 0.2
    done
    "$cli" --server "$address" predict --model "$model" --csv "$work/queries.csv" \
      --out "$work/$model-$address.csv" >/dev/null 2>&1 || true
    echo "$model on $address: ${count:-no answer} samples" >> "$out/replicas.txt"
    if [ -n "$prev" ] && ! cmp -s "$prev" "$work/$model-$address.csv"; then
      echo "replicas of $model differ: $address and the one before" >&2; fail=1
    fi
    prev="$work/$model-$address.csv"
  done
done
/usr/bin/python3 - "$out" "$load" "$arm_status" "$load_status" <<'EOF' || fail=1
import json, re, sys
out, load, arm_status, load_status = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
phases = [line.split() for line in open(f"{out}/phases.txt")]
t0 = float(phases[0][1])
marks = {name: float(t) - t0 for name, t in phases}
bad = []
if arm_status == 0:
    arm = json.load(open(f"{out}/arm.json"))
    sent = arm["per_robot"][0]["sent"]
    windows = arm["over_time"]
    def worst(a, b):
        inside = [w for w in windows if a <= w["t_s"] - 1 < b]
        if not inside:
            return 0.0, 0
        return (max(w["latency_us"]["max"] for w in inside) / 1e6,
                sum(w["messages"] for w in inside))
    names = [("baseline", "start", "baseline_end"),
             (f"server paused", "baseline_end", "nats_pause"),
             (f"NATS node paused", "nats_pause", "slow_link"),
             ("server behind a slow link", "slow_link", "rolling_servers"),
             ("rolling restart of the servers", "rolling_servers", "rolling_nats"),
             ("rolling restart of the NATS nodes", "rolling_nats", "end")]
    print(f"arm: {sent} samples sent at 1 kHz; {arm['per_robot'][0]['late_ticks']} late ticks in all")
    for label, a, b in names:
        seconds, messages = worst(marks[a], marks[b])
        print(f"  {label:36s} {marks[b] - marks[a]:6.1f} s: longest wait for an answer "
              f"{seconds:6.3f} s over {messages} ticks")
else:
    sent = None
    bad.append("the arm's stream failed")
counts = {}
for line in open(f"{out}/replicas.txt"):
    m = re.match(r"(\S+) on (\S+): (\S+) samples", line)
    counts.setdefault(m.group(1), []).append(m.group(3))
loaded = None
m = re.search(r"^ingested .* the model has (\d+) samples$", open(f"{out}/load.txt").read(), re.M)
if m and load_status == 0:
    loaded = int(m.group(1))
else:
    bad.append("the loader failed")
for model, expected in (("arm", sent), ("load", loaded)):
    got = counts.get(model, [])
    print(f"{model}: acknowledged {expected}; replicas hold {', '.join(got)}")
    if expected is None or any(c != str(expected) for c in got):
        bad.append(f"{model}: a replica does not hold what was acknowledged")
for b in bad:
    print("FAILED:", b)
sys.exit(1 if bad else 0)
EOF
exit "$fail"
