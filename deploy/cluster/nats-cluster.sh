#!/usr/bin/env bash
# A three-node NATS JetStream cluster on free loopback ports (Debian's
# nats-server), for cluster mode's tools and benchmarks on one machine
# (docs/cluster.md).
#
#   deploy/cluster/nats-cluster.sh up DIR     start it; wait until every node
#                                             is healthy; write DIR/nats, one
#                                             "nats://127.0.0.1:PORT PID" per
#                                             node
#   deploy/cluster/nats-cluster.sh down DIR   stop the nodes DIR/nats names
#   deploy/cluster/nats-cluster.sh restart DIR I
#                                             stop node I (SIGTERM: it
#                                             leaves in order) and start it
#                                             again on its ports and store;
#                                             wait until it is healthy
#
# Each node stores in DIR/nodeI and logs to DIR/nodeI.log. Loopback only.
set -euo pipefail

usage() { echo "usage: $0 up|down DIR, or restart DIR NODE" >&2; exit 2; }
[ $# -ge 2 ] || usage
command=$1 dir=$2
nats_server=$(command -v nats-server || echo /usr/sbin/nats-server)
# shellcheck source=deploy/cluster/stop-process.sh
. "$(dirname "$0")/stop-process.sh"

# N distinct free loopback ports, one a line, below the kernel's ephemeral
# range, so that neither an outgoing connection nor another program's
# port-0 bind takes one before the node binds it; a port a test holds
# (/tmp/streamreg-test-ports) is passed over. Another cluster starting
# beside this one may still pick the same port first: `up` then starts
# again on new ports.
free_ports() {
  /usr/bin/python3 - "$1" <<'EOF'
import fcntl, os, random, socket, sys
with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
    first = int(f.read().split()[0])
if first <= 11000:
    first = 32768
wanted, chosen = int(sys.argv[1]), []
for _ in range(1000 * wanted):
    if len(chosen) == wanted:
        break
    port = random.randrange(10000, first)
    if port in chosen:
        continue
    lock = "/tmp/streamreg-test-ports/%d" % port
    if os.path.exists(lock):
        with open(lock) as held:
            try:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    chosen.append(port)
if len(chosen) < wanted:
    raise SystemExit("no free loopback ports")
print("\n".join(map(str, chosen)))
EOF
}

up() {
  mkdir -p "$dir"
  [ -e "$dir/nats" ] && { echo "$dir/nats exists: is a cluster up?" >&2; exit 1; }
  local attempt
  for attempt in 1 2 3; do
    if start_nodes; then
      mv "$dir/nats.starting" "$dir/nats"
      cat "$dir/nats"
      return
    fi
    # Every node again, on new ports and empty stores; this try's logs kept.
    mv "$dir/nats.starting" "$dir/nats"
    down
    for i in 0 1 2; do
      [ -e "$dir/node$i.log" ] && mv "$dir/node$i.log" "$dir/node$i.try$attempt.log"
      rm -rf "$dir/node$i"
    done
  done
  echo "the NATS nodes did not come up in 3 tries; see $dir/node*.try*.log" >&2
  exit 1
}

# start_nodes: the three nodes on new ports, until each is healthy; false
# (the end of the failing node's log on stderr) when one is not.
start_nodes() {
  local -a ports pids
  # Written first: `up` stops what it names whether or not this succeeds.
  : > "$dir/nats.starting"
  mapfile -t ports < <(free_ports 9)
  [ "${#ports[@]}" -eq 9 ] || return 1
  local routes="nats://127.0.0.1:${ports[1]},nats://127.0.0.1:${ports[4]},nats://127.0.0.1:${ports[7]}"
  for i in 0 1 2; do
    # What `restart` starts the node with again: client, cluster, monitor.
    echo "${ports[3 * i]} ${ports[3 * i + 1]} ${ports[3 * i + 2]} $routes" > "$dir/node$i.ports"
    launch "$i"
    pids[i]=$!
    echo "nats://127.0.0.1:${ports[3 * i]} ${pids[i]}" >> "$dir/nats.starting"
  done
  for i in 0 1 2; do
    if ! wait_healthy "$i" "${pids[i]}"; then
      echo "node$i did not become healthy; its log ends:" >&2
      tail -n 15 "$dir/node$i.log" >&2 || true
      return 1
    fi
  done
}

launch() {  # launch I: node I on the ports DIR/nodeI.ports names
  local i=$1 client cluster monitor routes
  read -r client cluster monitor routes < "$dir/node$i.ports"
  setsid "$nats_server" --jetstream --store_dir "$dir/node$i" \
    --addr 127.0.0.1 --port "$client" --http_port "$monitor" \
    --server_name "node$i" --cluster_name streamreg \
    --cluster "nats://127.0.0.1:$cluster" --routes "$routes" \
    --log "$dir/node$i.log" </dev/null >/dev/null 2>&1 &
}

wait_healthy() {  # wait_healthy I PID: until node I reports JetStream healthy
  local monitor
  monitor=$(cut -d' ' -f3 "$dir/node$1.ports")
  for _ in $(seq 300); do
    kill -0 "$2" 2>/dev/null || return 1  # it ended (say, a port taken)
    if /usr/bin/python3 - "$monitor" <<'EOF' 2>/dev/null; then
import sys, urllib.request
urllib.request.urlopen("http://127.0.0.1:%s/healthz" % sys.argv[1], timeout=1)
EOF
      return 0
    fi
    sleep 0.1
  done
  return 1
}

restart() {
  local i=${1:?node} url pid
  [ -e "$dir/nats" ] || { echo "no $dir/nats" >&2; exit 1; }
  read -r url pid < <(sed -n "$((i + 1))p" "$dir/nats")
  [ -n "$pid" ] || { echo "no node $i in $dir/nats" >&2; exit 1; }
  stop_process "$pid"
  launch "$i"
  pid=$!
  sed -i "$((i + 1))s|.*|$url $pid|" "$dir/nats"
  wait_healthy "$i" "$pid" || { echo "node$i did not become healthy; see $dir/node$i.log" >&2; exit 1; }
}

down() {
  [ -e "$dir/nats" ] || { echo "no $dir/nats" >&2; exit 1; }
  while read -r _ pid; do
    kill "$pid" 2>/dev/null || true
    kill -CONT "$pid" 2>/dev/null || true  # a paused node takes it
  done < "$dir/nats"
  while read -r _ pid; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$pid" 2>/dev/null || true
  done < "$dir/nats"
  rm -f "$dir/nats"
}

case "$command" in
  up) [ $# -eq 2 ] || usage; up ;;
  down) [ $# -eq 2 ] || usage; down ;;
  restart) [ $# -eq 3 ] || usage; restart "$3" ;;
  *) usage ;;
esac
