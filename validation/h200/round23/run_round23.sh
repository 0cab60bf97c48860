#!/usr/bin/env bash
# Round 23 (issue 11): a wave of 8/3 block columns (N = 6336) between 6272 and 6400, which drift in episodes; two
# traced launches.
#   bash validation/h200/round23/run_round23.sh      # on the device (writes $OUT/traces23.tar.gz, launches23.txt, ncu23.tar.gz, sass23.txt, meta23.txt)
R=23 SIZES="6336" TAGS="_2" exec bash "$(dirname "$0")/../round15/run_sizes.sh"
