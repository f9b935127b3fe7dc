#!/usr/bin/env bash
# The demo of `make demo`: fingerprints real documents (LibreOffice's English help pages, from Debian)
# and shows how near-duplicates and unrelated pages compare.
set -euo pipefail
nd=${1:?usage: scripts/demo.sh PATH/TO/neardup}
root=$(cd "$(dirname "$0")/.." && pwd)
work="$root/build/demo"
mkdir -p "$work"
if [[ ! -s "$work/pages.txt" ]]; then
  /usr/bin/python3 "$root/bench/corpus/help_text.py" en-US "$work/pages.txt"
fi
pages=$(wc -l <"$work/pages.txt")
echo "== neardup hash: $pages LibreOffice help pages ($(du -h "$work/pages.txt" | cut -f1)), one per line"
start=$(date +%s.%N)
"$nd" hash "$work/pages.txt" >"$work/fingerprints.tsv"
end=$(date +%s.%N)
head -3 "$work/fingerprints.tsv"
echo "... $(wc -l <"$work/fingerprints.tsv") fingerprints in $(printf '%.2f' "$(echo "$end - $start" | bc)") s"
echo
echo "== fingerprints shared by several pages (exact duplicates after normalisation)"
cut -f2 "$work/fingerprints.tsv" | sort | uniq -c | sort -rn | awk '$1 > 1' | head -5
echo
a=$(sed -n 100p "$work/pages.txt")
b=$(printf '%s' "$a" | sed 's/the /a /; s/\. / /; s/LibreOffice/LibreOffice®/')
echo "== neardup compare: page 100 and a lightly edited copy"
"$nd" compare --text "$a" --text "$b" --top 3
echo
echo "== neardup compare: page 100 and page 900"
"$nd" compare --text "$a" --text "$(sed -n 900p "$work/pages.txt")" --top 3
