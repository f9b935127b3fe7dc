"""Draws the quality pictures with gnuplot (Debian gnuplot-nox) as PNG files in OUT:
  hist_NAME_METHOD.png  how many true and other pairs lie at each Hamming distance (log scale)
  pr_NAME.png           precision and recall against k for every method
  fk_NAME.png           F1 against k for every method

Usage: plot.py --results OUT/results.tsv --hist OUT/hist --out OUT
"""

import argparse
import collections
import csv
import os
import subprocess

_STYLE = 'set terminal pngcairo size 900,540 font "DejaVu Sans,11"\nset grid\nset key outside right\n'


def gnuplot(script):
    subprocess.run(["gnuplot"], input=script.encode(), check=True)


def read_results(path):
    by_collection = collections.defaultdict(lambda: collections.defaultdict(list))
    with open(path) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            by_collection[row["collection"]][row["method"]].append(row)
    return by_collection


def plot_k_curves(name, methods, data_dir, out):
    files = {}
    for method, rows in methods.items():
        path = os.path.join(data_dir, "%s.%s.k.tsv" % (name, method))
        with open(path, "w") as f:
            for row in rows:
                f.write("%s\t%s\t%s\t%s\n" % (row["k"], row["precision"], row["recall"], row["f1"]))
        files[method] = path
    pr = ", ".join(
        "'%s' using 1:2 with linespoints lt %d dt 1 title '%s precision', "
        "'%s' using 1:3 with linespoints lt %d dt 2 title '%s recall'"
        % (path, i + 1, method, path, i + 1, method) for i, (method, path) in enumerate(files.items()))
    gnuplot(_STYLE + "set output '%s'\nset title '%s: precision (solid) and recall (dashed) against k'\n"
            "set xlabel 'k (Hamming distance threshold)'\nset yrange [0:1.02]\nplot %s\n"
            % (os.path.join(out, "pr_%s.png" % name), name, pr))
    f1 = ", ".join("'%s' using 1:4 with linespoints lt %d title '%s'" % (path, i + 1, method)
                   for i, (method, path) in enumerate(files.items()))
    gnuplot(_STYLE + "set output '%s'\nset title '%s: F1 against k'\nset xlabel 'k'\n"
            "set yrange [0:1.02]\nplot %s\n" % (os.path.join(out, "f1_%s.png" % name), name, f1))


def plot_histogram(name, method, path, out):
    gnuplot(_STYLE + "set output '%s'\nset title '%s, %s: pairs by Hamming distance'\n"
            "set key inside top left\nset xlabel 'Hamming distance'\nset ylabel 'pairs'\nset logscale y\nset xrange [-0.5:40.5]\n"
            "set style fill transparent solid 0.5\nset boxwidth 0.9\n"
            "plot '%s' using 1:($3>0?$3:1/0) with boxes lc rgb '#d62728' title 'other pairs', "
            "'%s' using 1:($2>0?$2:1/0) with boxes lc rgb '#1f77b4' title 'true pairs (Jaccard >= 0.8)'\n"
            % (os.path.join(out, "hist_%s_%s.png" % (name, method)), name, method, path, path))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", required=True)
    parser.add_argument("--hist", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    data_dir = os.path.join(args.out, "plotdata")
    os.makedirs(data_dir, exist_ok=True)
    pictures = 0
    for name, methods in read_results(args.results).items():
        plot_k_curves(name, methods, data_dir, args.out)
        pictures += 2
        for method in methods:
            path = os.path.join(args.hist, "%s.%s.tsv" % (name, method))
            if os.path.exists(path):
                plot_histogram(name, method, path, args.out)
                pictures += 1
    print("plot: %d pictures in %s" % (pictures, args.out))


if __name__ == "__main__":
    main()
