"""Builds the short Chinese text collection from the npm package chinese-poetry: the same poem as
printed in several collections, in Traditional and in Simplified characters, with natural variants
(variant characters, editorial readings, different line cuts), among unrelated poems.

A document is a poem's body (its lines, one per line; no title or author, which differ between
collections). The collection holds:
  - every poem of the small anthologies (Simplified: 水墨唐诗, 花间集, 南唐二主词, 宋词三百首;
    Traditional: 唐诗三百首 (two editions), 千家诗) and --sample poems drawn from 全唐诗;
  - every poem of the large corpora (全唐诗, 御定全唐诗, 全宋词) that shares a line of at least
    --min-line characters with one of those (after truth normalisation: so across scripts);
  - --distractors poems drawn at random from the large corpora.
The "edit" field says the script of the printing: "simplified" or "traditional".

Usage: build_poems.py --package-dir DIR --out poems.jsonl [--sample N] [--distractors N] [--seed S]
"""

import argparse
import glob
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collection  # noqa: E402


def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _poems(records, name, script):
    for r in records:
        lines = [line.strip() for line in r.get("paragraphs", [])
                 if isinstance(line, str) and line.strip()]
        if lines:
            yield {"text": "\n".join(lines), "edit": script, "source": name}


def _nested(path, name, script):
    """The poems of a 蒙学 anthology file (content -> content -> paragraphs)."""
    for group in _load(path)["content"]:
        yield from _poems(group["content"], name, script)


def load_anthologies(dist):
    yield from _poems(_load(os.path.join(dist, "shuimotangshi/shuimotangshi.json")), "水墨唐诗", "simplified")
    for path in sorted(glob.glob(os.path.join(dist, "wudaishici/huajianji/huajianji-*-juan.json"))):
        yield from _poems(_load(path), "花间集", "simplified")
    yield from _poems(_load(os.path.join(dist, "wudaishici/nantang/poetrys.json")), "南唐二主词", "simplified")
    yield from _poems(_load(os.path.join(dist, "songci/宋词三百首.json")), "宋词三百首", "simplified")
    yield from _poems(_load(os.path.join(dist, "quantangshi/唐诗三百首.json")), "唐诗三百首", "traditional")
    yield from _nested(os.path.join(dist, "mengxue/tangshisanbaishou.json"), "唐诗三百首(蒙学)", "traditional")
    yield from _nested(os.path.join(dist, "mengxue/qianjiashi.json"), "千家诗", "traditional")


def load_corpora(dist):
    corpora = {"全唐诗": [], "御定全唐诗": [], "全宋词": []}
    for path in sorted(glob.glob(os.path.join(dist, "quantangshi/poet.tang.*.json"))):
        corpora["全唐诗"].extend(_poems(_load(path), "全唐诗", "traditional"))
    for path in sorted(glob.glob(os.path.join(dist, "yudingquantangshi/json/*.json"))):
        corpora["御定全唐诗"].extend(_poems(_load(path), "御定全唐诗", "traditional"))
    for path in sorted(glob.glob(os.path.join(dist, "songci/ci.song.*.json"))):
        corpora["全宋词"].extend(_poems(_load(path), "全宋词", "simplified"))
    return corpora


def normalised_lines(docs, min_line):
    """The set of normalised lines of at least min_line characters of each doc."""
    normal = collection.truth_normalise([d["text"] for d in docs])
    return [{line for line in n.split(" ") if len(line) >= min_line} for n in normal]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--package-dir", required=True, help="node_modules/chinese-poetry")
    parser.add_argument("--out", required=True)
    parser.add_argument("--sample", type=int, default=2000)
    parser.add_argument("--distractors", type=int, default=6000)
    parser.add_argument("--min-line", type=int, default=5)
    parser.add_argument("--min-chars", type=int, default=10)
    parser.add_argument("--seed", type=int, default=6)
    args = parser.parse_args()

    dist = os.path.join(args.package_dir, "dist")
    rng = random.Random(args.seed)
    corpora = load_corpora(dist)
    big = [d for name in sorted(corpora) for d in corpora[name]
           if len(collection.fold_width_and_case(d["text"])) >= args.min_chars]
    anchors = [d for d in load_anthologies(dist)
               if len(collection.fold_width_and_case(d["text"])) >= args.min_chars]
    tang = [i for i, d in enumerate(big) if d["source"] == "全唐诗"]
    chosen = set(rng.sample(tang, args.sample))
    anchor_lines = set()
    for lines in normalised_lines(anchors + [big[i] for i in sorted(chosen)], args.min_line):
        anchor_lines |= lines
    for i, lines in enumerate(normalised_lines(big, args.min_line)):
        if lines & anchor_lines:
            chosen.add(i)
    variants = len(chosen)
    chosen |= set(rng.sample(range(len(big)), args.distractors))
    docs = anchors + [big[i] for i in sorted(chosen)]
    rng.shuffle(docs)
    collection.write_collection(args.out, docs)
    print("build_poems: %d anthology poems, %d corpus poems sharing a line, %d in all -> %s"
          % (len(anchors), variants, len(docs), args.out))


if __name__ == "__main__":
    main()
