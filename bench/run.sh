#!/usr/bin/env bash
# Runs the benchmark suites: bench/run.sh BUILD_DIR [SUITE...]
# Each suite is bench/suites/NAME.sh, called with BUILD_DIR and the data folder; with no SUITE given,
# all of them run. Real text is extracted once from Debian's LibreOffice help pages into build/bench-data.
# Suites: dedup, fingerprint, index, jieba, online, python, redis, wasm, and scale (dedup at 10M and
# 100M documents: a 25 GB corpus kept in the data folder, about 21 GB more while it runs, the 100M part
# skipped when the disk is smaller; e.g. bench/run.sh build/bench scale).
set -euo pipefail
build=$(cd "${1:?usage: bench/run.sh BUILD_DIR [SUITE...]}" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
data="$(dirname "$build")/bench-data"
mkdir -p "$data"
for lang in en-US zh-CN; do
  short=${lang%%-*}
  if [[ ! -s "$data/$short.txt" ]]; then
    /usr/bin/python3 "$here/corpus/help_text.py" "$lang" "$data/$short.txt"
  fi
done
suites=("$@")
if [[ ${#suites[@]} -eq 0 ]]; then
  for f in "$here"/suites/*.sh; do suites+=("$(basename "$f" .sh)"); done
fi
for suite in "${suites[@]}"; do
  echo "== $suite"
  bash "$here/suites/$suite.sh" "$build" "$data"
done
