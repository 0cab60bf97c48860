#!/usr/bin/env bash
# Round 19 (issue 11): the pull-back law (d / g a wave) and the exponential spread tested on six new sizes:
# N = 4288, 4352, 6208, 6528, 7680, 9728 (3.94, 3.88, 2.72, 2.59, 2.20, 1.74 block columns a wave); one traced launch each.
#   bash validation/h200/round19/run_round19.sh      # on the device (writes $OUT/traces19.tar.gz, launches19.txt, ncu19.tar.gz, sass19.txt, meta19.txt)
R=19 SIZES="4288 4352 6208 6528 7680 9728" TAGS="" exec bash "$(dirname "$0")/../round15/run_sizes.sh"
