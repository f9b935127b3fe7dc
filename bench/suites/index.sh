#!/usr/bin/env bash
# The exact index and all-pairs join against FAISS (bench/run_index_bench.sh; section of bench/README.md).
exec bash "$(dirname "$0")/../run_index_bench.sh" "$1"
