#!/usr/bin/env bash
# streamreg-server as a process, driven by the streamreg CLI and the Python
# client: --config files, the data-directory lock, every CLI command
# against real data, errors and exit codes, and SIGTERM with a Learn stream
# open (the server drains and exits 0).
#
# usage: server_process_test.sh SERVER CLI PYTHON_STUBS SOURCE_DIR SARCOS_CSV
set -euo pipefail
server_bin=$1 cli=$2 python_stubs=$3 source_dir=$4 sarcos=$5
work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

start_server() {  # start_server EXTRA_FLAGS...; sets server_pid and addr
  "$server_bin" "$@" >"$work/server.out" 2>"$work/server.err" &
  server_pid=$!
  for _ in $(seq 100); do
    addr=$(sed -n 's/^streamreg-server listening on //p' "$work/server.out")
    [ -n "$addr" ] && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$work/server.err" >&2
  fail "the server did not start"
}

# --- a config file (dashes or underscores, comments) ---
cat >"$work/server.conf" <<CONF
# streamreg-server configuration
listen = 127.0.0.1:0
data-dir = $work/data
--log_format=json
max-models = 3
drain-timeout = 1s
CONF
start_server --config "$work/server.conf"
grep -q '"level":"info","msg":"event=listening' "$work/server.err" ||
  fail "json log line missing: $(cat "$work/server.err")"
[ -f "$work/data/LOCK" ] || fail "data directory not created"
sr() { "$cli" --server "$addr" "$@"; }

# --- a second server on the same data directory is refused ---
if "$server_bin" --listen 127.0.0.1:0 --data-dir "$work/data" \
    >/dev/null 2>"$work/second.err"; then
  fail "a second server started on a locked data directory"
fi
grep -q "locked by another process" "$work/second.err" ||
  fail "lock error not reported: $(cat "$work/second.err")"

# --- the CLI on SARCOS ---
[ "$(sr health)" = SERVING ] || fail "health"
sr create --name arm --csv "$sarcos" --metric egop --regressor kernel |
  grep -q "created arm: 21 inputs, 7 targets, METRIC_EGOP" || fail "create"
sr ingest --model arm --csv "$sarcos" --limit 2000 --batch 300 >"$work/ingest.out"
grep -q "ingested 2000 samples into arm" "$work/ingest.out" || fail "ingest"
sr predict --model arm --csv "$sarcos" --limit 100 --out "$work/p.csv" \
  2>"$work/predict.err"
[ "$(wc -l <"$work/p.csv")" -eq 101 ] || fail "predict rows"
head -1 "$work/p.csv" | grep -q "^target_tau1,.*,spread_tau7,neighbors$" ||
  fail "predict header: $(head -1 "$work/p.csv")"
grep -q "mean squared error" "$work/predict.err" || fail "predict summary"
sr metric --model arm >"$work/metric.out"
grep -q "EGOP spectrum" "$work/metric.out" || fail "metric spectrum"
grep -q "^qdd4 *|█" "$work/metric.out" || fail "metric bars: $(cat "$work/metric.out")"
sr info --model arm --json | grep -q '"num_samples": "2000"' || fail "info json"
sr list | grep -q "^arm .* 2000" || fail "list"
sr replay --model arm --csv "$sarcos" --rate 2000 --limit 300 >"$work/replay.out"
grep -q "^replayed 300 samples" "$work/replay.out" || fail "replay"
grep -q "latency_us p50" "$work/replay.out" || fail "replay latency"
sr refit --model arm 2>/dev/null | grep -q "refitted arm: 2300 samples" ||
  fail "refit"

# --- errors: status, field, exit code 1, nothing changed ---
if sr ingest --model nope --csv "$sarcos" 2>"$work/err"; then fail "unknown model accepted"; fi
grep -q "NOT_FOUND: model 'nope' not found" "$work/err" || fail "$(cat "$work/err")"
if sr create --name arm --csv "$sarcos" 2>"$work/err"; then fail "duplicate create"; fi
grep -q "ALREADY_EXISTS" "$work/err" || fail "$(cat "$work/err")"
if sr create --name "bad name" --inputs 2 --targets 1 2>"$work/err"; then fail "bad name"; fi
grep -q "INVALID_ARGUMENT: name: 'bad name'" "$work/err" || fail "$(cat "$work/err")"
sr create --name b --inputs 2 --targets 1 >/dev/null
sr create --name c --inputs 2 --targets 1 >/dev/null
if sr create --name d --inputs 2 --targets 1 2>"$work/err"; then fail "max models"; fi
grep -q "RESOURCE_EXHAUSTED" "$work/err" || fail "$(cat "$work/err")"
sr delete --model c | grep -q "deleted c" || fail "delete"
sr delete --model b >/dev/null

# --- the Python client against this server ---
if /usr/bin/python3 -c "import grpc" 2>/dev/null; then
  STREAMREG_ADDRESS=$addr STREAMREG_SARCOS=$sarcos \
    PYTHONPATH="$python_stubs:$source_dir/client/python" \
    /usr/bin/python3 "$source_dir/tests/python_client_test.py" ||
    fail "python client"
  STREAMREG_ADDRESS=$addr PYTHONPATH="$python_stubs:$source_dir/client/python" \
    /usr/bin/python3 "$source_dir/client/python/robot_example.py" \
    --server "$addr" --csv "$sarcos" --limit 600 --model py-robot |
    tail -1 | grep -q "samples=600 sequence=600" || fail "robot example"
else
  echo "SKIPPED the Python client: python3-grpcio is absent (deploy/install-deps.sh installs it)"
fi

# --- SIGTERM with a Learn stream open: drain, exit 0 ---
sr replay --model arm --csv "$sarcos" --rate 100 >"$work/slow.out" 2>&1 &
replay_pid=$!
sleep 1.5
grep -q "samples=" "$work/slow.out" || fail "the slow replay did not start"
kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
server_pid=
[ "$status" -eq 0 ] || fail "server exit status $status after SIGTERM"
grep -q "event=stopped" "$work/server.err" || fail "no clean stop logged"
wait "$replay_pid" || true  # its stream was ended by the drain
echo "PASS"
