#!/usr/bin/python3
"""Extracts real text from Debian's LibreOffice help pages (libreoffice-help-LANG packages).

Usage: help_text.py LANG OUT [--per paragraph|page] [--limit N]
  LANG is a folder of /usr/share/libreoffice/help (en-US, zh-CN). With --per page (default) every
  page becomes one document (its paragraphs joined by spaces); with --per paragraph every paragraph of
  the page's main content is a line. Output is UTF-8, one document per line, pages in sorted order.
"""
import argparse
import html.parser
import os
import sys

HELP_ROOT = "/usr/share/libreoffice/help"
BLOCKS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "td", "th", "pre", "div"}


class MainText(html.parser.HTMLParser):
    """Collects the paragraphs inside <div id="DisplayArea">, skipping scripts and styles."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0  # div nesting inside DisplayArea (0: outside)
        self.skip = 0
        self.current = []
        self.paragraphs = []

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.skip += 1
        if tag == "div":
            if self.depth:
                self.depth += 1
            elif dict(attrs).get("id") == "DisplayArea":
                self.depth = 1
        if self.depth and tag in BLOCKS:
            self.flush()

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self.skip:
            self.skip -= 1
        if self.depth and tag in BLOCKS:
            self.flush()
        if tag == "div" and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth and not self.skip:
            self.current.append(data)

    def flush(self):
        text = " ".join("".join(self.current).split())
        if text:
            self.paragraphs.append(text)
        self.current = []


def pages(lang):
    root = os.path.join(HELP_ROOT, lang, "text")
    for folder, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if name.endswith(".html"):
                yield os.path.join(folder, name)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("lang")
    parser.add_argument("out")
    parser.add_argument("--per", choices=["page", "paragraph"], default="page")
    parser.add_argument("--limit", type=int, default=0, help="stop after N documents")
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(HELP_ROOT, args.lang)):
        sys.exit(f"help_text.py: {HELP_ROOT}/{args.lang} is missing: install libreoffice-help-{args.lang.lower()}")
    count = 0
    with open(args.out, "w", encoding="utf-8") as out:
        for path in pages(args.lang):
            extractor = MainText()
            with open(path, encoding="utf-8", errors="replace") as f:
                extractor.feed(f.read())
            extractor.flush()
            docs = extractor.paragraphs if args.per == "paragraph" else [" ".join(extractor.paragraphs)]
            for doc in docs:
                if doc:
                    out.write(doc + "\n")
                    count += 1
                    if args.limit and count >= args.limit:
                        return


if __name__ == "__main__":
    main()
