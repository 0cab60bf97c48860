#!/usr/bin/env bash
# Round 20 (issue 11): round 19's law tested again: N = 4288 (round 19's miss, two more launches), 4416, 5248, 7936,
# 11264 (3.94, 3.83, 3.22, 2.13, 1.50 block columns a wave); two traced launches each.
#   bash validation/h200/round20/run_round20.sh      # on the device (writes $OUT/traces20.tar.gz, launches20.txt, ncu20.tar.gz, sass20.txt, meta20.txt)
R=20 SIZES="4288 4416 5248 7936 11264" TAGS="_2" exec bash "$(dirname "$0")/../round15/run_sizes.sh"
