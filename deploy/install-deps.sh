#!/usr/bin/env bash
# Installs every build, test and benchmark dependency of streamreg from Debian 12
# packages. Idempotent and non-interactive; run as root (or with sudo available).
#
# usage: deploy/install-deps.sh [--build-only]
#   --build-only  what building needs, without the tools only the tests use
#                 (podman & co. to build and run the image, Chromium for the
#                 status page, promtool, the Python packaging tools, git and
#                 procps for the README's commands test), as the
#                 image's own build stage does
set -euo pipefail

test_tools=1
case "${1:-}" in
  --build-only) test_tools=0 ;;
  "") ;;
  *) echo "install-deps: unknown argument $1" >&2; exit 2 ;;
esac

packages=(
  build-essential cmake ninja-build ccache lld pkg-config make
  clang-format clang libclang-rt-14-dev libfuzzer-14-dev llvm-14
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler grpc-proto
  libabsl-dev libeigen3-dev libspdlog-dev libfmt-dev nlohmann-json3-dev zlib1g-dev
  libssl-dev libcpp-httplib-dev
  libgtest-dev libgmock-dev libbenchmark-dev libnanoflann-dev
  liborocos-kdl-dev gnuplot-nox
  libnats-dev nats-server
  python3-grpcio python3-protobuf python3-yaml python3-prometheus-client
  python3-sklearn
  openssl
)
if [ "$test_tools" -eq 1 ]; then
  packages+=(podman buildah runc debootstrap uidmap
    chromium prometheus
    python3-numpy python3-venv python3-pip python3-wheel
    python3-setuptools python3-build python3-pandas
    git procps)  # the README's commands test: a clone, and pgrep
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root (no sudo)" >&2; exit 1; }
  as_root=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
