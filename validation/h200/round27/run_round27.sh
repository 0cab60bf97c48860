#!/usr/bin/env bash
# Round 27 on the H200 (issue 11), one device call: the naive kernel in column order (../round12/drift12.cu) traced
# and profiled by ncu in the same launch (as rounds 24 and 26) just short of six, five, four and three block columns
# a wave (N = 2848, 3440, 4384, 5920), three times each -- sizes no constant of the runaway was taken from
# -> $OUT/traces27.tar.gz (one CSV per launch), $OUT/ncu27.tar.gz, $OUT/launches27.txt, $OUT/sass27.txt, $OUT/meta27.txt.
# Never changes clocks (ncu --clock-control none).
#   bash validation/h200/round27/run_round27.sh
R=27
. "$(dirname "$0")/../run_common.sh"
round_start "$R"
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/drift27 ../round12/drift12.cu || exit 1
cuobjdump -sass /tmp/drift27 | grep -E "Function|LDG" > "$OUT/sass27.txt"
traced_profiled 27 /tmp/drift27 "3440 1" "5920 1" "2848 1" "4384 1" "3440 2" "5920 2" "2848 2" "4384 2" \
  "3440 3" "5920 3" "2848 3" "4384 3"
cat "$OUT/launches27.txt"
round_end "$R"
