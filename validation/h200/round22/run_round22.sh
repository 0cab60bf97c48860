#!/usr/bin/env bash
# Round 22 (issue 11): do waves of C = p / q block columns with a small q hold? N = 9216 (11/6), 10560 (8/5),
# 12672 (4/3) and the control 12800 (33/25); one traced launch each.
#   bash validation/h200/round22/run_round22.sh      # on the device (writes $OUT/traces22.tar.gz, launches22.txt, ncu22.tar.gz, sass22.txt, meta22.txt)
R=22 SIZES="9216 10560 12672 12800" TAGS="" exec bash "$(dirname "$0")/../round15/run_sizes.sh"
