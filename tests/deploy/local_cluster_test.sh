#!/usr/bin/env bash
# deploy/cluster/local-cluster.sh end to end, through the CLI: the cluster
# comes up (3 NATS nodes, 3 servers), a model created and ingested through
# the list of all servers is hosted by 2 of them, a client given only the
# server that does not host it is sent to those that do, both replicas
# answer the same predictions and counts, every server lists it, and `down`
# stops every process.
#
# The Python client, given only that server, is sent there too. A replica
# paused with SIGSTOP does not hold up reads: the CLI and the Python client
# ask the other one within 3 s.
#
# usage: local_cluster_test.sh SOURCE_DIR STREAMREG_SERVER STREAMREG_CLI
#                              PYTHON_STUBS_DIR
set -euo pipefail
source_dir=$1
export STREAMREG_SERVER=$2
cli=$3
python_stubs=$4
work=$(mktemp -d)
script="$source_dir/deploy/cluster/local-cluster.sh"
cleanup() {
  [ -e "$work/servers" ] && "$script" down "$work" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

STREAMREG_SERVER_FLAGS="--cluster_replicas 2" "$script" up "$work" >/dev/null
[ "$(wc -l < "$work/servers")" -eq 3 ] || fail "not 3 servers"
[ "$(wc -l < "$work/nats")" -eq 3 ] || fail "not 3 NATS nodes"
all=$(cut -d' ' -f1 "$work/servers" | paste -sd, -)

csv="$source_dir/data/yacht/yacht.csv"
"$cli" --server "$all" ingest --model yacht --csv "$csv" --create >/dev/null
rows=$(($(wc -l < "$csv") - 1))

# Which servers serve it: those that logged hosting it (the second owner
# starts within a reconcile round of the creation).
hosting() { grep -l "event=cluster_hosting model=yacht" "$work"/server?.log | wc -l; }
for _ in $(seq 100); do [ "$(hosting)" -ge 2 ] && break; sleep 0.1; done
serving=() others=()
i=0
for address in $(cut -d' ' -f1 "$work/servers"); do
  if grep -q "event=cluster_hosting model=yacht" "$work/server$i.log"; then
    serving+=("$address")
  else
    others+=("$address")
  fi
  i=$((i + 1))
done
[ "${#serving[@]}" -eq 2 ] || fail "served by ${#serving[@]} servers, not 2"
[ "${#others[@]}" -eq 1 ] || fail "${#others[@]} servers do not serve it"

# Both replicas reach every row, and predict alike, also for a client that
# was only given the other server (which names the replicas: the CLI
# follows).
for address in "${serving[@]}" "${others[0]}"; do
  for _ in $(seq 100); do
    samples=$("$cli" --server "$address" info --model yacht --json |
      /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["stats"].get("num_samples", 0))')
    [ "$samples" -eq "$rows" ] && break
    sleep 0.1
  done
  [ "$samples" -eq "$rows" ] || fail "$address has $samples of $rows samples"
  "$cli" --server "$address" predict --model yacht --csv "$csv" --limit 50 \
    > "$work/predict-$address.csv"
done
cmp -s "$work/predict-${serving[0]}.csv" "$work/predict-${serving[1]}.csv" ||
  fail "the replicas predict differently"
cmp -s "$work/predict-${serving[0]}.csv" "$work/predict-${others[0]}.csv" ||
  fail "the redirected client got other predictions"

# Every server lists it, the one that does not serve it too (the CLI asks
# the servers that do for the rest).
"$cli" --server "${others[0]}" list | grep -q "yacht" ||
  fail "the server that does not serve it does not list it"

# The Python client, given only the server that does not serve the model.
PYTHONPATH="$python_stubs" /usr/bin/python3 - \
    "${others[0]}" "$rows" <<'EOF' || fail "the Python client"
import sys
import numpy as np
import streamreg
address, rows = sys.argv[1], int(sys.argv[2])
with streamreg.Client(address, timeout=10) as client:
    assert client.info("yacht").samples == rows
    # Listed by a server that does not serve it, completed from its servers.
    listed = {m.name: m for m in client.list()}
    assert listed["yacht"].samples == rows, listed
    x = np.array([[-2.3, 0.568, 4.78, 3.99, 3.17, 0.125]])
    assert client.predict("yacht", x).y.shape == (1, 1)
    with client.learn_stream("yacht") as stream:
        answer = stream.learn(x[0], [0.5])
        assert answer.y.shape == (1,), answer
    # Closed once the sample is in the log on a quorum and applied.
    assert stream.durable_samples == 1, stream.durable_samples
    assert client.info("yacht").samples == rows + 1
    client.create("boat", inputs=2, targets=1)
    i = np.arange(50.0)
    client.learn("boat", np.column_stack([i, -i]), i, batch_size=20)
    assert client.info("boat").samples == 50
    client.delete("boat")
EOF

# A replica paused (SIGSTOP: a stall, a VM migration) while clients are
# given the server that does not serve the model and the other replica:
# each read is answered within 3 s (a silent server is passed over after
# the client's replica attempt timeout, 1 s), by the CLI afresh and by a
# Python client that knew the paused one, with the same predictions.
pid_of() { grep "^$1 " "$work/servers" | cut -d' ' -f2; }
millis() { date +%s%3N; }
for i in 0 1; do
  paused=${serving[$i]} live=${serving[$((1 - i))]}
  "$cli" --server "$live" predict --model yacht --csv "$csv" --limit 50 \
    >"$work/before.csv"
  kill -STOP "$(pid_of "$paused")"
  for attempt in 1 2 3; do
    start=$(millis)
    "$cli" --server "${others[0]},$live" predict --model yacht --csv "$csv" \
      --limit 50 >"$work/paused.csv" 2>"$work/paused.err" ||
      { kill -CONT "$(pid_of "$paused")"; fail "predict with $paused paused: $(cat "$work/paused.err")"; }
    took=$(($(millis) - start))
    [ "$took" -lt 3000 ] ||
      { kill -CONT "$(pid_of "$paused")"; fail "predict with $paused paused took $took ms"; }
    cmp -s "$work/paused.csv" "$work/before.csv" ||
      { kill -CONT "$(pid_of "$paused")"; fail "other predictions with $paused paused"; }
  done
  kill -CONT "$(pid_of "$paused")"
done
PYTHONPATH="$python_stubs" /usr/bin/python3 - "$work" "${others[0]}" \
    "${serving[@]}" <<'EOF' || fail "the Python client with a replica paused"
import os, signal, sys, time
import numpy as np
import streamreg
work, other, replicas = sys.argv[1], sys.argv[2], sys.argv[3:]
pids = dict(line.split() for line in open(os.path.join(work, "servers")))
x = np.array([[-2.3, 0.568, 4.78, 3.99, 3.17, 0.125]])
for paused in replicas:
    live = [r for r in replicas if r != paused][0]
    with streamreg.Client(f"{other},{live}", timeout=10) as client:
        expected = client.predict("yacht", x).y  # knows both replicas now
        os.kill(int(pids[paused]), signal.SIGSTOP)
        try:
            worst, start = 0.0, time.monotonic()
            while time.monotonic() - start < 3:
                began = time.monotonic()
                np.testing.assert_array_equal(expected,
                                              client.predict("yacht", x).y)
                worst = max(worst, time.monotonic() - began)
        finally:
            os.kill(int(pids[paused]), signal.SIGCONT)
        assert worst < 3, f"{paused} paused: a prediction took {worst:.2f} s"
EOF

pids=$(cut -d' ' -f2 "$work/servers" "$work/nats")
"$script" down "$work"
for pid in $pids; do
  kill -0 "$pid" 2>/dev/null && fail "process $pid still running after down"
done
echo "local cluster: 3 NATS nodes, 3 servers, $rows samples on 2 replicas: ok"
