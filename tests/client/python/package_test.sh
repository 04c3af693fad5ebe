#!/usr/bin/env bash
# The Python package as a user gets it, offline over Debian's packages:
# the wheel built with `python3 -m build --wheel --no-isolation` (it carries
# the generated stubs), installed into a fresh virtual environment over
# Debian's grpcio, protobuf, numpy, scikit-learn and pandas
# (--system-site-packages), then client_test.py and sklearn_test.py run
# with that environment's interpreter against a real server, from outside
# the source tree. Also the README's install (`pip install ./client/python`
# into ./venv) in a git copy of the files it reads: neither it nor the
# wheel's build leaves the tree dirty.
#
# usage: package_test.sh REPO SERVER CLI WORK_DIR
set -euo pipefail
repo=$1 server=$2 cli=$3 work=$4
python=/usr/bin/python3  # Debian's, with python3-build and the packages

rm -rf "$work" && mkdir -p "$work/src/client"
# What the build reads (client/python, the protos beside it) and the
# repository's .gitignore, as a repository of its own: the build leaves
# nothing in the real one, and its cleanliness can be asked of git.
cp -r "$repo/client/python" "$work/src/client/python"
cp -r "$repo/proto" "$work/src/proto"
cp "$repo/.gitignore" "$work/src/.gitignore"
rm -rf "$work/src/client/python/build" "$work/src/client/python/dist" \
  "$work/src/client/python/"*.egg-info
find "$work/src" -name __pycache__ -prune -exec rm -rf {} +
git -C "$work/src" init --quiet
git -C "$work/src" add --all
git -C "$work/src" -c user.name=test -c user.email=test@localhost \
  commit --quiet --message "the package's sources"

dirty() {
  local status
  status=$(git -C "$work/src" status --porcelain)
  if [ -n "$status" ]; then
    echo "package_test: $1 left the tree dirty:" >&2
    echo "$status" >&2
    exit 1
  fi
}

# The wheel, as the README builds it.
(cd "$work/src" && "$python" -m build --wheel --no-isolation client/python \
  > "$work/build.log" 2>&1) || { cat "$work/build.log" >&2; exit 1; }
dirty "python3 -m build --wheel"
wheel=$(ls "$work"/src/client/python/dist/streamreg-*.whl)
for generated in streamreg/v1/model_pb2.py \
  streamreg/v1/model_service_pb2_grpc.py \
  streamreg/v1/regression_service_pb2_grpc.py streamreg/sklearn.py; do
  "$python" -m zipfile -l "$wheel" | grep " *$generated " >/dev/null ||
    { echo "package_test: the wheel has no $generated" >&2; exit 1; }
done

# The README's install from the source folder.
(cd "$work/src" && "$python" -m venv --system-site-packages venv &&
  venv/bin/pip install --quiet --no-index --no-build-isolation \
    --no-cache-dir ./client/python)
dirty "the README's pip install"

# The wheel in a fresh environment, and the tests run from it.
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index --no-cache-dir "$wheel"
cd "$work"
"$work/venv/bin/python" -c '
import streamreg, streamreg.sklearn, streamreg.v1.model_service_pb2_grpc as stubs
assert "site-packages" in streamreg.__file__, streamreg.__file__
assert hasattr(stubs, "ModelServiceStub")
'
"$work/venv/bin/python" "$repo/tests/client/python/client_test.py" \
  "$server" "$repo" "$cli"
"$work/venv/bin/python" "$repo/tests/client/python/sklearn_test.py" \
  "$server" "$cli" "$repo"
