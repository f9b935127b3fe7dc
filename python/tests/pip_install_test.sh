#!/usr/bin/env bash
# `pip install ./python --no-build-isolation` into a virtual environment made with
# --system-site-packages, offline, as the README shows; then the installed package is used from
# outside the source tree. The extension is taken from the build folder given (already built by
# CMake), so the test checks the packaging (setup.py, pyproject.toml, package data, the dask
# entry point), not a second build of the library.
# Usage: pip_install_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$(cd "$1" && pwd)
build_dir=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
cp -r "$source_dir/python" "$work/package"  # pip builds in place: keep the source tree clean
rm -rf "$work/package/build" "$work/package"/*.egg-info
NEARDUP_SOURCE_DIR="$source_dir" NEARDUP_CMAKE_BUILD_DIR="$build_dir" PIP_NO_INDEX=1 \
  "$work/venv/bin/pip" install --no-build-isolation --no-deps -q "$work/package" >"$work/pip.log" 2>&1 ||
  { cat "$work/pip.log"; exit 1; }
cd "$work"
env -u PYTHONPATH "$work/venv/bin/python" - <<'PY'
import os, neardup, neardup.dask
assert "/venv/" in neardup.__file__, neardup.__file__
assert os.path.exists(os.path.join(os.path.dirname(neardup.__file__), "py.typed"))
assert os.path.exists(os.path.join(os.path.dirname(neardup.__file__), "_neardup.pyi"))
assert neardup.lcut("我来到北京清华大学") == ["我", "来到", "北京", "清华大学"]
a = neardup.Fingerprinter().sketch("The quick brown fox jumps over the lazy dog near the bank.")
b = neardup.Fingerprinter().sketch("The quick brown fox jumps over the lazy dog near the bank!")
assert neardup.estimate_jaccard(a.sketch, b.sketch) >= 0.8
print("installed:", neardup.__file__)
PY
env -u PYTHONPATH "$work/venv/bin/python" -m neardup.dask --help | grep -q -- "--scheduler ADDRESS"
echo "pip_install_test: ok"
