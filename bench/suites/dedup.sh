#!/usr/bin/env bash
# neardup dedup end to end, 2 threads, whole processes timed (wall clock, peak RSS by /usr/bin/time):
#   1. 10M synthetic English documents (real LibreOffice help paragraphs, two per document, a third of
#      them edited), SimHash of word 3-grams at k=3 (`--method simhash`): 3 runs, median;
#   2. 300k Chinese documents built the same way, the classic method (`--method simhash --mode
#      keywords`): 3 runs, median;
#   3. the default method (sketch-verified) against the same features without verification (SimHash
#      of character 5-grams at k=3) on 1M short English documents with heavy reuse: 3 alternating runs
#      each, the ratio of the medians.
# DEDUP_DOCS=N changes the size of 1 (and of 3 to N/10), DEDUP_ZH_DOCS the size of 2.
set -euo pipefail
build=$1
data=$2
here=$(cd "$(dirname "$0")/.." && pwd)
docs=${DEDUP_DOCS:-10000000}
zh_docs=${DEDUP_ZH_DOCS:-300000}
short_docs=$((docs / 10))
for lang in en-US zh-CN; do
  short=${lang%%-*}
  if [[ ! -s "$data/$short-paragraphs.txt" ]]; then
    /usr/bin/python3 "$here/corpus/help_text.py" "$lang" "$data/$short-paragraphs.txt" --per paragraph
  fi
done
corpus() {  # corpus LANG N -> path (generated once)
  local path="$data/dedup-$1-$2.txt"
  [[ -s "$path" ]] || "$build/bench/dedup_corpus" "$data/$1-paragraphs.txt" "$2" 1 >"$path"
  echo "$path"
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# run NAME INPUT ARGS...: one timed run; appends "NAME seconds kilobytes" to $out/runs and keeps the report.
run() {
  local name=$1 input=$2
  shift 2
  /usr/bin/time -f '%e %M' -o "$out/time" "$build/cli/neardup" dedup "$input" -o "$out/kept.txt" \
    --dups "$out/dups.tsv" --report "$out/$name.json" --quiet --threads 2 "$@"
  echo "$name $(cat "$out/time")" >>"$out/runs"
}

en=$(corpus en "$docs")
zh=$(corpus zh "$zh_docs")
short=$(corpus en "$short_docs")
for i in 1 2 3; do run simhash-en "$en" --method simhash; done
for i in 1 2 3; do run keywords-zh "$zh" --method simhash --mode keywords; done
for i in 1 2 3; do
  run default-short "$short"
  run unverified-short "$short" --method simhash -k 3 --shingle-unit char -n 5 --weighting distinct --fold t2s
done

/usr/bin/python3 - "$out" "$en" "$docs" "$zh" "$zh_docs" "$short" "$short_docs" <<'PY'
import json, os, statistics, sys
out, en, docs, zh, zh_docs, short, short_docs = sys.argv[1:]
runs = {}
for line in open(os.path.join(out, "runs")):
    name, seconds, kb = line.split()
    runs.setdefault(name, []).append((float(seconds), int(kb) * 1024))

def summary(name, path, n):
    size = os.path.getsize(path)
    secs = statistics.median(r[0] for r in runs[name])
    peak = max(r[1] for r in runs[name])
    return size, secs, peak, int(n)

def stages(name):
    report = json.load(open(os.path.join(out, name + ".json")))
    return ", ".join(f"{s['stage']} {s['seconds']:.2f} s" for s in report["stages"])

size, secs, peak, n = summary("simhash-en", en, docs)
print(f"English, {n} documents ({size / 1e9:.2f} GB), --method simhash (word 3-grams, k=3): median "
      f"{secs:.1f} s of {[r[0] for r in runs['simhash-en']]}, {size / 1e6 / secs:.1f} MB/s, peak "
      f"{peak / 1e9:.3f} GB ({peak / n:.1f} bytes/document, all included)")
print(f"  last run: {stages('simhash-en')}")
size, secs, peak, n = summary("keywords-zh", zh, zh_docs)
print(f"Chinese, {n} documents ({size / 1e6:.0f} MB), classic keywords: median {secs:.1f} s, "
      f"{size / 1e6 / secs:.1f} MB/s, peak {peak / 1e6:.0f} MB")
size, fast, _, n = summary("unverified-short", short, short_docs)
_, slow, peak, _ = summary("default-short", short, short_docs)
print(f"English, {n} short documents ({size / 1e6:.0f} MB): default {slow:.2f} s ({size / 1e6 / slow:.1f} MB/s, "
      f"peak {peak / 1e6:.0f} MB), without verification {fast:.2f} s ({size / 1e6 / fast:.1f} MB/s): "
      f"ratio {fast / slow:.2f}")
print(f"  default, last run: {stages('default-short')}")
PY
