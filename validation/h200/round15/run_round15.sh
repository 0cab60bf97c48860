#!/usr/bin/env bash
# Round 15 (issue 11): do block columns drift apart when a wave holds *almost* a whole number of them? N = 5600,
# 5696, 5760, 5888 (3.02, 2.97, 2.93, 2.87 block columns a wave), controls 5632 (3) and 6144 (2.75); two traced launches each.
#   bash validation/h200/round15/run_round15.sh      # on the device (writes $OUT/traces15.tar.gz, launches15.txt, ncu15.tar.gz, sass15.txt, meta15.txt)
R=15 SIZES="5600 5696 5760 5888 5632 6144" TAGS="_2" exec bash "$(dirname "$0")/../round15/run_sizes.sh"
