#!/usr/bin/env bash
# The WebAssembly build (doc/wasm.md) against the native build on the same machine, in one run:
#   1. signing throughput of one thread, WebAssembly in Node vs native, on real text (LibreOffice
#      help pages in English and Chinese, English paragraphs), for the default method and SimHash
#      (character 5-grams, and word 3-grams with lang en: no Chinese dictionary in the module);
#      ROUNDS alternating rounds each (default 5), medians and their ratio;
#   2. the size of the .wasm file (and gzip'ed, as a server would send it).
set -euo pipefail
build=$1
data=$2
here=$(cd "$(dirname "$0")/.." && pwd)
package="$build/wasm/js"
if [[ ! -s "$package/neardup_wasm.wasm" ]]; then
  echo "wasm: $build has no WebAssembly build (make wasm)" >&2
  exit 1
fi
# Pages (bench/run.sh extracts en.txt and zh.txt: one LibreOffice help page a document, 1.7 KB on
# average) and English paragraphs (60 bytes on average: the cost of a call counts most there).
if [[ ! -s "$data/en-paragraphs.txt" ]]; then
  /usr/bin/python3 "$here/corpus/help_text.py" en-US "$data/en-paragraphs.txt" --per paragraph
fi
for corpus in en.txt zh.txt en-paragraphs.txt; do
  echo "-- signing, one thread: $corpus"
  node "$here/wasm/sign_bench.mjs" "$package" "$build/bench/sign_throughput" "$data/$corpus" \
    "${ROUNDS:-5}" "method=accurate" "method=simhash mode=shingles:char:5 lang=en" "method=simhash lang=en"
done
echo "-- module size"
wasm_bytes=$(stat -c %s "$package/neardup_wasm.wasm")
gzip_bytes=$(gzip -9 -c "$package/neardup_wasm.wasm" | wc -c)
loader_bytes=$(stat -c %s "$package/neardup_wasm.mjs")
echo "neardup_wasm.wasm: $wasm_bytes bytes ($gzip_bytes gzip'ed); loader neardup_wasm.mjs: $loader_bytes bytes"
