#!/usr/bin/env bash
# Round 17 (issue 11): the rule 'drift up to 0.22 of a column short of whole' tested: N = 5824, 6016, 6400, 8320,
# 9088, 9984 (2.90, 2.81, 2.64, 2.03, 1.86, 1.69 block columns a wave); one traced launch each.
#   bash validation/h200/round17/run_round17.sh      # on the device (writes $OUT/traces17.tar.gz, launches17.txt, ncu17.tar.gz, sass17.txt, meta17.txt)
R=17 SIZES="5824 6016 6400 8320 9088 9984" TAGS="" exec bash "$(dirname "$0")/../round15/run_sizes.sh"
