"""Precision, recall and F1 of neardup's default design against its Jaccard threshold, and the
estimated Jaccard of true and other pairs (bench/quality/README.md, "The default design, measured").

For each collection it runs `neardup dedup --threshold T` for T = 0.60, 0.65, ..., 0.95 and once at
0.5 with every pair's estimate, scores them against the truth and draws with gnuplot:
  threshold_NAME.png   precision, recall and F1 against the threshold
  estimate_NAME.png    pairs by estimated Jaccard (true pairs and others, log scale)
Writes OUT/threshold.tsv with every number.

Usage: threshold_sweep.py --data DIR --out DIR --neardup PROGRAM [--collections docs,emails,poems]
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collection  # noqa: E402
import evaluate  # noqa: E402
import plot  # noqa: E402

THRESHOLDS = [round(0.6 + 0.05 * i, 2) for i in range(8)]


def run_dedup(neardup, input_path, threshold):
    with tempfile.TemporaryDirectory() as work:
        pairs = os.path.join(work, "pairs.tsv")
        subprocess.run([neardup, "dedup", "-q", "--threshold", str(threshold), "--pairs", pairs,
                        input_path], check=True)
        return evaluate.read_pairs(pairs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--neardup", required=True)
    parser.add_argument("--collections", default="docs,emails,poems")
    args = parser.parse_args()
    data_dir = os.path.join(args.out, "plotdata")
    os.makedirs(data_dir, exist_ok=True)
    with open(os.path.join(args.out, "threshold.tsv"), "w") as table:
        table.write("collection\tthreshold\tfound\tprecision\trecall\tf1\n")
        for name in args.collections.split(","):
            input_path = os.path.join(args.data, name + ".jsonl")
            evaluator = evaluate.Evaluator(collection.read_collection(input_path),
                                           os.path.join(args.data, name + ".truth.tsv"))
            curve = os.path.join(data_dir, "%s.threshold.tsv" % name)
            with open(curve, "w") as f:
                for t in THRESHOLDS:
                    a, b, _ = run_dedup(args.neardup, input_path, t)
                    r = evaluator.score(a, b)
                    f.write("%.2f\t%.4f\t%.4f\t%.4f\n" % (t, r["precision"], r["recall"], r["f1"]))
                    table.write("%s\t%.2f\t%d\t%.4f\t%.4f\t%.4f\n" % (
                        name, t, r["found"], r["precision"], r["recall"], r["f1"]))
                    print("%-7s t=%.2f  P %.3f  R %.3f  F1 %.3f" % (
                        name, t, r["precision"], r["recall"], r["f1"]))
            plot.gnuplot(plot._STYLE + "set output '%s'\nset title '%s: default design against "
                         "the Jaccard threshold'\nset xlabel 'threshold (estimated Jaccard)'\n"
                         "set yrange [0.5:1.02]\nplot '%s' using 1:2 with linespoints title "
                         "'precision', '' using 1:3 with linespoints title 'recall', '' using 1:4 "
                         "with linespoints title 'F1'\n"
                         % (os.path.join(args.out, "threshold_%s.png" % name), name, curve))
            a, b, estimate = run_dedup(args.neardup, input_path, 0.5)
            is_true = np.isin(a * evaluator.size + b, evaluator.truth_keys)
            edges = np.linspace(0.5, 1.0, 51)
            true_counts, _ = np.histogram(estimate[is_true], bins=edges)
            other_counts, _ = np.histogram(estimate[~is_true], bins=edges)
            hist = os.path.join(data_dir, "%s.estimate.tsv" % name)
            with open(hist, "w") as f:
                for low, t, o in zip(edges[:-1], true_counts, other_counts):
                    f.write("%.3f\t%d\t%d\n" % (low + 0.005, t, o))
            plot.gnuplot(plot._STYLE + "set output '%s'\nset title '%s: pairs by estimated Jaccard "
                         "(candidates verified at 0.5)'\nset key inside top left\nset xlabel "
                         "'estimated Jaccard'\nset ylabel 'pairs'\nset logscale y\n"
                         "set style fill transparent solid 0.5\nset boxwidth 0.009\n"
                         "plot '%s' using 1:($3>0?$3:1/0) with boxes lc rgb '#d62728' title "
                         "'other pairs', '' using 1:($2>0?$2:1/0) with boxes lc rgb '#1f77b4' "
                         "title 'true pairs (Jaccard >= 0.8)'\n"
                         % (os.path.join(args.out, "estimate_%s.png" % name), name, hist))


if __name__ == "__main__":
    main()
