#!/usr/bin/env bash
# The Python package as a user installs it: a virtual environment over
# Debian's grpcio, protobuf and numpy (--system-site-packages), `pip
# install` of client/python offline (no index, no build isolation), then
# client_test.py run with that environment's interpreter against a real
# server, from outside the source tree.
#
# usage: package_test.sh REPO SERVER WORK_DIR
set -euo pipefail
repo=$1 server=$2 work=$3

rm -rf "$work" && mkdir -p "$work"
# A copy of what pip reads (client/python and the protos beside it), so the
# build leaves nothing in the repository.
mkdir -p "$work/src/client"
cp -r "$repo/client/python" "$work/src/client/python"
cp -r "$repo/proto" "$work/src/proto"
rm -rf "$work/src/client/python/build" "$work/src/client/python/"*.egg-info

/usr/bin/python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index --no-build-isolation \
  --no-cache-dir "$work/src/client/python"
# The stubs were generated into the installed package.
(cd "$work" && "$work/venv/bin/python" -c '
import streamreg, streamreg.v1.model_service_pb2_grpc as stubs
assert "site-packages" in streamreg.__file__, streamreg.__file__
assert hasattr(stubs, "ModelServiceStub")
')
cd "$work"
"$work/venv/bin/python" "$repo/tests/client/python/client_test.py" \
  "$server" "$repo"
