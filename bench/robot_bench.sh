#!/usr/bin/env bash
# The end-to-end figures of bench/README.md ("The robot workload"): a server
# on loopback holding a model of 10^5 simulated-arm samples (d = 21, m = 7),
# `streamreg bench predict` (unary and streaming, beside the empty Ping) and
# `streamreg bench learn` (5 arms at 1 kHz while a client predicts). Writes
# one JSON report per run (and its PNGs) into OUT_DIR.
#
# usage: bench/robot_bench.sh BUILD_DIR OUT_DIR [--regressor knn|kernel]
#                             [-- SERVER_FLAGS...]
set -euo pipefail
. "$(dirname "$0")/listening_address.sh"
build=$1 out=$2
shift 2
regressor=kernel
if [ "${1:-}" = --regressor ]; then regressor=$2; shift 2; fi
[ "${1:-}" = -- ] && shift
server_flags=("$@")
cli="$build/client/streamreg"
mkdir -p "$out"
with_scratch_server

"$build/client/streamreg-robot-sim" --samples 100000 --out "$work/arm.csv"
"$build/server/streamreg-server" --listen 127.0.0.1:0 --metrics-listen= \
  --data-dir "$work/data" "${server_flags[@]}" >"$work/server.out" 2>"$out/server.log" &
server_pid=$!
addr=$(listening_address "$work/server.out" "$server_pid")
sr() { "$cli" --server "$addr" "$@"; }

sr ingest --model arm --csv "$work/arm.csv" --create --regressor "$regressor"
sleep 20  # let the background refresh and rebuilds of the ingest finish
sr info --model arm | grep -E "^  (learns|samples) "

run() {  # run NAME ARGS...: one bench run, its report and plots
  local name=$1
  shift
  echo "== $name: streamreg bench $*"
  sr bench "$@" --json "$out/$name.json" --plots "$out/$name"
}
run predict_unary_c1 predict --model arm --concurrency 1 --duration 10 --unary
run predict_unary_c4 predict --model arm --concurrency 4 --duration 10 --unary
run predict_stream_c1 predict --model arm --concurrency 1 --duration 10 --stream
run predict_stream_c4_q64 predict --model arm --concurrency 4 --duration 10 \
  --stream --queries 64
run learn_5x1khz learn --model arm --robots 5 --rate 1000 --duration 20 \
  --predictors 1
