"""Builds the streamreg package with its gRPC stubs.

The stubs (streamreg.v1.*_pb2, *_pb2_grpc) are generated from the
repository's proto/ (or $STREAMREG_PROTO_DIR) when the package is built, so
they always match the server's API; nothing generated is kept in the source
tree. They are made by protoc with gRPC's Python plugin (Debian:
protobuf-compiler, protobuf-compiler-grpc), the compiler that matches the
protobuf runtime Debian ships; grpcio-tools is used only when those are
missing and its bundled protoc is new enough (Debian 12's python3-grpc-tools
bundles protoc 3.5, which predates proto3's `optional`). The rest of the
metadata is in pyproject.toml.
"""

import os
import pathlib
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = pathlib.Path(__file__).resolve().parent
PROTOS = ["model.proto", "regression.proto", "model_service.proto",
          "regression_service.proto"]


def proto_dir():
    configured = os.environ.get("STREAMREG_PROTO_DIR")
    directory = (pathlib.Path(configured) if configured
                 else HERE.parent.parent / "proto")
    if not (directory / "streamreg/v1/model.proto").is_file():
        raise SystemExit(f"streamreg: no streamreg/v1/*.proto under "
                         f"{directory}; build from the repository or set "
                         "STREAMREG_PROTO_DIR")
    return directory


def generate(source, out):
    """Runs the protobuf compiler over PROTOS into `out`."""
    inputs = [f"streamreg/v1/{name}" for name in PROTOS]
    protoc = shutil.which("protoc")
    plugin = shutil.which("grpc_python_plugin")
    if protoc and plugin:
        subprocess.run([protoc, f"-I{source}", f"--python_out={out}",
                        f"--grpc_out={out}",
                        f"--plugin=protoc-gen-grpc={plugin}", *inputs],
                       check=True)
        return
    try:
        from grpc_tools import protoc as bundled
    except ImportError:
        raise SystemExit("streamreg: generating the stubs needs protoc and "
                         "grpc_python_plugin (Debian: protobuf-compiler "
                         "protobuf-compiler-grpc) or grpcio-tools") from None
    import grpc_tools
    well_known = pathlib.Path(grpc_tools.__file__).parent / "_proto"
    if bundled.main(["protoc", f"-I{source}", f"-I{well_known}",
                     f"--python_out={out}", f"--grpc_python_out={out}",
                     *inputs]) != 0:
        raise SystemExit("streamreg: grpcio-tools could not compile the "
                         "protos (is its protoc older than 3.15?)")


class BuildPyWithStubs(build_py):
    """build_py, then the stubs into the build's streamreg/v1."""

    def run(self):
        super().run()
        out = pathlib.Path(self.build_lib)
        (out / "streamreg/v1").mkdir(parents=True, exist_ok=True)
        generate(proto_dir(), out)
        (out / "streamreg/v1/__init__.py").write_text(
            '"""Generated from proto/streamreg/v1 at build time."""\n')


setup(cmdclass={"build_py": BuildPyWithStubs})
