#!/usr/bin/env bash
# Builds the streamreg image from the top-level Dockerfile and proves it
# runs: starts a container on a fresh volume, waits for the health service to
# report SERVING, creates a model, ingests a data set made by the image's own
# robot simulator, predicts, reads /metrics and the status page from outside
# the container, stops the container with SIGTERM and checks it exited
# cleanly (status 0), then
# starts it again on the same volume and checks the model came back with
# every sample, and that a second container (a robot's controller) reaches
# it through its local socket on a volume they share, as
# deploy/compose.yaml's robot does.
#
# Works with Docker (if a daemon answers) or podman. With podman and no
# registry (as on our machines), the debian:bookworm and debian:bookworm-slim
# base images are made locally with debootstrap from the apt mirror; podman
# runs with runc, lowered ulimits and the host network (deploy/podman/
# containers.conf; docs/building.md, "Containers without a Docker engine").
#
# usage: deploy/check-image.sh [--engine docker|podman] [--port PORT]
#                              [--metrics-port PORT (default PORT+1)]
#                              [--keep]   (leave the image and volume)
#                              [--skip-if-unsupported]
#                              [--prebuilt BUILD_DIR]
# With --prebuilt (as `make test` runs it, on build/ci), the image is the
# Dockerfile's runtime stage with the programs of that build copied in,
# instead of the Dockerfile's own build stage compiling them again: the
# same sources, compiler and Debian release, without a second build of
# several minutes. The check of the image is the same.
# With --skip-if-unsupported (as `make test` runs it), a machine that cannot
# run containers at all — podman not working, no base image to be made, no
# container starting from the base image — is reported (with the error)
# and skipped; from the image's own build on, everything must pass.
set -euo pipefail
cd "$(dirname "$0")/.."

engine= port=50071 metrics_port= keep=0 skip_if_unsupported=0 prebuilt=
while [ $# -gt 0 ]; do
  case $1 in
    --engine) engine=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --metrics-port) metrics_port=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --skip-if-unsupported) skip_if_unsupported=1; shift ;;
    --prebuilt) prebuilt=$2; shift 2 ;;
    *) echo "check-image: unknown argument $1" >&2; exit 2 ;;
  esac
done
metrics_port=${metrics_port:-$((port + 1))}

say() { echo "check-image: $*"; }
fail() { echo "check-image: FAILED: $*" >&2; exit 1; }
# The machine, not the image, cannot do this step.
unsupported() {
  if [ "$skip_if_unsupported" -eq 1 ]; then
    say "SKIPPED: $*"
    exit 0
  fi
  fail "$*"
}

as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)

if [ -z "$engine" ]; then
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
    engine=docker
  else
    engine=podman
  fi
fi

# --- podman: its packages, its settings, local base images ---------------
if [ "$engine" = podman ]; then
  missing=()
  for p in podman buildah runc debootstrap uidmap; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
  export CONTAINERS_CONF="$PWD/deploy/podman/containers.conf"
  info=$(podman info 2>&1) || unsupported "podman does not work here: $info"
  build_flags=(--isolation=chroot --pull=never)
  run_flags=(--network=host)
  has_image() {
    podman image exists "docker.io/library/debian:$1" ||
      podman image exists "localhost/debian:$1"
  }
  if ! has_image bookworm; then
    rootfs=$(mktemp -d)
    mirror=$(sed -n 's/^URIs: //p' /etc/apt/sources.list.d/debian.sources \
               2>/dev/null | head -1)
    mirror=${mirror:-http://deb.debian.org/debian}
    say "making debian:bookworm with debootstrap from $mirror"
    "${as_root[@]}" debootstrap --variant=minbase bookworm "$rootfs" "$mirror" \
      >/tmp/check-image-debootstrap.log 2>&1 ||
      unsupported "debootstrap from $mirror failed: $(tail -3 /tmp/check-image-debootstrap.log)"
    imported=$("${as_root[@]}" tar -C "$rootfs" -c . |
      podman import - localhost/debian:bookworm 2>&1) ||
      unsupported "podman cannot import a base image: $imported"
    "${as_root[@]}" rm -rf "$rootfs"
  fi
  # A minbase debootstrap is what the slim image is; one serves as both.
  has_image bookworm-slim ||
    podman tag localhost/debian:bookworm localhost/debian:bookworm-slim
  probe=$(podman run --rm --network=host localhost/debian:bookworm true 2>&1) ||
    unsupported "podman cannot start any container on this machine: $probe"
else
  build_flags=()
  run_flags=(-p "127.0.0.1:$port:$port" -p "127.0.0.1:$metrics_port:$metrics_port")
fi

image=localhost/streamreg:check
volume=streamreg-check-$$
socket_volume=streamreg-check-socket-$$
container=streamreg-check-$$
cli=(streamreg --server "127.0.0.1:$port" --timeout 30s)

cleanup() {
  "$engine" rm -f "$container" >/dev/null 2>&1 || true
  if [ "$keep" -eq 0 ]; then
    "$engine" volume rm -f "$volume" >/dev/null 2>&1 || true
  fi
  "$engine" volume rm -f "$socket_volume" >/dev/null 2>&1 || true
}
trap cleanup EXIT

start=$(date +%s)
build_log=/tmp/check-image-build.log
if [ -z "$prebuilt" ]; then
  say "building $image with $engine"
  "$engine" build "${build_flags[@]}" -t "$image" . >"$build_log" 2>&1 ||
    { tail -30 "$build_log" >&2; fail "the image did not build"; }
else
  say "building $image with $engine: the runtime stage and the programs of $prebuilt"
  context=$(mktemp -d)
  mkdir "$context/bin"
  for program in server/streamreg-server client/streamreg client/streamreg-robot-sim; do
    [ -x "$prebuilt/$program" ] || fail "$prebuilt/$program is not built"
    install -m 0755 --strip "$prebuilt/$program" "$context/bin/"
  done
  printf 'FROM %s\nCOPY bin/ /usr/local/bin/\n' "$image-runtime" \
    >"$context/Containerfile"
  { "$engine" build "${build_flags[@]}" --target runtime -t "$image-runtime" . &&
    "$engine" build "${build_flags[@]}" -f "$context/Containerfile" \
      -t "$image" "$context"; } >"$build_log" 2>&1 ||
    { tail -30 "$build_log" >&2; fail "the image did not build"; }
  rm -rf "$context"
fi
say "built in $(( $(date +%s) - start )) s: $("$engine" image inspect --format '{{.Size}}' "$image") bytes"

run_server() {
  "$engine" run -d --name "$container" "${run_flags[@]}" \
    -v "$volume:/var/lib/streamreg" -v "$socket_volume:/run/streamreg" \
    "$image" --listen "0.0.0.0:$port" --metrics-listen "0.0.0.0:$metrics_port" \
    --local-socket /run/streamreg/streamreg.sock >/dev/null
}
in_container() { "$engine" exec "$container" "$@"; }
wait_serving() {
  for _ in $(seq 60); do
    if in_container "${cli[@]}" health 2>/dev/null | grep -qx SERVING; then
      return 0
    fi
    sleep 1
  done
  "$engine" logs "$container" >&2 || true
  fail "the health service never reported SERVING"
}
stop_cleanly() {
  "$engine" stop --time 60 "$container" >/dev/null  # SIGTERM, then waits
  local code
  code=$("$engine" inspect --format '{{.State.ExitCode}}' "$container")
  [ "$code" = 0 ] || { "$engine" logs "$container" >&2; fail "exit status $code after SIGTERM"; }
  "$engine" rm "$container" >/dev/null
}

"$engine" volume create "$volume" >/dev/null
"$engine" volume create "$socket_volume" >/dev/null
run_server
wait_serving
say "SERVING; running as uid $(in_container id -u)"
[ "$(in_container id -u)" != 0 ] || fail "the server runs as root"

in_container streamreg-robot-sim --samples 3000 --out /tmp/arm.csv
in_container "${cli[@]}" ingest --model arm --csv /tmp/arm.csv --create \
  | tail -1
predictions=$(in_container "${cli[@]}" predict --model arm --csv /tmp/arm.csv \
  --limit 50 | wc -l)
[ "$predictions" -eq 51 ] || fail "predict printed $predictions lines, not a header and 50 rows"
say "created, ingested 3000 samples, predicted 50"

# Prometheus, from outside the container.
scrape=$(/usr/bin/python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
  "http://127.0.0.1:$metrics_port/metrics") || fail "/metrics did not answer"
grep -qx 'streamreg_model_samples_seen_total{model="arm"} 3000' <<<"$scrape" ||
  fail "/metrics does not count the 3000 samples: $(grep arm <<<"$scrape" | head -5)"
say "/metrics on port $metrics_port counts the 3000 samples"
status=$(/usr/bin/python3 -c 'import json, sys, urllib.request
page = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
assert "/status.js" in page, "no status page"
status = json.load(urllib.request.urlopen(sys.argv[1] + "api/status", timeout=10))
print(*[m["samples_seen"] for m in status["models"] if m["name"] == "arm"])' \
  "http://127.0.0.1:$metrics_port/") || fail "the status page did not answer"
[ "$status" = 3000 ] || fail "the status page shows arm with $status samples"
say "the status page at / shows arm with its 3000 samples"

stop_cleanly
say "stopped by SIGTERM with status 0"

run_server
wait_serving
samples=$(in_container "${cli[@]}" info --model arm --raw | sed -n 's/^ *num_samples: //p')
[ "$samples" = 3000 ] || fail "after a restart the model holds '$samples' samples, not 3000"
say "restarted on the same volume: the model is back with 3000 samples"

# A controller in a container of its own, on the server's local socket.
samples=$("$engine" run --rm -v "$socket_volume:/run/streamreg" \
  --entrypoint streamreg "$image" \
  --server unix:/run/streamreg/streamreg.sock --timeout 30s \
  info --model arm --raw | sed -n 's/^ *num_samples: //p') ||
  fail "a second container did not reach the server's local socket"
[ "$samples" = 3000 ] || fail "on the local socket, arm holds '$samples' samples, not 3000"
say "a second container reached the server on its local socket (a shared volume)"
stop_cleanly
say "OK in $(( $(date +%s) - start )) s"
