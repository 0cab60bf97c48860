#!/usr/bin/env bash
# Round 25 on the H200 (issue 12), one device call: the TMA's bytes per clock into one SM, alone and with 2-132 SMs
# copying (tma25.cu) -> $OUT/tma25.csv, $OUT/tma25.log, $OUT/sass25.txt, $OUT/meta25.txt. Never changes clocks.
#   bash validation/h200/round25/run_round25.sh          # B=b or c: rounds 25b, 25c (./tma25 b -> $OUT/tma25b.csv ...)
R=25
. "$(dirname "$0")/../run_common.sh"
round_start "$R"
nvcc -O3 -arch=sm_90a -std=c++17 -o /tmp/tma25 tma25.cu || exit 1
cuobjdump -sass /tmp/tma25 | grep -E "Function|UTMALDG|SYNCS|UBLKCP" > "$OUT/sass25.txt"
T=${B:-}  # B=b: round 25b; B=c: 25c (the same sweep after the coordinates stopped being divided)
( time timeout 300 /tmp/tma25 $T > "$OUT/tma25$T.csv" 2> "$OUT/tma25$T.log" ) 2>> "$OUT/tma25$T.log"
cat "$OUT/tma25$T.csv"; cat "$OUT/tma25$T.log"
round_end "$R"
