#!/bin/sh
# Runs clang's thread-safety analysis (-Wthread-safety, as errors) over every
# source file of the given folders: each lock-protected field names its lock
# (ABSL_GUARDED_BY) and each function the locks it needs, and this checks
# every access against them. GCC builds the code; clang only checks it.
#
# usage: tests/thread_safety_analysis.sh ROOT GENERATED FOLDER...
#   GENERATED: the folder of the generated protobuf and gRPC headers
#   (BUILD_DIR/proto), for the folders that use them
set -eu
root=$1
generated=$2
shift 2
if ! command -v clang++ >/dev/null 2>&1; then
  echo "thread_safety_analysis: clang++ not found (deploy/install-deps.sh installs clang)" >&2
  exit 1
fi
for folder in "$@"; do
  ls "$root/$folder"/*.cc
done | xargs -P 2 -n 1 clang++ -std=c++20 -fsyntax-only -Wthread-safety \
  -Werror=thread-safety -DSTREAMREG_VERSION=\"analysis\" -I"$root" \
  -I"$generated" -I/usr/include/eigen3
echo "thread_safety_analysis: no violations in $*"
