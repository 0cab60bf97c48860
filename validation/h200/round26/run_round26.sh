#!/usr/bin/env bash
# Round 26 on the H200 (issue 11), one device call: the naive kernel in column order (../round12/drift12.cu) traced
# and profiled by ncu in the same launch (as round 24) at N = 4160, 4256, 4320, twice each
# -> $OUT/traces26.tar.gz (one CSV per launch), $OUT/ncu26.tar.gz, $OUT/launches26.txt, $OUT/sass26.txt, $OUT/meta26.txt.
# Never changes clocks (ncu --clock-control none).
#   bash validation/h200/round26/run_round26.sh
R=26
. "$(dirname "$0")/../run_common.sh"
round_start "$R"
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/drift26 ../round12/drift12.cu || exit 1
cuobjdump -sass /tmp/drift26 | grep -E "Function|LDG" > "$OUT/sass26.txt"
traced_profiled 26 /tmp/drift26 "4256 1" "4160 1" "4320 1" "4256 2" "4160 2" "4320 2"
cat "$OUT/launches26.txt"
round_end "$R"
