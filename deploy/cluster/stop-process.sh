# shellcheck shell=bash
# stop_process PID [SECONDS]: SIGTERM (and SIGCONT, so that a paused
# process takes it), then SIGKILL if it is still there after SECONDS (5);
# returns once it is gone (its ports and locks free).
# Sourced by the cluster scripts beside it.
stop_process() {
  local pid=$1 tries=$((${2:-5} * 20))
  kill "$pid" 2>/dev/null || true
  kill -CONT "$pid" 2>/dev/null || true
  for _ in $(seq "$tries"); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.05; done
  kill -9 "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}
