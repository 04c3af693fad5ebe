#!/usr/bin/env bash
# streamreg-server as a process, driven by the streamreg CLI and the Python
# client: --config files, the data-directory lock, every CLI command
# against real data, errors and exit codes, and SIGTERM with a Learn stream
# open (the server drains and exits 0).
#
# Also the robot simulator and `streamreg bench` (predict, learn, plot).
#
# usage: server_process_test.sh SERVER CLI PYTHON_STUBS SOURCE_DIR SARCOS_CSV
#                               ROBOT_SIM
set -euo pipefail
server_bin=$1 cli=$2 python_stubs=$3 source_dir=$4 sarcos=$5 robot_sim=$6
work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

start_server() {  # start_server EXTRA_FLAGS...; sets server_pid and addr
  # Made here: the background job may open them after the first look.
  : >"$work/server.out"
  : >"$work/server.err"
  "$server_bin" --metrics_listen=127.0.0.1:0 "$@" >"$work/server.out" \
    2>"$work/server.err" &
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
  grep -q "created arm: 21 inputs, 7 targets, metric egop, regressor kernel" || fail "create"
sr ingest --model arm --csv "$sarcos" --limit 2000 --batch 300 >"$work/ingest.out"
grep -q "ingested 2000 samples into arm" "$work/ingest.out" || fail "ingest"
# A model name mistyped: the server's nearest one is named.
said=$(sr info --model amr 2>&1) && fail "info of a missing model succeeded"
[ "$said" = "streamreg info: NOT_FOUND: model 'amr' not found (did you mean 'arm'?)" ] ||
  fail "a missing model: $said"
said=$(sr info --model robot 2>&1) && fail "info of a missing model succeeded"
[ "$said" = "streamreg info: NOT_FOUND: model 'robot' not found (\`streamreg list\` shows the 1 model it has)" ] ||
  fail "a missing model, nothing near: $said"
sr predict --model arm --csv "$sarcos" --limit 100 --out "$work/p.csv" \
  2>"$work/predict.err"
[ "$(wc -l <"$work/p.csv")" -eq 101 ] || fail "predict rows"
head -1 "$work/p.csv" | grep -q "^tau1,.*,tau7,predicted_tau1,.*,upper_tau7,spread_tau1,.*,spread_tau7,neighbors$" ||
  fail "predict header: $(head -1 "$work/p.csv")"
# nMSE per target on rows the model learned: all seven, each below 1
# (better than predicting the mean); and the fractions within the
# intervals.
/usr/bin/python3 -c '
import re, sys
text = open(sys.argv[1]).read()
nmse, within = text.split("; within the intervals ")
values = [float(v) for v in re.findall(r"tau[1-7] ([0-9.e+-]+)", nmse)]
fractions = [float(v) for v in re.findall(r"tau[1-7] ([0-9.e+-]+)", within)]
# And a line that says what the figures are, the held-out error among them.
explained = ("the held-out error when the model has not learned them" in text
             and "inside their 90% intervals)" in text)
sys.exit(0 if text.startswith("predicted 100 rows; nMSE tau1 ") and
         explained and
         len(values) == 7 and all(0 <= v < 1 for v in values) and
         len(fractions) == 7 and all(0 <= v <= 1 for v in fractions) else 1)
' "$work/predict.err" || fail "predict summary: $(cat "$work/predict.err")"
sr metric --model arm >"$work/metric.out"
grep -q "EGOP spectrum" "$work/metric.out" || fail "metric spectrum"
grep -q "^qdd4 *|█" "$work/metric.out" || fail "metric bars: $(cat "$work/metric.out")"
# grep reads it all (-q would stop at the match, and the CLI's next write,
# past the pipe's first buffer, would fail under pipefail).
sr info --model arm --json | grep '"num_samples": "2000"' >/dev/null ||
  fail "info json"
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

# --- usage errors exit 2 naming the flag, a flag's value as much as an
# unknown flag; nothing is created ---
status=0
sr create --name m --csv "$sarcos" --metric foo 2>"$work/err" || status=$?
[ "$status" -eq 2 ] && grep -q -- "--metric: unknown value 'foo'" "$work/err" ||
  fail "usage error: exit $status, $(cat "$work/err")"
if sr info --model m >/dev/null 2>&1; then fail "created on a usage error"; fi

# --- a CSV whose columns are not the model's names is refused, naming them
# (q1 renamed joint1), and --by_position takes it by order ---
head -51 "$sarcos" | sed '1s/^q1,/joint1,/' >"$work/renamed.csv"
status=0
sr ingest --model arm --csv "$work/renamed.csv" 2>"$work/err" || status=$?
[ "$status" -eq 1 ] &&
  grep -q "missing q1; unexpected joint1" "$work/err" ||
  fail "renamed column: exit $status, $(cat "$work/err")"
sr ingest --model arm --csv "$work/renamed.csv" --by_position |
  grep "ingested 50 samples" >/dev/null || fail "--by_position"

# --- no server at the address: said at once, with a hint ---
status=0
"$cli" --server 127.0.0.1:1 list 2>"$work/err" || status=$?
[ "$status" -eq 1 ] &&
  grep -q "no streamreg server answers at 127.0.0.1:1 within 1s (is a server running there?" "$work/err" ||
  fail "unreachable server: exit $status, $(cat "$work/err")"
# A bad flag value is said first, whether or not a server is there.
status=0
"$cli" --server 127.0.0.1:1 create --name m --inputs 2 --targets 1 \
  --regressor nearest 2>"$work/err" || status=$?
[ "$status" -eq 2 ] && grep -q -- "--regressor: unknown value 'nearest'" "$work/err" ||
  fail "usage error without a server: exit $status, $(cat "$work/err")"

# --- info: a summary a person reads, the whole message behind --json and
# --raw ---
sr info --model arm >"$work/info"
for line in "arm: 21 inputs (q1, q2, q3, ..., qdd7) -> 7 targets" \
  "  learns    metric egop, regressor kernel (box kernel), linear base" \
  "  created   20" "  snapshot  20" "prequential nMSE: each sample"; do
  grep -F -- "$line" "$work/info" >/dev/null || fail "info has no '$line': $(cat "$work/info")"
done
# One row per torque, with its errors and the bandwidth it chose.
[ "$(grep -cE '^  tau[1-7] +[0-9.]+ +[0-9.]+ +([0-9.]+|-) +kernel +egop +h=' "$work/info")" = 7 ] ||
  fail "info's targets: $(cat "$work/info")"
sr info --model arm --raw | grep "^  num_samples: " >/dev/null ||
  fail "info --raw"

# --- the Python robot example against this server (the package itself:
# tests/client/python/package_test.sh) ---
if /usr/bin/python3 -c "import grpc" 2>/dev/null; then
  PYTHONPATH="$python_stubs" \
    /usr/bin/python3 "$source_dir/client/python/examples/robot_replay.py" \
    --server "$addr" --csv "$sarcos" --limit 600 --model py-robot |
    grep "samples=600 durable=600" >/dev/null || fail "robot example"
else
  echo "SKIPPED the Python client: python3-grpcio is absent (deploy/install-deps.sh installs it)"
fi

# --- the robot simulator: CSV in the SARCOS convention, and Learn at a rate ---
"$robot_sim" --samples 500 --payload_at 250 --out "$work/sim.csv"
[ "$(wc -l <"$work/sim.csv")" -eq 501 ] || fail "robot-sim rows"
[ "$(head -1 "$work/sim.csv")" = "$(head -1 "$sarcos")" ] ||
  fail "robot-sim header: $(head -1 "$work/sim.csv")"
"$robot_sim" --server "$addr" --model sim --create --samples 300 --rate 1000 \
  >"$work/sim.out"
tail -1 "$work/sim.out" | grep -q "done: samples=300 durable=300" ||
  fail "robot-sim to the server: $(tail -1 "$work/sim.out")"
# It says what its figures mean, and its error is the one info names the
# same: the answers' nMSE, within 5% of what the server counted.
head -1 "$work/sim.out" | grep "answers' nMSE, the error of the predictions the Learn answers carried" >/dev/null &&
  head -1 "$work/sim.out" | grep "as \`streamreg info\` counts it in its answers column" >/dev/null &&
  head -1 "$work/sim.out" | grep "late_ticks: samples sent more than one period (1.00 ms)" >/dev/null ||
  fail "robot-sim's legend: $(head -1 "$work/sim.out")"
sr info --model sim --json >"$work/sim_info.json"
/usr/bin/python3 - "$work/sim.out" "$work/sim_info.json" <<'PY' || fail "robot-sim's answers' nMSE against info's"
import json, re, sys
said = re.findall(r"answers' nMSE=([0-9.eE+-]+)", open(sys.argv[1]).read())
stats = json.load(open(sys.argv[2]))["stats"]
counted = sum(stats["answer_nmse"]) / len(stats["answer_nmse"])
assert said and int(stats["answers_sent"]) == 300, (said, stats["answers_sent"])
assert abs(float(said[-1]) - counted) <= 0.05 * counted, (said[-1], counted)
PY

# --- streamreg bench: predict (unary, stream) beside Ping, learn, plots ---
sr bench predict --model sim --concurrency 2 --duration 0.5 \
  --json "$work/bench_unary.json" >"$work/bench.out"
grep -q "^predict/empty: p50 " "$work/bench.out" || fail "$(cat "$work/bench.out")"
sr bench predict --model sim --stream --queries 4 --duration 0.5 \
  --json "$work/bench_stream.json" >/dev/null
sr bench learn --model sim --robots 2 --rate 200 --duration 2 --predictors 1 \
  --payload_at 1 --json "$work/bench_learn.json" --plots "$work/plots" \
  >"$work/learn.out"
grep -q "^robot 1: " "$work/learn.out" || fail "$(cat "$work/learn.out")"
# Each figure a newcomer would ask about is said in a line.
for legend in "(a late tick: a sample sent more than one period, 5.00 ms" \
  "a stream fell behind: one sent more than 10 periods late" \
  "(prequential: each sample predicted just before it was learned"; do
  grep -F -- "$legend" "$work/learn.out" >/dev/null ||
    fail "bench learn does not say '$legend': $(cat "$work/learn.out")"
done
grep -q "^intervals (90%): answers' coverage 0\.[0-9]* (targets " \
  "$work/learn.out" || fail "$(cat "$work/learn.out")"
# On a model of its own, bench learn's robot, the server's count and info
# give one answers' nMSE, within 5% of each other (room made under
# --max-models: the Python example's model is not used again).
sr delete --model py-robot >/dev/null || fail "delete py-robot"
sr bench learn --model fresh-arm --create --robots 1 --rate 500 \
  --duration 1 --json "$work/bench_fresh.json" >"$work/fresh.out"
sr info --model fresh-arm --json >"$work/fresh_info.json"
/usr/bin/python3 - "$work" <<'PY' || fail "bench learn's answers' nMSE: $(cat "$work/fresh.out")"
import json, re, sys
work = sys.argv[1]
report = json.load(open(f"{work}/bench_fresh.json"))
stats = json.load(open(f"{work}/fresh_info.json"))["stats"]
robot = report["per_robot"][0]["answers_nmse"]
line = re.search(r"answers' nMSE ([0-9.eE+-]+)\n", open(f"{work}/fresh.out").read())
info = sum(stats["answer_nmse"]) / len(stats["answer_nmse"])
server = report["model"]["answer_nmse_mean"]
assert line and abs(float(line.group(1)) - robot) <= 1e-4 * max(robot, 1), (line, robot)
for figure in (server, info):
    assert abs(figure - robot) <= 0.05 * robot, (robot, server, info)
PY
sr delete --model fresh-arm >/dev/null || fail "delete fresh-arm"
/usr/bin/python3 - "$work" <<'PY' || fail "bench reports"
import json, sys
work = sys.argv[1]
for name, rpc in (("bench_unary", "unary"), ("bench_stream", "stream")):
    r = json.load(open(f"{work}/{name}.json"))
    assert r["kind"] == "predict" and r["rpc"] == rpc, r
    for key in ("p50", "p90", "p99", "p999"):
        assert 0 < r["latency_us"][key] <= r["latency_us"]["max"], (name, key)
    assert r["latency_us"]["p50"] <= r["latency_us"]["p99"]
    assert r["empty_latency_us"]["p50"] > 0 and r["empty_latency_us"]["p99"] > 0
    assert abs(r["ratio_p50"] - r["latency_us"]["p50"] /
               r["empty_latency_us"]["p50"]) < 1e-9
    assert r["throughput_per_s"] > 0 and r["requests"] > 0
    assert r["model"]["num_samples"] == 300
per_request = json.load(open(f"{work}/bench_stream.json"))
assert per_request["queries_per_request"] == 4
assert abs(per_request["throughput_per_s"] -
           4 * per_request["requests"] / per_request["duration_s"]) < 1e-6
r = json.load(open(f"{work}/bench_learn.json"))
assert r["kind"] == "learn" and r["robots"] == 2 and len(r["per_robot"]) == 2
for robot in r["per_robot"]:
    assert robot["sent"] == 400, robot
    assert robot["achieved_rate_per_s"] > 0
    assert isinstance(robot["fell_behind"], bool)
assert r["model"]["num_samples_after"] == 300 + 800, r["model"]
assert len(r["nmse_over_time"]) == 2, r["nmse_over_time"]
assert r["predictors"]["predictions"] > 0
intervals = r["intervals"]
assert intervals["level"] == 0.9 and intervals["window_samples"] == 10000
assert intervals["answers"]["samples"] == 800, intervals
assert intervals["predictions"]["samples"] == r["predictors"]["predictions"]
for tally in (intervals["answers"], intervals["predictions"]):
    assert len(tally["coverage_by_target"]) == 7, tally
    assert all(0 <= c <= 1 for c in tally["coverage_by_target"]), tally
    assert tally["windows"] == 0 and tally["window_coverage"] == [], tally
assert len(r["metric"]["metrics"]) >= 1 and len(r["metric"]["inputs"]) == 21
PY
for png in latency nmse weights; do
  [ "$(head -c 4 "$work/plots/$png.png" | tail -c 3)" = PNG ] ||
    fail "$png.png is not a PNG"
done
sr bench plot --json "$work/bench_unary.json" --plots "$work/plots2" |
  grep -q "latency.png" || fail "bench plot"
[ -s "$work/plots2/latency.png" ] || fail "bench plot wrote nothing"
status=0
sr bench predict --model sim --unary --stream 2>"$work/err" || status=$?
[ "$status" -eq 2 ] && grep -q -- "--unary and --stream: pick one" "$work/err" ||
  fail "--unary --stream: exit $status, $(cat "$work/err")"
if sr bench predict --model arm --csv /nonexistent.csv 2>"$work/err"; then
  fail "a missing CSV accepted"
fi
if sr bench frobnicate >/dev/null 2>&1; then fail "unknown bench command"; fi

# --- Prometheus: /metrics parsed by the Python client library's parser ---
metrics=$(sed -n 's#^streamreg-server metrics on http://\(.*\)/metrics$#\1#p' \
  "$work/server.out")
[ -n "$metrics" ] || fail "no metrics line: $(cat "$work/server.out")"
arm_samples=$(sr info --model arm --json | sed -n 's/.*"num_samples": "\([0-9]*\)".*/\1/p')
/usr/bin/python3 - "http://$metrics/metrics" "$arm_samples" <<'PY' ||
import sys, urllib.request
from prometheus_client.parser import text_string_to_metric_families
url, arm_samples = sys.argv[1], float(sys.argv[2])
response = urllib.request.urlopen(url, timeout=10)
assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
families = {f.name: f for f in
            text_string_to_metric_families(response.read().decode())}
def value(family, suffix="", **labels):  # suffix: a histogram's _count...
    for s in families[family].samples:
        if (not suffix or s.name == family + suffix) and all(
                s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    raise AssertionError(f"{family}{suffix} {labels} missing")
# The parser names counter families without _total.
assert value("streamreg_model_samples_seen", model="arm") == arm_samples
assert families["grpc_server_handling_seconds"].type == "histogram"
assert value("grpc_server_handled", grpc_method="CreateModel",
             grpc_code="ALREADY_EXISTS") == 1
assert value("grpc_server_handled", grpc_method="Refit", grpc_code="OK") == 1  # the CLI
assert value("grpc_server_started", grpc_method="Learn") >= 2  # replay, sim
assert value("streamreg_wal_fsync_duration_seconds", "_count") > 0
assert value("process_resident_memory_bytes") > 0
nmse = value("streamreg_model_prequential_nmse", model="arm", target="tau1")
assert 0 < nmse < 1, nmse
PY
  fail "/metrics"
if "$server_bin" --listen 127.0.0.1:0 --data-dir "$work/data2" \
    --metrics_listen "$metrics" >/dev/null 2>"$work/err"; then
  fail "a second server started on a metrics port in use"
fi
grep -q "\-\-metrics_listen $metrics: cannot listen there" "$work/err" ||
  fail "busy metrics port: $(cat "$work/err")"
# Nor on its gRPC port: a port in use is refused, not shared (SO_REUSEPORT
# would split the connections between the two servers; one that started
# is stopped by the timeout, and the message check fails).
if timeout 20 "$server_bin" --listen "$addr" --data-dir "$work/data2" \
    --metrics_listen= >/dev/null 2>"$work/err"; then
  fail "a second server started on a gRPC port in use"
fi
grep -q "\-\-listen $addr: cannot listen there" "$work/err" ||
  fail "busy gRPC port: $(cat "$work/err")"

# --- SIGTERM with a Learn stream open: drain, exit 0 ---
sr replay --model arm --csv "$sarcos" --rate 100 >"$work/slow.out" 2>&1 &
replay_pid=$!
# Its first report comes a second into the stream (polled: under the
# sanitizers on a busy machine, starting and reading the CSV take a while).
for _ in $(seq 150); do
  grep -q "samples=" "$work/slow.out" && break
  sleep 0.1
done
grep -q "samples=" "$work/slow.out" || fail "the slow replay did not start"
kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
server_pid=
[ "$status" -eq 0 ] || fail "server exit status $status after SIGTERM"
grep -q "event=stopped" "$work/server.err" || fail "no clean stop logged"
wait "$replay_pid" || true  # its stream was ended by the drain

# --- TLS: the server's, the CLI's and the robot simulator's flags ---
(
  cd "$work"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca \
    -keyout ca.key -out ca.pem
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >server.ext
  openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
    -keyout server.key -out server.csr
  openssl x509 -req -days 2 -in server.csr -CA ca.pem -CAkey ca.key \
    -CAcreateserial -extfile server.ext -out server.pem
) >/dev/null 2>&1 || fail "openssl could not make the test certificates"
start_server --listen 127.0.0.1:0 --data-dir "$work/tls-data" \
  --drain-timeout 1s --tls-cert "$work/server.pem" --tls-key "$work/server.key"
grep -q "tls=on" "$work/server.err" || fail "TLS not logged as on"
tls=(--server "$addr" --tls_ca "$work/ca.pem")
[ "$("$cli" "${tls[@]}" health)" = SERVING ] || fail "health over TLS"
if "$cli" --server "$addr" --timeout 3s health >/dev/null 2>&1; then
  fail "a TLS server answered a plaintext client"
fi
"$robot_sim" "${tls[@]}" --model tls-arm --create --samples 200 >/dev/null ||
  fail "the robot simulator over TLS"
[ "$("$cli" "${tls[@]}" info --model tls-arm --raw |
     sed -n 's/^ *num_samples: //p')" = 200 ] || fail "samples over TLS"
if /usr/bin/python3 -c "import grpc" 2>/dev/null; then
  PYTHONPATH="$python_stubs" \
    /usr/bin/python3 "$source_dir/client/python/examples/robot_replay.py" \
    --server "$addr" --tls-ca "$work/ca.pem" --csv "$sarcos" --limit 100 \
    --model py-tls | grep "samples=100 durable=100" >/dev/null ||
    fail "the Python robot example over TLS"
fi
status=0
"$cli" --server "$addr" --tls_ca /nonexistent.pem health 2>"$work/tls.err" ||
  status=$?
[ "$status" -eq 1 ] && grep -q -- "--tls_ca /nonexistent.pem: cannot read" \
  "$work/tls.err" || fail "a missing --tls_ca file: $(cat "$work/tls.err")"
kill -TERM "$server_pid"
wait "$server_pid" || fail "the TLS server did not stop cleanly"
server_pid=
for flags in "--tls_cert $work/server.pem" \
  "--tls_client_ca $work/ca.pem" \
  "--tls_cert /nonexistent.pem --tls_key $work/server.key"; do
  status=0
  # shellcheck disable=SC2086  # the flags are words
  "$server_bin" --listen 127.0.0.1:0 --data-dir "$work/tls-data" $flags \
    >/dev/null 2>"$work/tls.err" || status=$?
  [ "$status" -eq 2 ] && grep -q -- "--tls_" "$work/tls.err" ||
    fail "server with $flags: status $status, $(cat "$work/tls.err")"
done
# Values out of range stop the server at start, naming the flag.
for flag in "--max-message-bytes 0" "--drain-timeout -1s" \
  "--wal-segment-bytes 10" "--snapshot-interval 0s" "--max-models 0" \
  "--max-concurrent-streams 0" "--keepalive-time 1s" \
  "--max-predictions-in-flight 2000000" "--max-queue-delay 11m" \
  "--realtime-priority 100" "--learn-linger 1s"; do
  status=0
  # shellcheck disable=SC2086  # the flag and its value are words
  "$server_bin" --listen 127.0.0.1:0 --data-dir "$work/range-data" $flag \
    >/dev/null 2>"$work/range.err" || status=$?
  name=${flag%% *}
  name=--$(printf %s "${name#--}" | tr - _)
  [ "$status" -eq 2 ] && grep -q -- "$name: must be" "$work/range.err" ||
    fail "server with $flag: status $status, $(cat "$work/range.err")"
done
# A cluster flag too, before any NATS node is tried.
status=0
"$server_bin" --listen 127.0.0.1:0 --data-dir "$work/range-data" \
  --cluster nats://127.0.0.1:9 --cluster-learn-linger 1s \
  >/dev/null 2>"$work/range.err" || status=$?
[ "$status" -eq 2 ] && grep -q -- "--cluster_learn_linger: must be" "$work/range.err" ||
  fail "server with --cluster-learn-linger 1s: status $status, $(cat "$work/range.err")"

# --- bearer tokens: --auth-tokens, --token-file / STREAMREG_TOKEN, SIGHUP ---
ops=ops-0123456789abcdef robot=robot-0123456789abcdef
new_robot=robot-NEW-0123456789abcdef
write_tokens() {  # write_tokens ROBOT_TOKEN: the table, replaced atomically
  printf '# name token permissions prefixes\nops %s read,write,admin *\nrobot %s read,write arm1.\n' \
    "$ops" "$1" >"$work/tokens.new"
  chmod 600 "$work/tokens.new"  # a table every user may read is refused
  mv "$work/tokens.new" "$work/tokens"
}
write_tokens "$robot"
echo "$ops" >"$work/ops.token"
echo "$robot" >"$work/robot.token"
start_server --listen 127.0.0.1:0 --data-dir "$work/auth-data" \
  --drain-timeout 1s --auth-tokens "$work/tokens"
grep -q "auth=2_token_holders" "$work/server.err" || fail "auth not logged"
[ "$("$cli" --server "$addr" health)" = SERVING ] || fail "health needs no token"
expect_refusal() {  # expect_refusal CODE CLI_ARGS...: exit 1 naming CODE
  local code=$1 status=0
  shift
  "$cli" --server "$addr" "$@" >/dev/null 2>"$work/auth.err" || status=$?
  [ "$status" -eq 1 ] && grep -q "$code" "$work/auth.err" ||
    fail "$* gave status $status: $(cat "$work/auth.err")"
}
expect_refusal UNAUTHENTICATED list
expect_refusal INVALID_ARGUMENT --token_file /dev/null list
grep -q -- "--token_file /dev/null: the first line is empty" "$work/auth.err" ||
  fail "empty token file: $(cat "$work/auth.err")"
"$cli" --server "$addr" --token-file "$work/ops.token" create \
  --name arm1.sarcos --csv "$sarcos" >/dev/null || fail "create with ops"
STREAMREG_TOKEN=$robot "$cli" --server "$addr" ingest --model arm1.sarcos \
  --csv "$sarcos" --limit 300 | grep -q "ingested 300 samples" ||
  fail "ingest with the robot's token from STREAMREG_TOKEN"
expect_refusal PERMISSION_DENIED --token-file "$work/robot.token" create \
  --name arm2.sarcos --csv "$sarcos"
grep -q "token of 'robot' may not admin model 'arm2.sarcos'" "$work/auth.err" ||
  fail "denial message: $(cat "$work/auth.err")"
"$robot_sim" --server "$addr" --token-file "$work/ops.token" \
  --model arm1.sim --create --samples 100 >/dev/null ||
  fail "the robot simulator with a token"
if /usr/bin/python3 -c "import grpc" 2>/dev/null; then
  STREAMREG_TOKEN=$robot PYTHONPATH="$python_stubs" \
    /usr/bin/python3 "$source_dir/client/python/examples/robot_replay.py" \
    --server "$addr" --csv "$sarcos" --limit 50 --model arm1.sarcos |
    tail -1 | grep -q "model=350" ||
    fail "the Python robot example with a token"
fi
# The robot's token is replaced: after SIGHUP the old one is refused.
write_tokens "$new_robot"
kill -HUP "$server_pid"
wait_for_log() {
  for _ in $(seq 50); do
    [ "$(grep -c "$1" "$work/server.err")" -ge "$2" ] && return 0
    sleep 0.1
  done
  fail "no $1 in the log: $(cat "$work/server.err")"
}
wait_for_log event=auth_tokens_reloaded 1
expect_refusal UNAUTHENTICATED --token-file "$work/robot.token" info \
  --model arm1.sarcos
STREAMREG_TOKEN=$new_robot "$cli" --server "$addr" info --model arm1.sarcos \
  >/dev/null || fail "the new robot token after SIGHUP"
# A table that does not parse leaves the current one in force.
echo "robot short read *" >"$work/tokens"
kill -HUP "$server_pid"
wait_for_log event=auth_tokens_reload_failed 1
grep -q "tokens line 1: the token has 5 characters" "$work/server.err" ||
  fail "reload error not logged"
STREAMREG_TOKEN=$new_robot "$cli" --server "$addr" info --model arm1.sarcos \
  >/dev/null || fail "the tokens in force after a bad reload"
# So does a table every user may read: tokens are secrets.
write_tokens "$robot"
chmod 644 "$work/tokens"
kill -HUP "$server_pid"
wait_for_log event=auth_tokens_reload_failed 2
grep -q "tokens: readable by every user (mode 0644)" "$work/server.err" ||
  fail "world-readable table not refused: $(cat "$work/server.err")"
STREAMREG_TOKEN=$new_robot "$cli" --server "$addr" info --model arm1.sarcos \
  >/dev/null || fail "the tokens in force after a refused reload"
kill -TERM "$server_pid"
wait "$server_pid" || fail "the server with tokens did not stop cleanly"
server_pid=
# No token ever reaches the log.
if grep -q -e "$ops" -e "$robot" -e "$new_robot" "$work/server.err"; then
  fail "a token was logged"
fi
status=0
"$server_bin" --listen 127.0.0.1:0 --data-dir "$work/auth-data" \
  --auth-tokens "$work/tokens" >/dev/null 2>"$work/auth.err" || status=$?
[ "$status" -eq 2 ] && grep -q -- "--auth_tokens $work/tokens: readable by every user" \
  "$work/auth.err" || fail "world-readable token file at start: $status $(cat "$work/auth.err")"
echo "robot short read *" >"$work/tokens"
chmod 600 "$work/tokens"
status=0
"$server_bin" --listen 127.0.0.1:0 --data-dir "$work/auth-data" \
  --auth-tokens "$work/tokens" >/dev/null 2>"$work/auth.err" || status=$?
[ "$status" -eq 2 ] && grep -q -- "--auth_tokens $work/tokens line 1" \
  "$work/auth.err" || fail "bad token file at start: $status $(cat "$work/auth.err")"
echo "PASS"
