#!/usr/bin/env bash
# Chinese segmentation, keywords and the keywords fingerprint against Python jieba (bench/jieba_bench.sh).
exec bash "$(dirname "$0")/../jieba_bench.sh" "$1"
