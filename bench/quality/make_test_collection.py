"""Makes the small labelled collections checked in under tests/data/quality/ (the F1 floor test).

  long.jsonl   passages of the Confucian classics (孟子, 论语, 大学, 中庸; public domain, from the
               MIT-licensed npm package chinese-poetry) as originals, and copies made from them by
               bench/quality/edits.py (every edit type), Traditional characters
  short.jsonl  poems of the quality poem collection: both sides of --short-pairs true pairs (the
               same poem in two printings, Traditional or Simplified) and --short-others other poems
Each has its ground truth (NAME.truth.tsv) from jaccard_join, exactly as `make quality` makes it.

Usage: make_test_collection.py --package-dir node_modules/chinese-poetry --poems poems.jsonl
                               --poems-truth poems.truth.tsv --tools BUILD/bench/quality --out DIR
"""

import argparse
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collection  # noqa: E402
import edits  # noqa: E402


def classic_passages(dist, min_chars, max_chars):
    """Consecutive paragraphs of each chapter joined until a passage reaches min_chars."""
    chapters = []
    for name in ("mengzi", "daxue", "zhongyong"):
        with open(os.path.join(dist, "sishuwujing", name + ".json"), encoding="utf-8") as f:
            data = json.load(f)
        chapters.extend(data if isinstance(data, list) else [data])
    with open(os.path.join(dist, "lunyu", "lunyu.json"), encoding="utf-8") as f:
        chapters.extend(json.load(f))
    passages = []
    for chapter in chapters:
        current = []
        for paragraph in chapter.get("paragraphs", []):
            current.append(paragraph.strip())
            if sum(map(len, current)) >= min_chars:
                text = "\n".join(current)
                if len(text) <= max_chars:
                    passages.append({"text": text, "source": chapter.get("chapter", "")})
                current = []
    return passages


def write_with_truth(docs, out_dir, name, tools):
    path = os.path.join(out_dir, name + ".jsonl")
    collection.write_collection(path, docs)
    normalised = "\n".join(collection.truth_normalise([d["text"] for d in docs])) + "\n"
    with open(os.path.join(out_dir, name + ".truth.tsv"), "wb") as out:
        subprocess.run([os.path.join(tools, "jaccard_join"), "--shingle", "5", "--threshold", "0.8"],
                       input=normalised.encode("utf-8"), stdout=out, check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--package-dir", required=True)
    parser.add_argument("--poems", required=True)
    parser.add_argument("--poems-truth", required=True)
    parser.add_argument("--tools", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--long-originals", type=int, default=70)
    parser.add_argument("--short-pairs", type=int, default=100)
    parser.add_argument("--short-others", type=int, default=160)
    parser.add_argument("--seed", type=int, default=61)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)

    passages = classic_passages(os.path.join(args.package_dir, "dist"), 250, 700)
    docs = rng.sample(passages, min(args.long_originals, len(passages)))
    for row in range(len(docs)):
        edit = edits.EDIT_TYPES[row % len(edits.EDIT_TYPES)]
        docs.append({"text": edits.apply_edit(edit, docs[row]["text"], rng), "edit": edit,
                     "origin": str(row), "source": docs[row]["source"]})
    write_with_truth(docs, args.out, "long", args.tools)

    poems = collection.read_collection(args.poems)
    with open(args.poems_truth) as f:
        pairs = [tuple(int(x) for x in line.split("\t")[:2]) for line in f]
    rows = set()
    for a, b in rng.sample(pairs, min(args.short_pairs, len(pairs))):
        rows |= {a, b}
    rows |= set(rng.sample(range(len(poems)), args.short_others))
    short = [{"text": poems[r]["text"], "edit": poems[r]["edit"], "source": poems[r]["source"]}
             for r in sorted(rows)]
    write_with_truth(short, args.out, "short", args.tools)
    print("make_test_collection: %d long and %d short documents -> %s" % (len(docs), len(short), args.out))


if __name__ == "__main__":
    main()
