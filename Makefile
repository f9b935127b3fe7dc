# Thin wrapper over CMake. `make demo` and `make test` do every set-up step themselves.
JOBS ?= $(shell nproc)
RELEASE := build/release
ASAN := build/asan
CMAKE_FLAGS ?=

.PHONY: all deps build asan test test-release test-asan demo bench quality format clean kat

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(RELEASE) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(RELEASE) -j $(JOBS)

asan: deps
	@cmake -S . -B $(ASAN) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DNEARDUP_SANITIZE=ON -DNEARDUP_BUILD_BENCH=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(ASAN) -j $(JOBS)

test-release: build
	@ctest --test-dir $(RELEASE) --output-on-failure -j $(JOBS)

test-asan: asan
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  NEARDUP_SANITIZED=1 ctest --test-dir $(ASAN) --output-on-failure -j $(JOBS)

test: test-release test-asan

demo: build
	@scripts/demo.sh $(RELEASE)/cli/neardup

bench: build
	@scripts/install-deps.sh --bench
	@bench/run.sh $(RELEASE)

quality: build
	@scripts/install-deps.sh --quality
	@bench/quality/run.sh $(RELEASE)

format:
	@clang-format -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf build

# Regenerates the fingerprint known-answer vectors (only when the fingerprint is meant to change).
kat: build
	@$(RELEASE)/tests/neardup_kat_generate tests/data/kat_texts.txt > tests/data/fingerprint_vectors.tsv
	@$(RELEASE)/tests/neardup_kat_generate --sketch tests/data/kat_texts.txt > tests/data/sketch_vectors.tsv
