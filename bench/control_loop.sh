#!/usr/bin/env bash
# The closed loop as a user runs it: a fresh server, then `streamreg bench
# control --model ct --create --duration S` (a computed-torque controller
# on the simulated Panda holding a payload its model does not know, with
# the learned correction through a RealtimeChannel, and without it),
# optionally stopping the server with SIGSTOP meanwhile. Writes the report
# (text, JSON, tracking.png) into OUT_DIR.
#
# usage: bench/control_loop.sh BUILD_DIR OUT_DIR [BENCH_FLAGS...]
#   env: DURATION (60); PAUSE_AT and PAUSE_FOR (seconds into the run, and
#        how long: the server stopped, then resumed)
set -euo pipefail
. "$(dirname "$0")/listening_address.sh"
build=$1 out=$2
shift 2
mkdir -p "$out"
with_scratch_server
"$build/server/streamreg-server" --listen 127.0.0.1:0 --metrics-listen= \
  --data-dir "$work/data" >"$work/server.out" 2>"$out/server.log" &
server_pid=$!
addr=$(listening_address "$work/server.out" "$server_pid")
pause=()
if [ -n "${PAUSE_AT:-}" ]; then
  pause=(--server_pid "$server_pid" --pause_at "$PAUSE_AT"
         --pause_for "${PAUSE_FOR:-5}")
fi
"$build/client/streamreg" --server "$addr" bench control --model ct --create \
  --duration "${DURATION:-60}" "${pause[@]}" --json "$out/control.json" \
  --plots "$out" "$@" | tee "$out/control.txt"
