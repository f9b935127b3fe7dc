#!/usr/bin/env bash
# neardup's jieba-compatible segmenter, keyword extractor and keywords fingerprint against Python's
# jieba, side by side on the same text (LibreOffice's Chinese help pages), one core each.
# Usage: bench/jieba_bench.sh [BUILD_DIR]   (default build/release; needs libreoffice-help-zh-cn)
# Prints, per case, the median throughput of each (CPU time, MB/s) and their ratio.
set -euo pipefail
build=${1:-build/release}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$here/../tests/jieba" "$work" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
import oracle
lines = oracle.corpus_lines(40000)
open(sys.argv[2] + "/lines.txt", "w").write("\n".join(lines) + "\n")
docs = [text for _, text in oracle.corpus_docs(3000)]
open(sys.argv[2] + "/docs.bin", "w").write("\0".join(docs))
PY

# Load benchmarks: cold parses jieba's files, warm reads the cache files written in $work/cache.
export NEARDUP_CACHE_DIR=$work/cache
NEARDUP_ZH_LINES=$work/lines.txt NEARDUP_ZH_DOCS=$work/docs.bin "$build/bench/jieba_bench" \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_min_time=1 \
  --benchmark_format=json >"$work/neardup.json"

# Peak resident memory of a whole `neardup keywords` process, without and with the cache.
peak_rss() {
  /usr/bin/python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], input="我来到北京清华大学".encode(), stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' "$@"
}
echo "$(peak_rss "$build/cli/neardup" keywords --no-cache) $(peak_rss "$build/cli/neardup" keywords)" >"$work/rss.txt"

/usr/bin/python3 - "$work" <<'PY'
import json, logging, statistics, struct, sys, time, hashlib
work = sys.argv[1]
import jieba, jieba.analyse
jieba.setLogLevel(logging.ERROR)
t = time.process_time(); jieba.dt.initialize(); jieba.analyse.extract_tags("初始化"); load = time.process_time() - t
lines = open(work + "/lines.txt").read().split("\n")
docs = open(work + "/docs.bin").read().split("\0")
line_mb = sum(len(l.encode()) for l in lines) / 1e6
doc_mb = sum(len(d.encode()) for d in docs) / 1e6

def median_rate(fn, mb, runs):
    rates = []
    for _ in range(runs):
        t = time.process_time(); fn(); rates.append(mb / (time.process_time() - t))
    return statistics.median(rates)

def fingerprint(doc):
    # The classic pipeline: extract_tags with weights, then the SimHash fold of 64-bit hashes.
    n = max(5, min(200, len(doc.encode()) // 120))
    sums = [0.0] * 64
    for word, weight in jieba.analyse.extract_tags(doc, topK=n, withWeight=True):
        h = struct.unpack("<Q", hashlib.blake2b(word.encode(), digest_size=8).digest())[0]
        for j in range(64):
            sums[j] += weight if (h >> j) & 1 else -weight
    return sum(1 << j for j in range(64) if sums[j] > 0)

python = {
    "BM_Segment": median_rate(lambda: [jieba.lcut(l) for l in lines], line_mb, 5),
    "BM_Keywords": median_rate(lambda: [jieba.analyse.extract_tags(d, topK=20, withWeight=True) for d in docs], doc_mb, 3),
    "BM_KeywordsFingerprint": median_rate(lambda: [fingerprint(d) for d in docs], doc_mb, 3),
}
ours = {}
for b in json.load(open(work + "/neardup.json"))["benchmarks"]:
    if b.get("aggregate_name") == "median":
        ours[b["run_name"]] = b
targets = {"BM_Segment": 55, "BM_Keywords": 40, "BM_KeywordsFingerprint": 30}
print("%-24s %14s %14s %8s %8s" % ("case", "neardup MB/s", "jieba MB/s", "ratio", "target"))
for name, target in targets.items():
    mine = ours[name]["bytes_per_second"] / 1e6
    print("%-24s %14.1f %14.2f %7.1fx %8s" % (name, mine, python[name], mine / python[name], ">= %d" % target))
for name, label in (("BM_LoadDictionary", "load dict+hmm"), ("BM_LoadKeywordModel", "load dict+hmm+idf")):
    for warm in (0, 1):
        run = ours["%s/warm:%d" % (name, warm)]
        ms = run["cpu_time"]
        print("%-24s %11.0f ms %11.0f ms %7.1fx %8s   (wall %.0f ms)" %
              (label + (" warm" if warm else " cold"), ms, load * 1000, load * 1000 / ms, "<= 300 ms",
               run["real_time"]))
cold_rss, warm_rss = open(work + "/rss.txt").read().split()
print("peak RSS of `neardup keywords`: %s MB without the cache, %s MB with it (<= 100 MB)" % (cold_rss, warm_rss))
print("(medians of CPU time; jieba: python3-jieba %s, load time with its cache file)" % jieba.__version__)
PY
