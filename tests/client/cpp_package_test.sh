#!/usr/bin/env bash
# The C++ client library as another project uses it: installed from BUILD
# (cmake --install, component client) into a scratch prefix, with only its
# public headers, which compile there with nothing else of the tree; then
# client/lib/example built against it twice, with find_package(streamreg)
# and with pkg-config, outside the tree; both programs run against a real
# server and must predict the simulated arm (nMSE well under 1), and the
# real-time loop (RealtimeChannel) on the server's local socket.
#
# usage: cpp_package_test.sh REPO BUILD_DIR SERVER WORK_DIR
set -euo pipefail
repo=$1 build=$2 server=$3 work=$4
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" --component client >/dev/null
[ -f "$work/prefix/lib/cmake/streamreg/streamregConfig.cmake" ] ||
  fail "no CMake package installed"
[ ! -e "$work/prefix/bin" ] || fail "the client component installed programs"
public="client.h client_tls.h errors.h ingester.h learn_session.h"
public+=" predict_session.h realtime_channel.h retry_policy.h"
installed=$(cd "$work/prefix/include/streamreg" &&
  find . -type f ! -name '*.pb.h' | sed 's#^\./##' | sort | tr '\n' ' ')
expected=$(for h in $public; do echo "client/lib/$h"; done | sort | tr '\n' ' ')
[ "$installed" = "$expected" ] ||
  fail "installed headers: $installed; the public ones: $expected"

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$repo/client/lib/example" -B "$work/example" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" \
  "${launcher[@]}" >"$work/configure.log" || {
  cat "$work/configure.log"; fail "configuring the example"; }
cmake --build "$work/example" >"$work/build.log" || {
  cat "$work/build.log"; fail "building the example with find_package"; }

export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
[ "$(pkg-config --modversion streamreg-client)" = 0.1.0 ] ||
  fail "pkg-config does not know streamreg-client"
# shellcheck disable=SC2046  # the flags are words
for h in $public; do echo "#include \"client/lib/$h\""; done |
  c++ -std=c++20 -fsyntax-only -x c++ - $(pkg-config --cflags streamreg-client) ||
  fail "the installed public headers do not compile by themselves"
# shellcheck disable=SC2046  # the flags are words
${launcher:+ccache} c++ -O1 "$repo/client/lib/example/robot_loop.cc" \
  $(pkg-config --cflags --libs streamreg-client) -o "$work/robot_loop_pc" ||
  fail "building the example with pkg-config"

# A server of its own, on a free port (its output file made first: the
# background job may open it after the first look).
: >"$work/server.out"
"$server" --listen 127.0.0.1:0 --metrics_listen= --data_dir "$work/data" \
  --local_socket "$work/streamreg.sock" --sync interval:20 \
  >"$work/server.out" 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true' EXIT
addr=""
for _ in $(seq 300); do
  addr=$(sed -n 's/^streamreg-server listening on //p' "$work/server.out")
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || fail "the server did not start: $(cat "$work/server.out")"

check() {  # check PROGRAM TICKS: runs it and checks what it prints
  local out
  out=$("$1" "$addr" "$2") || fail "$1: $out"
  /usr/bin/python3 - "$out" "$2" <<'PY' || fail "$1 printed: $out"
import re, sys
found = re.fullmatch(r"(\d+) ticks, nMSE of the second half: ([0-9.e+-]+)\s*",
                     sys.argv[1])
assert found and found.group(1) == sys.argv[2], sys.argv[1]
assert 0 <= float(found.group(2)) < 0.2, found.group(2)
PY
}
check "$work/example/robot_loop" 1500
check "$work/robot_loop_pc" 500  # the same model, learning on
# The loop that never waits, on the server's local socket: most ticks of
# its second half read a prediction made ahead, and a good one.
out=$("$work/example/realtime_loop" "unix:$work/streamreg.sock" 2000) ||
  fail "realtime_loop: $out"
/usr/bin/python3 - "$out" <<'PY' || fail "realtime_loop printed: $out"
import re, sys
found = re.fullmatch(r"2000 ticks, (\d+) of the second half's 1000 predicted, "
                     r"nMSE ([0-9.e+-]+)\s*", sys.argv[1])
assert found, sys.argv[1]
assert int(found.group(1)) >= 900, found.group(1)
assert 0 <= float(found.group(2)) < 0.2, found.group(2)
PY
echo "PASS: installed, built with find_package and pkg-config, ran"
