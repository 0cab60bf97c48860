#!/usr/bin/env bash
# Round 16 (issue 11): round 15's map tested near two block columns a wave: N = 8384, 8576, 8896, 9392 (2.02, 1.97,
# 1.90, 1.80); two traced launches each.
#   bash validation/h200/round16/run_round16.sh      # on the device (writes $OUT/traces16.tar.gz, launches16.txt, ncu16.tar.gz, sass16.txt, meta16.txt)
R=16 SIZES="8384 8576 8896 9392" TAGS="_2" exec bash "$(dirname "$0")/../round15/run_sizes.sh"
