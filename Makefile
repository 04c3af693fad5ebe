# Entry points. `make test` is what CI runs (after deploy/install-deps.sh).
.PHONY: test build run format format-check tsan asan fuzz soak bench clean image-check

CORE_SOURCES := $(shell find common core server client tests bench -name '*.cc' -o -name '*.h')
# `make run CMAKE=true` runs the server of a build made before (the README's
# commands test: tests/readme_commands_test.py).
CMAKE ?= cmake

# Everything CI checks, each test once: formatting; the programs built with
# GCC, warnings as errors, with the tests too slow or too statistical for a
# sanitizer run on them (the ci presets); the concurrency tests under
# ThreadSanitizer; the rest of the suite under AddressSanitizer +
# UndefinedBehaviorSanitizer (clang); every fuzz target for 30 s; and the
# container image built and run end to end. `ctest --preset dev` runs the
# whole suite on one build.
test: format-check
	cmake --preset ci
	cmake --build --preset ci
	ctest --preset ci
	$(MAKE) tsan
	$(MAKE) asan
	$(MAKE) fuzz FUZZ_SECONDS=30
	deploy/check-image.sh --skip-if-unsupported --prebuilt build/ci

build:
	cmake --preset dev
	cmake --build --preset dev

tsan:
	cmake --preset tsan
	cmake --build --preset tsan
	ctest --preset tsan

asan:
	cmake --preset asan
	cmake --build --preset asan
	ctest --preset asan

# Builds every fuzz target (clang, ASan + UBSan) and runs each for
# FUZZ_SECONDS (tests/fuzz/README.md); fails on any crash.
FUZZ_SECONDS ?= 30
fuzz:
	cmake --preset fuzz
	cmake --build --preset fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run_fuzzers.sh build/fuzz

# The soak with faults for its long run (tests/soak/soak_test.cc, about 35
# minutes): 100 kill -9 with the other faults between them, every model
# checked after each; the counts go to build/dev/soak.json.
soak:
	cmake --preset dev
	cmake --build --preset dev --target streamreg-soak
	./build/dev/tests/streamreg-soak --kills=100 --duration=90m \
	  --kill_every_min=10s --kill_every_max=30s \
	  --samples_per_generation=150000 --report=build/dev/soak.json

format:
	clang-format -i $(CORE_SOURCES)

format-check:
	clang-format --dry-run -Werror $(CORE_SOURCES)

# The index benchmark of bench/README.md (several minutes).
bench: build
	./build/dev/bench/streamreg-bench-index --json build/dev/bench-index.json

clean:
	rm -rf build

# Builds the container image and runs it end to end with Docker or podman
# (deploy/README.md); `test` runs it last (about 4 minutes from nothing).
image-check:
	deploy/check-image.sh

# Builds and runs the server on 127.0.0.1:50051 and the local socket
# ./streamreg.sock (clients dial unix:streamreg.sock), with ./streamreg-data.
run:
	$(CMAKE) --preset dev
	$(CMAKE) --build --preset dev --target streamreg-server streamreg \
	  streamreg-robot-sim streamreg_python
	./build/dev/server/streamreg-server --listen 127.0.0.1:50051 \
	  --local-socket streamreg.sock --data-dir streamreg-data
