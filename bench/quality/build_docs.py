"""Builds the Chinese documentation collection: LibreOffice help pages (Debian libreoffice-help-zh-cn)
as originals, plus edited copies of a sample of them (bench/quality/edits.py), with a fixed seed.

The text of a page is what its DisplayArea shows: block elements (p, h1-h6, div, li, td, br) end
lines, scripts and styles are dropped. Pages with fewer than --min-chars characters are skipped.

Usage: build_docs.py --out docs.jsonl [--help-dir DIR] [--copies N] [--seed S]
"""

import argparse
import html.parser
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collection  # noqa: E402
import edits  # noqa: E402

_BLOCKS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "div", "li", "td", "tr", "br", "table", "pre"}


class _DisplayAreaText(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0  # div depth inside DisplayArea (0: outside)
        self.skip = 0
        self.parts = []

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.skip += 1
        if tag == "div":
            if self.depth:
                self.depth += 1
            elif dict(attrs).get("id") == "DisplayArea":
                self.depth = 1
        if self.depth and tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self.skip = max(0, self.skip - 1)
        if self.depth and tag in _BLOCKS:
            self.parts.append("\n")
        if tag == "div" and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth and not self.skip:
            self.parts.append(data)


def page_text(path):
    parser = _DisplayAreaText()
    with open(path, encoding="utf-8", errors="replace") as f:
        parser.feed(f.read())
    lines = (" ".join(line.split()) for line in "".join(parser.parts).split("\n"))
    return "\n".join(line for line in lines if line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--help-dir", default="/usr/share/libreoffice/help/zh-CN/text")
    parser.add_argument("--copies", type=int, default=1200)
    parser.add_argument("--min-chars", type=int, default=150)
    parser.add_argument("--seed", type=int, default=6)
    args = parser.parse_args()

    paths = sorted(os.path.join(d, f) for d, _, files in os.walk(args.help_dir)
                   for f in files if f.endswith(".html"))
    if not paths:
        sys.exit("build_docs: no HTML pages under %s (install libreoffice-help-zh-cn)" % args.help_dir)
    docs = []
    for path in paths:
        text = page_text(path)
        if len(text) >= args.min_chars:
            docs.append({"text": text, "source": os.path.relpath(path, args.help_dir)})
    rng = random.Random(args.seed)
    originals = len(docs)
    for n, row in enumerate(sorted(rng.sample(range(originals), min(args.copies, originals)))):
        edit = edits.EDIT_TYPES[n % len(edits.EDIT_TYPES)]
        docs.append({"text": edits.apply_edit(edit, docs[row]["text"], rng), "edit": edit,
                     "origin": str(row), "source": docs[row]["source"]})
    collection.write_collection(args.out, docs)
    print("build_docs: %d pages, %d edited copies -> %s" % (originals, len(docs) - originals, args.out))


if __name__ == "__main__":
    main()
