# Sourced by the bench scripts. listening_address OUT [PID] prints the
# address a streamreg-server writing its stdout to OUT listens on, once its
# "listening" line is there (in cluster mode, once it has joined); fails
# after 30 s, or as soon as process PID (if given) is gone.
listening_address() {
  local out=$1 pid=${2:-} address=
  for _ in $(seq 300); do
    # OUT may not exist yet: the server's shell opens it after the fork.
    address=$(sed -n 's/^streamreg-server listening on //p' "$out" 2>/dev/null || true)
    [ -n "$address" ] && { echo "$address"; return 0; }
    [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && break
    sleep 0.1
  done
  echo "the server writing to $out did not start" >&2
  return 1
}

# with_scratch_server: a bench script running one server at a time — $work
# a new scratch directory, $server_pid empty (set it to the server's pid);
# at exit, that server is killed and waited for and $work removed.
with_scratch_server() {
  work=$(mktemp -d)
  server_pid=
  trap 'if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null && wait "$server_pid" || true; fi; rm -rf "$work"' EXIT
}
