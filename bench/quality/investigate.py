"""Sweeps configurations of sketch_prototype over the collections: SimHash candidates within k, kept
when the sketch estimates Jaccard >= t (t = none: no verification). Prints, per collection and
configuration, the prototype's speed, the best (k, t) by F1 and the scores of the fixed settings given
with --at, and writes every score to OUT/investigate.tsv.

Usage: investigate.py --data DIR --tools DIR --out DIR [--configs NAME=FLAGS;...] [--at k:t,...]
"""

import argparse
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collection  # noqa: E402
import evaluate  # noqa: E402

DEFAULT_CONFIGS = {
    "word3": "--features word -n 3 --bits 0",
    "char5": "--features char -n 5 --bits 0",
    "char5+sketch": "--features char -n 5",
    "char5+fold+mask+sketch": "--features char -n 5 --fold table --mask",
}
THRESHOLDS = [None, 0.6, 0.65, 0.7, 0.72, 0.74, 0.76, 0.78, 0.8, 0.82, 0.85]


def run_prototype(tools, flags, input_path, k_max, env):
    command = [os.path.join(tools, "sketch_prototype"), "-k", str(k_max)] + flags.split() + [input_path]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True, env=env)
    speed = re.search(r"\(([\d.]+) MB/s\)", result.stderr.decode())
    rows = np.array([line.split("\t") for line in result.stdout.decode().splitlines()], dtype=float)
    rows = rows.reshape(-1, 4)
    return rows, float(speed.group(1)) if speed else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--tools", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--collections", default="docs,emails,poems")
    parser.add_argument("--configs", default="")
    parser.add_argument("--ks", default="3,4,6,8,10,12,14,16,18,20")
    parser.add_argument("--at", default="", help="fixed settings to report, e.g. 3:none,12:0.7")
    args = parser.parse_args()
    configs = dict(item.split("=", 1) for item in args.configs.split(";") if item) or DEFAULT_CONFIGS
    ks = [int(k) for k in args.ks.split(",")]
    fixed = [(int(k), None if t == "none" else float(t))
             for k, t in (item.split(":") for item in args.at.split(",") if item)]
    env = dict(os.environ, TS_TABLE=os.path.join(args.out, "ts_characters.txt"))
    with open(os.path.join(args.out, "investigate.tsv"), "a") as table:
        for name in args.collections.split(","):
            input_path = os.path.join(args.data, name + ".jsonl")
            evaluator = evaluate.Evaluator(collection.read_collection(input_path),
                                           os.path.join(args.data, name + ".truth.tsv"))
            print("\n== %s (%d true pairs)" % (name, evaluator.truth_keys.size))
            for config, flags in configs.items():
                rows, speed = run_prototype(args.tools, flags, input_path, max(ks), env)
                scores = {}
                for k in ks:
                    for t in THRESHOLDS:
                        keep = rows[:, 2] <= k
                        if t is not None:
                            keep &= rows[:, 3] >= t
                        r = evaluator.score(rows[keep, 0].astype(np.int64), rows[keep, 1].astype(np.int64))
                        scores[(k, t)] = r
                        table.write("%s\t%s\t%d\t%s\t%.4f\t%.4f\t%.4f\t%.1f\n" % (
                            name, config, k, t, r["precision"], r["recall"], r["f1"], speed))
                (bk, bt), best = max(scores.items(), key=lambda item: item[1]["f1"])
                line = "%-26s %6.1f MB/s  best k=%-2d t=%-4s P %.3f R %.3f F1 %.3f" % (
                    config, speed, bk, bt, best["precision"], best["recall"], best["f1"])
                for k, t in fixed:
                    r = scores.get((k, t))
                    if r:
                        line += " | k=%d t=%s: %.3f/%.3f/%.3f" % (k, t, r["precision"], r["recall"], r["f1"])
                print(line)
                sys.stdout.flush()


if __name__ == "__main__":
    main()
