#!/usr/bin/env bash
# neardup dedup at scale: the default method against `--method simhash`, 2 threads, whole processes
# timed (wall clock, peak RSS by /usr/bin/time), on the synthetic English corpus of the dedup suite
# (bench/dedup_corpus: real LibreOffice help paragraphs, two per document, a third of them edited):
#   1. 10M documents (2.5 GB): SCALE_RUNS (3) runs of each method, alternating, with -o, --dups and
#      --report; medians;
#   2. 100M documents (25 GB): one run of each method, --dups and --report only (no -o: the kept
#      lines would be 22 GB more of disk); skipped, with a message, when the disk is too small;
#   3. the growth from 1 to 2 of the default method's wall against n log n, and of its peak memory.
# Each run: `neardup dedup INPUT [-o KEPT] --dups DUPS --report REPORT --quiet --threads 2
# [--method simhash] --tmp-dir TMP`, outputs and temporary files in a folder under DATA removed at exit.
# Corpora are generated once into DATA (dedup-en-N.txt, written to a .tmp name and renamed when done).
# SCALE_DOCS=N changes the size of 1, SCALE_DOCS_LARGE=N the size of 2 (0: left out), SCALE_RUNS
# the runs of 1.
set -euo pipefail
build=$1
data=$2
here=$(cd "$(dirname "$0")/.." && pwd)
docs=${SCALE_DOCS:-10000000}
large=${SCALE_DOCS_LARGE:-100000000}
runs=${SCALE_RUNS:-3}
neardup=$build/cli/neardup

# Disk use per document, measured on this corpus (for the free-space check before the large part):
corpus_per_doc=252  # the corpus file (251.2 bytes/document at 1M and 10M)
tmp_per_doc=212     # the default method's temporary files (spill_bytes; --method simhash: none)
kept_per_doc=252    # the kept lines (-o; 10M only): at most the corpus (about 220 at 100M)
dups_per_doc=40     # --dups: at most one line of about 26 bytes per document
margin=$((2 * 1000 * 1000 * 1000))  # left free for the other users of the disk

paragraphs=$data/en-paragraphs.txt
if [[ ! -s "$paragraphs" ]]; then
  /usr/bin/python3 "$here/corpus/help_text.py" en-US "$paragraphs.tmp" --per paragraph
  mv "$paragraphs.tmp" "$paragraphs"
fi

available() { df -P -B1 "$data" | awk 'NR == 2 { print $4 }'; }
gb() { awk -v b="$1" 'BEGIN { printf "%.1f GB", b / 1e9 }'; }
corpus_path() { echo "$data/dedup-en-$1.txt"; }
# corpus N: generates the corpus of N documents once. A file is complete once it has its final name;
# generation holds a lock on DATA so that two suites (or a background job) never write it together.
corpus() {
  local path
  path=$(corpus_path "$1")
  [[ -s "$path" ]] && return
  echo "generating $path ($1 documents, about $(gb $(($1 * corpus_per_doc))))"
  (
    flock 9
    if [[ ! -s "$path" ]]; then
      rm -f "$path.tmp"
      if ! "$build/bench/dedup_corpus" "$paragraphs" "$1" 1 >"$path.tmp"; then
        rm -f "$path.tmp"
        exit 1
      fi
      mv "$path.tmp" "$path"
    fi
  ) 9<"$data"
}
# missing N: the bytes the corpus of N still needs on disk (0 when generated; a stale .tmp is reused).
missing() {
  local path
  path=$(corpus_path "$1")
  if [[ -s "$path" ]]; then echo 0; return; fi
  local stale=0
  [[ -f "$path.tmp" ]] && stale=$(stat -c %s "$path.tmp")
  echo $(($1 * corpus_per_doc - stale))
}

# Step 1: the corpora, the large one only when the disk holds it and what its runs write.
need_small=$(($(missing "$docs") + docs * (tmp_per_doc + kept_per_doc + dups_per_doc)))
avail=$(available)
if ((need_small + margin > avail)); then
  echo "scale: SKIPPED entirely: $docs documents need $(gb "$need_small") in $data" \
    "(corpus to generate, temporary files, outputs) + $(gb "$margin") margin, $(gb "$avail") available"
  exit 0
fi
corpus "$docs"
run_large=1
need_large=$(($(missing "$large") + large * (tmp_per_doc + dups_per_doc)))
avail=$(available)
if ((large == 0)); then
  run_large=0
  echo "scale: SCALE_DOCS_LARGE=0: the large part is left out"
elif ((need_large + margin > avail)); then
  run_large=0
  echo "scale: the $large-document part is SKIPPED: not enough disk in $data: it needs" \
    "$(gb "$need_large") (corpus to generate $(gb "$(missing "$large")"), temporary files" \
    "$(gb $((large * tmp_per_doc))), --dups $(gb $((large * dups_per_doc)))) + $(gb "$margin") margin," \
    "$(gb "$avail") available"
else
  corpus "$large"
fi

out=$(mktemp -d "$data/scale.XXXXXX")
trap 'rm -rf "$out"' EXIT
mkdir "$out/tmp"
export TMPDIR=$out/tmp  # for builds without --tmp-dir
tmp_option=()
if "$neardup" dedup --help 2>&1 | grep -q -- '--tmp-dir'; then tmp_option=(--tmp-dir "$out/tmp"); fi

# run N METHOD I KEPT: one timed run; appends "N METHOD I seconds kilobytes REPORT" to $out/runs.
run() {
  local n=$1 method=$2 i=$3 kept=$4 report="$out/$1-$2-$3.json"
  local args=("$(corpus_path "$n")" --dups "$out/dups.tsv" --report "$report" --quiet --threads 2)
  [[ $kept == yes ]] && args+=(-o "$out/kept.txt")
  [[ $method == simhash ]] && args+=(--method simhash)
  /usr/bin/time -f '%e %M' -o "$out/time" "$neardup" dedup "${args[@]}" "${tmp_option[@]}"
  echo "$n $method $i $(cat "$out/time") $report" >>"$out/runs"
  rm -f "$out/kept.txt" "$out/dups.tsv"
}

# Steps 2 and 3.
for ((i = 1; i <= runs; ++i)); do
  run "$docs" default "$i" yes
  run "$docs" simhash "$i" yes
done
if ((run_large)) && (($(available) < large * (tmp_per_doc + dups_per_doc) + margin)); then
  run_large=0  # the disk filled up meanwhile (it is shared)
  echo "scale: the $large-document part is SKIPPED: its runs need $(gb $((large * (tmp_per_doc + dups_per_doc))))" \
    "(temporary files, --dups) + $(gb "$margin") margin in $data, $(gb "$(available)") available now"
fi
if ((run_large)); then
  echo "scale: $large documents without -o (no kept lines: saves up to $(gb $((large * kept_per_doc))) of disk;" \
    "the wall has no write-kept stage)"
  run "$large" default 1 no
  run "$large" simhash 1 no
fi

# Step 4.
/usr/bin/python3 - "$out/runs" "$docs" "$(corpus_path "$docs")" "$large" "$(corpus_path "$large")" \
  "$run_large" <<'PY'
import json, math, os, statistics, sys
runs_path, n1, path1, n2, path2, run_large = sys.argv[1:]
n1, n2 = int(n1), int(n2)
runs = {}  # (n, method) -> [(seconds, bytes, report)]
for line in open(runs_path):
    n, method, _, seconds, kb, report = line.split()
    runs.setdefault((int(n), method), []).append(
        (float(seconds), int(kb) * 1024, json.load(open(report))))

def stage(report, name):
    return sum(s["seconds"] for s in report.get("stages", []) if s["stage"] == name)

def median_stages(reports):
    names = []
    for r in reports:
        names += [s["stage"] for s in r.get("stages", []) if s["stage"] not in names]
    return ", ".join(f"{name} {statistics.median(stage(r, name) for r in reports):.2f} s"
                     for name in names)

def size(n, method, path):
    rs = runs[(n, method)]
    reports = [r[2] for r in rs]
    wall = statistics.median(r[0] for r in rs)
    # The wall without the copy of the kept lines, to compare runs with and without -o.
    core = statistics.median(r[0] - stage(r[2], "write-kept") for r in rs)
    peak = max(r[1] for r in rs)
    last = reports[-1]
    nbytes = os.path.getsize(path)
    if last.get("documents", n) != n:
        print(f"  WARNING: the report counts {last.get('documents')} documents in {path}, not {n}")
    walls = ", ".join(f"{r[0]:.1f}" for r in rs)
    print(f"  {method:8} median {wall:.1f} s (runs {walls}): {nbytes / 1e6 / wall:.1f} MB/s end to end, "
          f"peak {peak / 1e9:.3f} GB ({peak / n:.1f} bytes/document), "
          f"spill {last.get('spill_bytes', 0) / 1e9:.2f} GB ({last.get('spill_bytes', 0) / n:.0f} bytes/document)")
    print(f"           stages (median): {median_stages(reports)}")
    print(f"           candidates {last.get('candidates', 0)}, pairs {last.get('pairs', 0)}, "
          f"boundary_pairs {last.get('boundary_pairs', 0)}, boundary_accepted "
          f"{last.get('boundary_accepted', 0)}, boundary_left {last.get('boundary_left', 0)}, "
          f"duplicates {last.get('duplicates', 0)}")
    return wall, core, peak

print("scale: neardup dedup, 2 threads, synthetic English documents (bench/dedup_corpus), "
      "whole processes (wall, peak RSS by /usr/bin/time)")
results = {}
sizes = [(n1, path1, "with -o")] + ([(n2, path2, "no -o")] if run_large == "1" else [])
for n, path, how in sizes:
    count = len(runs[(n, "default")])
    print(f"{n} documents ({os.path.getsize(path) / 1e9:.2f} GB), {count} run(s) of each method"
          f"{', alternating' if count > 1 else ''}, {how}:")
    for method in ("default", "simhash"):
        results[(n, method)] = size(n, method, path)
    ratio = results[(n, "default")][0] / results[(n, "simhash")][0]
    print(f"  default / simhash wall: {ratio:.2f}")
if run_large == "1":
    _, core1, peak1 = results[(n1, "default")]
    _, core2, peak2 = results[(n2, "default")]
    nlogn = (n2 * math.log(n2)) / (n1 * math.log(n1))
    growth = (core2 / core1) / nlogn
    verdict = "cost grows no faster than n log n" if growth <= 1 else "cost grows faster than n log n"
    print(f"growth {n1} -> {n2} documents, default method (walls without write-kept: {core1:.1f} s -> "
          f"{core2:.1f} s, x{core2 / core1:.2f}; (n2 log n2)/(n1 log n1) = {nlogn:.2f}): "
          f"ratio {growth:.2f}: {verdict}")
    print(f"  peak memory {peak1 / 1e9:.3f} GB -> {peak2 / 1e9:.3f} GB: x{peak2 / peak1:.2f} "
          f"for x{n2 / n1:.2f} documents ({peak1 / n1:.1f} -> {peak2 / n2:.1f} bytes/document)")
PY
