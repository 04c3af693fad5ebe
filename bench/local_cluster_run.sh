# shellcheck shell=bash
# Sourced by the benches that run one local cluster (cluster_faults.sh,
# cluster_create_down.sh). `local_cluster_run BUILD_DIR OUT_DIR` sets
# $build and $out (absolute; OUT_DIR made), $cli (the client), $cluster_sh
# (deploy/cluster/local-cluster.sh), $work (a scratch directory) and $dir
# (the cluster's directory in it), and arranges that on exit the script's
# before_cluster_down function runs if it has one (to stop its clients),
# the servers' and nodes' logs are copied into $out, the cluster is taken
# down and $work removed. `seconds_since START` prints the seconds since
# START (a `date +%s.%N`).
# shellcheck disable=SC2034  # the variables are the caller's
local_cluster_run() {
  build=$(cd "$1" && pwd)
  mkdir -p "$2"
  out=$(cd "$2" && pwd)
  cluster_sh="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../deploy/cluster/local-cluster.sh"
  cli="$build/client/streamreg"
  work=$(mktemp -d)
  dir="$work/cluster"
  trap local_cluster_cleanup EXIT
}

local_cluster_cleanup() {
  if declare -F before_cluster_down >/dev/null; then before_cluster_down; fi
  cp "$dir"/server?.log "$dir"/node?.log "$out"/ 2>/dev/null || true
  [ -e "$dir/servers" ] && "$cluster_sh" down "$dir" >/dev/null 2>&1
  rm -rf "$work"
}

seconds_since() { echo "$(date +%s.%N) - $1" | bc; }
