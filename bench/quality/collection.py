"""Labelled collections of the quality harness: the file format and the ground-truth normalisation.

A collection is a JSON Lines file, one document per line:
  {"id": "17", "text": "...", "edit": "typo", "origin": "3", "source": "text/shared/01/x.html"}
- id: the row number as a decimal string (methods write pairs of these ids);
- edit: "original" for a document as found, else the edit that made this copy (bench/quality/edits.py)
  or the variant kind of a natural variant (e.g. "simplified");
- origin: for an edited copy, the id of the document it was made from, else null;
- source: where the text came from (file, message, collection), for reading results.

The ground truth compares texts after this normalisation (truth_normalise):
  1. Unicode NFKC, then case folding (full-width forms become ASCII, compatibility forms plain);
  2. every maximal run of characters that are not letters or digits (white space, punctuation,
     symbols, underscores) becomes one space, and the ends are trimmed;
  3. Traditional Chinese becomes Simplified with OpenCC's t2s conversion (characters and phrases).
Shingles are then substrings of 5 code points of that string (bench/quality/jaccard_join.cc).
"""

import json
import re
import subprocess
import unicodedata

_NOT_WORD = re.compile(r"[\W_]+")


def write_collection(path, docs):
    """Writes docs (dicts with text, edit, origin, source) and gives each its row number as id."""
    with open(path, "w", encoding="utf-8") as out:
        for row, doc in enumerate(docs):
            record = {"id": str(row), "text": doc["text"], "edit": doc.get("edit", "original"),
                      "origin": doc.get("origin"), "source": doc.get("source", "")}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def read_collection(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def opencc_convert(lines, config="t2s.json"):
    """Converts single-line strings with the opencc program (Debian package opencc)."""
    joined = "\n".join(line.replace("\n", " ") for line in lines) + "\n"
    result = subprocess.run(["opencc", "-c", config], input=joined.encode("utf-8"),
                            stdout=subprocess.PIPE, check=True)
    converted = result.stdout.decode("utf-8").split("\n")
    if len(converted) < len(lines):
        raise RuntimeError("opencc returned %d lines for %d" % (len(converted), len(lines)))
    return converted[:len(lines)]


def fold_width_and_case(text):
    text = unicodedata.normalize("NFKC", text).casefold()
    return _NOT_WORD.sub(" ", text).strip()


def truth_normalise(texts):
    """The normalised form of each text that the ground truth shingles (see the module comment)."""
    return opencc_convert([fold_width_and_case(t) for t in texts])
