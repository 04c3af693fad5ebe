#!/usr/bin/env bash
# The robot loop as a new user meets it, one fresh server per configuration:
# `streamreg bench learn --create --robots R --rate HZ --duration S` with the
# model's metric (and any other create flags) as given, then what the server
# spent: its CPU per learned sample, all threads together and by thread name
# (from /proc/PID/task/*/stat, utime + stime, over the run alone), its
# context switches per sample by thread name (/proc/PID/task/*/status; the
# threads alive at the end), and the model's figures (GetModel: the
# answers' error as the server counted them, the prequential and honest
# errors; /metrics: learning's waits at take-overs, MLKR fits, index
# rebuilds).
# Configurations alternate when RUNS > 1, so a slower minute of the machine
# does not fall on one of them. Writes each run's bench JSON and its text
# report into OUT_DIR.
#
# usage: bench/arm_loop.sh BUILD_DIR OUT_DIR CONFIG... [-- SERVER_FLAGS...]
#   CONFIG  a name and the create flags, e.g. "mlkr:--metric mlkr" or
#           "euclidean:--metric euclidean --regressor knn" (with
#           --model_per_robot, each robot's model arm-R is reported)
#   env: ROBOTS (1), RATE (1000), DURATION (60), RUNS (1); SERVER, another
#        build's streamreg-server to measure with this build's client (a
#        before and after in one run); LISTEN=unix to serve the robots on a
#        local socket (unix:PATH in the scratch directory) instead of TCP
#        loopback; PAUSE_AT and PAUSE_FOR (seconds into the run, and how
#        long) stop the server with SIGSTOP and resume it with SIGCONT,
#        a server that stops answering while the robots run on
set -euo pipefail
. "$(dirname "$0")/listening_address.sh"
build=$1 out=$2
shift 2
configs=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do configs+=("$1"); shift; done
[ "${1:-}" = -- ] && shift
server_flags=("$@")
robots=${ROBOTS:-1} rate=${RATE:-1000} duration=${DURATION:-60} runs=${RUNS:-1}
cli="$build/client/streamreg"
server=${SERVER:-$build/server/streamreg-server}
mkdir -p "$out"
with_scratch_server

# Clock ticks of CPU per thread name of process $1, one "name ticks" a line.
thread_ticks() {
  local task
  for task in /proc/"$1"/task/*; do
    # comm may hold spaces: the fields after the ')' are fixed.
    local stat comm rest
    stat=$(cat "$task/stat" 2>/dev/null) || continue
    comm=${stat#*(}
    comm=${comm%)*}
    rest=${stat##*) }
    set -- $rest
    echo "${comm// /_} $((${12} + ${13}))"
  done | awk '{ticks[$1] += $2} END {for (n in ticks) print n, ticks[n]}' | sort
}

# Context switches (voluntary and not) per thread name of process $1, one
# "name switches" a line: each is a thread put to sleep or preempted, and
# woken again — the hand-offs a sample's path costs.
thread_switches() {
  local task
  for task in /proc/"$1"/task/*; do
    local comm switches
    comm=$(cat "$task/comm" 2>/dev/null) || continue
    switches=$(awk '/ctxt_switches/ {s += $2} END {print s + 0}' \
      "$task/status" 2>/dev/null) || continue
    echo "${comm// /_} $switches"
  done | awk '{n[$1] += $2} END {for (t in n) print t, n[t]}' | sort
}

# Clock ticks of CPU of process $1, every thread it ever had (those that
# ended too).
process_ticks() {
  local stat rest
  stat=$(cat /proc/"$1"/stat)
  rest=${stat##*) }
  set -- $rest
  echo $((${12} + ${13}))
}

hz=$(getconf CLK_TCK)
for run in $(seq 1 "$runs"); do
  for config in "${configs[@]}"; do
    name=${config%%:*}
    flags=${config#*:}
    rm -rf "$work/data"
    listen=127.0.0.1:0
    [ "${LISTEN:-tcp}" = unix ] && listen="unix:$work/streamreg.sock"
    "$server" --listen "$listen" --metrics-listen=127.0.0.1:0 \
      --data-dir "$work/data" "${server_flags[@]}" >"$work/server.out" \
      2>"$out/$name-$run.server.log" &
    server_pid=$!
    addr=$(listening_address "$work/server.out" "$server_pid")
    thread_ticks "$server_pid" >"$work/before"
    thread_switches "$server_pid" >"$work/switches_before"
    total_before=$(process_ticks "$server_pid")
    pauser=
    if [ -n "${PAUSE_AT:-}" ]; then
      (sleep "$PAUSE_AT" && kill -STOP "$server_pid" &&
        sleep "${PAUSE_FOR:-5}" && kill -CONT "$server_pid") &
      pauser=$!
    fi
    # shellcheck disable=SC2086  # the create flags are words
    "$cli" --server "$addr" bench learn --model arm --create \
      $flags --robots "$robots" --rate "$rate" --duration "$duration" \
      --json "$out/$name-$run.json" >"$out/$name-$run.txt"
    [ -n "$pauser" ] && wait "$pauser"
    thread_ticks "$server_pid" >"$work/after"
    thread_switches "$server_pid" >"$work/switches_after"
    total_after=$(process_ticks "$server_pid")
    # One model, or one a robot (arm-0, arm-1, ...) with --model_per_robot.
    models=(arm)
    if [[ " $flags " == *" --model_per_robot "* ]]; then
      models=()
      for r in $(seq 0 $((robots - 1))); do models+=("arm-$r"); done
    fi
    for model in "${models[@]}"; do
      "$cli" --server "$addr" info --model "$model" >>"$out/$name-$run.txt"
    done
    # Learning's stops at take-over points whose work was not done.
    metrics=$(sed -n 's|.*metrics on http://\([^/]*\)/metrics.*|\1|p' \
      "$work/server.out" | head -1)
    /usr/bin/python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
      "http://$metrics/metrics" |
      grep -E '^streamreg_model_(refresh_waits_total|refresh_wait_seconds_total|longest_refresh_wait_seconds|mlkr_fits_computed_total|index_rebuilds_total)' \
      >>"$out/$name-$run.txt" || true
    samples=$((robots * rate * duration))
    {
      echo "server CPU per learned sample (us), by thread name:"
      join -a 2 -e 0 -o 0,1.2,2.2 "$work/before" "$work/after" |
        awk -v hz="$hz" -v n="$samples" \
          -v all=$((total_after - total_before)) '
          {d = ($3 - $2) * 1e6 / hz / n; live += d; if (d > 0) printf "  %-18s %7.1f\n", $1, d}
          END {printf "  %-18s %7.1f\n", "threads that ended", all * 1e6 / hz / n - live
               printf "  %-18s %7.1f\n", "all threads", all * 1e6 / hz / n}'
      echo "server context switches per learned sample, by thread name:"
      join -a 2 -e 0 -o 0,1.2,2.2 "$work/switches_before" \
        "$work/switches_after" |
        awk -v n="$samples" '
          {d = ($3 - $2) / n; all += d; if (d >= 0.005) printf "  %-18s %7.2f\n", $1, d}
          END {printf "  %-18s %7.2f\n", "all live threads", all}'
    } >>"$out/$name-$run.txt"
    kill "$server_pid"
    wait "$server_pid" || true
    server_pid=
    echo "== $name, run $run"
    grep -E "^robot 0|^learn lag|intervals|answers' nMSE|all threads|prequential nMSE|refresh_wait" \
      "$out/$name-$run.txt" || true
  done
done
