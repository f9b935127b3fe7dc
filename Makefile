# Thin wrapper over CMake. `make demo` and `make test` do every set-up step themselves.
JOBS ?= $(shell nproc)
# Tests run two per core: many of them wait on servers, clusters and child processes much of the time.
TEST_JOBS ?= $(shell echo $$(( $$(nproc) * 2 )))
RELEASE := build/release
ASAN := build/asan
CMAKE_FLAGS ?=

.PHONY: all deps build build-tests wasm asan test test-release test-asan demo bench quality format format-check clean kat fuzz

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(RELEASE) -G Ninja -DCMAKE_BUILD_TYPE=Release -DNEARDUP_BUILD_BENCH=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(RELEASE) -j $(JOBS)

# The Release build without the benchmark programs (what the tests need).
build-tests: deps
	@cmake -S . -B $(RELEASE) -G Ninja -DCMAKE_BUILD_TYPE=Release -DNEARDUP_BUILD_BENCH=OFF -DNEARDUP_BUILD_PYTHON=ON \
	  -DNEARDUP_BUILD_WASM=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(RELEASE) -j $(JOBS)

# The WebAssembly module and the JavaScript package (doc/wasm.md), in build/release/wasm/js.
wasm: deps
	@cmake -S . -B $(RELEASE) -G Ninja -DCMAKE_BUILD_TYPE=Release -DNEARDUP_BUILD_WASM=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(RELEASE) -j $(JOBS) --target neardup_wasm
	@echo "wasm: the npm package is in $(RELEASE)/wasm/js"

# The sanitizer build is for the tests only, and built to be quick: line tables only (-g1, enough for
# ASan's reports), a unity build (the library compiles in a few large files), the tests' own code at
# -O0 (CMakeLists.txt), and executables that are not position-independent (no start-up relocation of
# ASan's metadata in each of the CLI tests' processes). The Release build keeps the library file by
# file, so that a missing #include in it still fails (the CLI is batched in both: cli/CMakeLists.txt).
# The Python extension is tested in the Release build only: an instrumented extension
# cannot be loaded by the uninstrumented interpreter without preloading the sanitizer runtime, whose
# leak reports would then be CPython's.
asan: deps
	@cmake -S . -B $(ASAN) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_UNITY_BUILD=ON \
	  -DNEARDUP_SANITIZE=ON -DNEARDUP_BUILD_BENCH=OFF -DNEARDUP_BUILD_PYTHON=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(ASAN) -j $(JOBS)

test-release: build-tests
	@ctest --test-dir $(RELEASE) --output-on-failure -j $(TEST_JOBS)

test-asan: asan
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  NEARDUP_SANITIZED=1 ctest --test-dir $(ASAN) --output-on-failure -j $(TEST_JOBS)

# make test: the Release build, then its tests while the sanitizer build compiles beside them at the
# lowest CPU priority (the tests spend much of their time waiting on servers, clusters and child
# processes: the build takes that time instead of running after them), then the sanitizer tests.
# The build's output is kept in build/asan-build.log and shown when it fails.
test: build-tests
	@status=0; \
	( nice -n 19 $(MAKE) --no-print-directory asan >build/asan-build.log 2>&1; echo $$? >build/asan-build.status ) & \
	ctest --test-dir $(RELEASE) --output-on-failure -j $(TEST_JOBS) || status=$$?; \
	wait; \
	if [ "$$(cat build/asan-build.status)" != 0 ]; then cat build/asan-build.log; echo "make test: the sanitizer build failed"; exit 1; fi; \
	if [ $$status != 0 ]; then exit $$status; fi; \
	$(MAKE) --no-print-directory test-asan

demo: build
	@scripts/demo.sh $(RELEASE)/cli/neardup

bench: build
	@scripts/install-deps.sh --bench
	@bench/run.sh $(RELEASE)

quality: build
	@scripts/install-deps.sh --quality
	@bench/quality/run.sh $(RELEASE)

# Every C++ file of the tree is formatted by .clang-format; `make format-check` (run by .ci/run) fails
# naming the files that are not.
# (New files count before they are added: git's untracked files that it does not ignore.)
FORMATTED = $$(git ls-files --cached --others --exclude-standard '*.h' '*.cc' | grep -v '^tests/data/')

format:
	@clang-format -i $(FORMATTED)

format-check: deps
	@clang-format --dry-run --Werror $(FORMATTED)

clean:
	rm -rf build

# Regenerates the fingerprint known-answer vectors (only when the fingerprint is meant to change).
kat: build
	@$(RELEASE)/tests/neardup_kat_generate tests/data/kat_texts.txt > tests/data/fingerprint_vectors.tsv
	@$(RELEASE)/tests/neardup_kat_generate --sketch tests/data/kat_texts.txt > tests/data/sketch_vectors.tsv

# Fuzzes the text, JSONL and storage entry points, the online index's records (settings lines,
# store records, signature files), the Unicode tables of the WebAssembly build against ICU with libFuzzer (clang, ASan + UBSan), FUZZ_SECONDS
# each; new inputs that widen coverage land in build/fuzz/corpus, crashes in build/fuzz/.
FUZZ_SECONDS ?= 60
fuzz: deps
	@CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug -DNEARDUP_SANITIZE=ON \
	  -DNEARDUP_FUZZ=ON -DNEARDUP_BUILD_BENCH=OFF >/dev/null
	@cmake --build build/fuzz -j $(JOBS) --target fuzz_text fuzz_jsonl fuzz_storage fuzz_records fuzz_snapshot fuzz_service fuzz_unicode_tables
	@for t in fuzz_text fuzz_jsonl fuzz_storage fuzz_records fuzz_snapshot fuzz_service fuzz_unicode_tables; do \
	  mkdir -p build/fuzz/corpus/$$t; \
	  build/fuzz/tests/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=build/fuzz/ \
	    build/fuzz/corpus/$$t tests/fuzz/corpus/$$t || exit 1; \
	done
