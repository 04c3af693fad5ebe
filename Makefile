# Entry points. `make test` is what CI runs (after deploy/install-deps.sh).
.PHONY: test build format format-check tsan bench clean

CORE_SOURCES := $(shell find core tests bench -name '*.cc' -o -name '*.h')

# Everything CI checks: formatting, the warnings-as-errors build and its
# suite, and the concurrency tests under ThreadSanitizer.
test: format-check
	cmake --preset ci
	cmake --build --preset ci
	ctest --preset ci
	$(MAKE) tsan

build:
	cmake --preset dev
	cmake --build --preset dev

tsan:
	cmake --preset tsan
	cmake --build --preset tsan
	ctest --preset tsan

format:
	clang-format -i $(CORE_SOURCES)

format-check:
	clang-format --dry-run -Werror $(CORE_SOURCES)

# The index benchmark of bench/README.md (several minutes).
bench: build
	./build/dev/bench/streamreg-bench-index --json build/dev/bench-index.json

clean:
	rm -rf build
