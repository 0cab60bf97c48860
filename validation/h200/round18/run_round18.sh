#!/usr/bin/env bash
# Round 18 (issue 11): the hold criterion (r / d against 0.03) tested: N = 5952, 6080, 6272, 10240, 10752 (2.84,
# 2.78, 2.69, 1.65, 1.57 block columns a wave); one traced launch each.
#   bash validation/h200/round18/run_round18.sh      # on the device (writes $OUT/traces18.tar.gz, launches18.txt, ncu18.tar.gz, sass18.txt, meta18.txt)
R=18 SIZES="5952 6080 6272 10240 10752" TAGS="" exec bash "$(dirname "$0")/../round15/run_sizes.sh"
