#!/usr/bin/env bash
# Round 21 (issue 11): is 11264 (exactly 1.5 block columns a wave, held in round 20) special? Its neighbours
# N = 11136 and 11392 (1.517 and 1.483 block columns a wave); one traced launch each.
#   bash validation/h200/round21/run_round21.sh      # on the device (writes $OUT/traces21.tar.gz, launches21.txt, ncu21.tar.gz, sass21.txt, meta21.txt)
R=21 SIZES="11136 11392" TAGS="" exec bash "$(dirname "$0")/../round15/run_sizes.sh"
