"""The quality harness: ground truth, methods, scores, table (bench/quality/README.md).

For every collection DATA/NAME.jsonl it makes the ground truth (DATA/NAME.norm.txt, the normalised
texts, and DATA/NAME.truth.tsv, the pairs with Jaccard >= 0.8; remade when the collection is newer),
runs every method of the methods file, scores its pairs at every k, and writes
  OUT/results.tsv                   one row per collection, method and k
  OUT/runs/NAME.METHOD.pairs.tsv    the method's pairs (with the distance for fingerprint methods)
  OUT/hist/NAME.METHOD.tsv          distance, true pairs, other pairs (fingerprint methods)
then prints the table.

Usage: harness.py --data DIR --out DIR --neardup PROGRAM --tools DIR [--methods FILE] [--ks 3-12]
                  [--collections docs,emails,poems] [--only METHOD,...]
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collection  # noqa: E402
import evaluate  # noqa: E402

SOURCE_DIR = os.path.dirname(os.path.abspath(__file__))


def parse_ks(text):
    if "-" in text:
        low, high = text.split("-")
        return list(range(int(low), int(high) + 1))
    return [int(k) for k in text.split(",")]


def read_methods(path, only):
    methods = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, kind, command = line.split(None, 2)
            if kind not in ("fingerprint", "pairs"):
                sys.exit("harness: %s: method %s has unknown kind %s" % (path, name, kind))
            if not only or name in only:
                methods.append({"name": name, "kind": kind, "command": command})
    return methods


def make_truth(data, name, tools):
    """Writes NAME.norm.txt and NAME.truth.tsv unless they are newer than the collection."""
    source = os.path.join(data, name + ".jsonl")
    norm, truth = (os.path.join(data, name + suffix) for suffix in (".norm.txt", ".truth.tsv"))
    if os.path.exists(truth) and os.path.getmtime(truth) >= os.path.getmtime(source):
        return 0.0
    start = time.monotonic()
    texts = [d["text"] for d in collection.read_collection(source)]
    with open(norm, "w", encoding="utf-8") as f:
        f.write("\n".join(collection.truth_normalise(texts)) + "\n")
    with open(norm, "rb") as inp, open(truth + ".tmp", "wb") as out:
        subprocess.run([os.path.join(tools, "jaccard_join"), "--shingle", "5", "--threshold", "0.8"],
                       stdin=inp, stdout=out, check=True)
    os.replace(truth + ".tmp", truth)
    return time.monotonic() - start


def expand(command, values):
    for key, value in values.items():
        command = command.replace("{%s}" % key, value)
    return command


def run_timed(command, out_path, quiet=False):
    """Runs command with stdout to out_path; quiet keeps its stderr for the exception."""
    start = time.monotonic()
    with open(out_path, "wb") as out:
        subprocess.run(command, shell=True, stdout=out, check=True,
                       stderr=subprocess.PIPE if quiet else None)
    return time.monotonic() - start


def fingerprint_distances(fingerprint_path, a, b):
    ids, codes = [], []
    with open(fingerprint_path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            ids.append(int(fields[0]))
            codes.append(int(fields[1], 16))
    table = np.zeros(max(ids) + 1, dtype=np.uint64)
    table[np.array(ids)] = np.array(codes, dtype=np.uint64)
    xor = (table[a] ^ table[b]).view(np.uint8).reshape(-1, 8)
    return np.unpackbits(xor, axis=1).sum(axis=1).astype(np.int64)


def run_fingerprint_method(method, values, ks, run_dir, hist_dir, evaluator, name, tools):
    fingerprints = os.path.join(run_dir, "%s.%s.fingerprints.tsv" % (name, method["name"]))
    pairs_path = os.path.join(run_dir, "%s.%s.pairs.tsv" % (name, method["name"]))
    hash_seconds = run_timed(expand(method["command"], values), fingerprints)
    all_pairs_histogram = os.path.join(hist_dir, "%s.%s.all.tsv" % (name, method["name"]))
    with open(fingerprints, "rb") as inp, open(pairs_path, "wb") as out:
        subprocess.run([os.path.join(tools, "hamming_pairs"), "-k", str(max(ks)),
                        "--histogram", all_pairs_histogram], stdin=inp, stdout=out, check=True)
    a, b, distance = evaluate.read_pairs(pairs_path)
    rows = []
    for k in ks:
        keep = distance <= k
        rows.append((k, hash_seconds, evaluator.score(a[keep], b[keep])))
    truth_a, truth_b = np.divmod(evaluator.truth_keys, evaluator.size)
    true_histogram = np.bincount(fingerprint_distances(fingerprints, truth_a, truth_b), minlength=65)
    all_histogram = np.loadtxt(all_pairs_histogram, dtype=np.int64)[:, 1]
    with open(os.path.join(hist_dir, "%s.%s.tsv" % (name, method["name"])), "w") as f:
        f.write("# distance\ttrue_pairs\tother_pairs\n")
        for d in range(65):
            f.write("%d\t%d\t%d\n" % (d, true_histogram[d], all_histogram[d] - true_histogram[d]))
    return rows


def run_pairs_method(method, values, ks, run_dir, evaluator, name):
    rows = []
    per_k = "{k}" in method["command"]
    for k in ks if per_k else [None]:
        values = dict(values, k=str(k))
        pairs_path = os.path.join(run_dir, "%s.%s%s.pairs.tsv" % (name, method["name"],
                                                                 ".k%d" % k if per_k else ""))
        try:
            seconds = run_timed(expand(method["command"], values), pairs_path, quiet=True)
        except subprocess.CalledProcessError as error:
            first_line = (error.stderr or b"").decode(errors="replace").strip().split("\n")[0]
            print("harness: %s on %s%s left out: %s" % (
                method["name"], name, " at k=%d" % k if per_k else "", first_line), file=sys.stderr)
            continue
        a, b, _ = evaluate.read_pairs(pairs_path, with_score=False)
        result = evaluator.score(a, b)
        for row_k in [k] if per_k else ks:
            rows.append((row_k, seconds, result))
    return rows


def print_collection_table(name, docs, evaluator, truth_seconds, results, ks):
    sizes = evaluator.category_sizes()
    print("\n== %s: %d documents, %d true pairs (%s)%s" % (
        name, len(docs), evaluator.truth_keys.size,
        ", ".join("%s %d" % item for item in sorted(sizes.items())),
        ", truth made in %.1f s" % truth_seconds if truth_seconds else ""))
    print("F1 by k:")
    print("%-14s %7s " % ("method", "time s") + " ".join("%5s" % ("k=%d" % k) for k in ks))
    for method, rows in results:
        f1 = {k: r["f1"] for k, _, r in rows}
        print("%-14s %7.2f " % (method, rows[0][1]) +
              " ".join("%5.3f" % f1[k] if k in f1 else "%5s" % "-" for k in ks))
    categories = sorted(sizes)
    print("best k per method: precision, recall, F1, recall per category:")
    widths = [max(6, len(c)) for c in categories]
    print("%-14s %3s %6s %6s %6s  " % ("method", "k", "P", "R", "F1") +
          " ".join("%*s" % (w, c) for w, c in zip(widths, categories)))
    for method, rows in results:
        k, _, best = max(rows, key=lambda row: (row[2]["f1"], -row[0]))
        print("%-14s %3d %6.3f %6.3f %6.3f  " % (method, k, best["precision"], best["recall"],
                                                  best["f1"]) +
              " ".join("%*.3f" % (w, best["recall_by_category"].get(c, float("nan")))
                       for w, c in zip(widths, categories)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--neardup", required=True)
    parser.add_argument("--tools", required=True)
    parser.add_argument("--methods", default=os.path.join(SOURCE_DIR, "methods.conf"))
    parser.add_argument("--ks", default="3-12")
    parser.add_argument("--collections", default="docs,emails,poems")
    parser.add_argument("--only", default="", help="comma-separated method names")
    args = parser.parse_args()

    ks = parse_ks(args.ks)
    methods = read_methods(args.methods, set(filter(None, args.only.split(","))))
    run_dir, hist_dir = os.path.join(args.out, "runs"), os.path.join(args.out, "hist")
    os.makedirs(run_dir, exist_ok=True)
    os.makedirs(hist_dir, exist_ok=True)
    results_path = os.path.join(args.out, "results.tsv")
    with open(results_path, "w") as results_file:
        results_file.write("collection\tmethod\tk\tfound\ttrue\tcorrect\tprecision\trecall\tf1\t"
                           "seconds\trecall_by_category\n")
        for name in args.collections.split(","):
            truth_seconds = make_truth(args.data, name, args.tools)
            input_path = os.path.join(args.data, name + ".jsonl")
            docs = collection.read_collection(input_path)
            evaluator = evaluate.Evaluator(docs, os.path.join(args.data, name + ".truth.tsv"))
            values = {"neardup": shlex.quote(args.neardup), "input": shlex.quote(input_path),
                      "tools": shlex.quote(args.tools), "src": shlex.quote(SOURCE_DIR),
                      "python": "/usr/bin/python3", "name": name}
            results = []
            for method in methods:
                if method["kind"] == "fingerprint":
                    rows = run_fingerprint_method(method, values, ks, run_dir, hist_dir, evaluator,
                                                  name, args.tools)
                else:
                    rows = run_pairs_method(method, values, ks, run_dir, evaluator, name)
                if not rows:
                    continue
                results.append((method["name"], rows))
                for k, seconds, r in rows:
                    results_file.write("%s\t%s\t%d\t%d\t%d\t%d\t%.4f\t%.4f\t%.4f\t%.3f\t%s\n" % (
                        name, method["name"], k, r["found"], r["true"], r["tp"], r["precision"],
                        r["recall"], r["f1"], seconds, json.dumps(r["recall_by_category"])))
                results_file.flush()
            print_collection_table(name, docs, evaluator, truth_seconds, results, ks)
    print("\nresults: %s" % results_path)


if __name__ == "__main__":
    main()
