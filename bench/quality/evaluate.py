"""Scores a method's near-duplicate pairs against the ground truth of a collection.

Pairs are unordered pairs of document ids (row numbers). A method's pair file has lines
"id_a<TAB>id_b[<TAB>score]"; with --max-score only pairs whose score is <= it count (so one file of
pairs within Hamming distance 12 scores every k <= 12). Truth files are jaccard_join's output.

  precision = |found & true| / |found|   (1 when nothing is found)
  recall    = |found & true| / |true|
  F1        = harmonic mean of the two
Recall per category: a pair of a document and its edited copy counts under the copy's edit (typo,
reorder...); a pair involving copies of different documents (or two copies of one) under "indirect";
a pair of two documents as found under the labels other than "original" joined with "+" (e.g.
"simplified+traditional" for two printings of a poem), or "natural" when both are labelled original.

Usage: evaluate.py --collection docs.jsonl --truth docs.truth.tsv --pairs method.tsv [--max-score K]
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collection  # noqa: E402


def read_pairs(path, with_score=True):
    """(a, b, score) arrays with a < b; score is 0 when the file has no third column."""
    rows = []
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 2:
                continue
            a, b = int(fields[0]), int(fields[1])
            score = float(fields[2]) if with_score and len(fields) > 2 else 0.0
            rows.append((min(a, b), max(a, b), score))
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    array = np.array(rows)
    return array[:, 0].astype(np.int64), array[:, 1].astype(np.int64), array[:, 2]


def pair_category(docs, x, y):
    """The category a true pair's recall is reported under (see the module comment)."""
    if docs[y].get("origin") == docs[x]["id"]:
        return docs[y]["edit"]
    if docs[x].get("origin") == docs[y]["id"]:
        return docs[x]["edit"]
    if docs[x].get("origin") is not None or docs[y].get("origin") is not None:
        return "indirect"
    parts = sorted(d.get("edit", "original") for d in (docs[x], docs[y]))
    parts = [p for p in parts if p != "original"]
    return "+".join(parts) if parts else "natural"


class Evaluator:
    """Holds a collection and its truth; scores any number of pair sets against them."""

    def __init__(self, docs, truth_path):
        self.size = len(docs)
        a, b, _ = read_pairs(truth_path)
        self.truth_keys = np.unique(a * self.size + b)
        categories = [pair_category(docs, x, y) for x, y in zip(a.tolist(), b.tolist())]
        order = np.argsort(a * self.size + b)
        self.truth_categories = np.array(categories, dtype=object)[order] if categories else \
            np.array([], dtype=object)

    def category_sizes(self):
        names, counts = np.unique(self.truth_categories.astype(str), return_counts=True)
        return dict(zip(names.tolist(), counts.tolist()))

    def score(self, a, b):
        """Metrics of the pair set {(a[i], b[i])}; a and b are arrays of ids."""
        low, high = np.minimum(a, b), np.maximum(a, b)
        keep = low != high
        keys = np.unique(low[keep] * self.size + high[keep])
        hit = np.isin(self.truth_keys, keys, assume_unique=True)
        true_positives = int(hit.sum())
        precision = true_positives / keys.size if keys.size else 1.0
        recall = true_positives / self.truth_keys.size if self.truth_keys.size else 1.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_category = {}
        for name in sorted(set(self.truth_categories.tolist())):
            members = self.truth_categories == name
            per_category[name] = float(hit[members].mean())
        return {"found": int(keys.size), "true": int(self.truth_keys.size), "tp": true_positives,
                "precision": precision, "recall": recall, "f1": f1, "recall_by_category": per_category}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collection", required=True)
    parser.add_argument("--truth", required=True)
    parser.add_argument("--pairs", required=True)
    parser.add_argument("--max-score", type=float, default=None)
    args = parser.parse_args()
    evaluator = Evaluator(collection.read_collection(args.collection), args.truth)
    a, b, score = read_pairs(args.pairs)
    if args.max_score is not None:
        keep = score <= args.max_score
        a, b = a[keep], b[keep]
    result = evaluator.score(a, b)
    print("pairs found %d, true %d, correct %d" % (result["found"], result["true"], result["tp"]))
    print("precision %.4f  recall %.4f  F1 %.4f" % (result["precision"], result["recall"], result["f1"]))
    for name, recall in result["recall_by_category"].items():
        print("  recall %-28s %.4f" % (name, recall))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
