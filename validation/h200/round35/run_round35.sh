#!/bin/bash
# Round 35 on the H200 (issue 12): which SMs share a GPC, and the L2 bandwidth of the 64x64 tile's copy with only some
# SMs (a GPC, the GPCs of one size, one SM per GPC, one SM) active. gpc35.cu says what and how. Clocks never changed.
#   OUT=out bash validation/h200/round35/run_round35.sh   -> $OUT/gpc35.csv, sass, ptxas, clocks
set -u
. "$(dirname "$0")/../run_common.sh"
micro_round gpc35 120 out35
gzip -f "$O/sass_gpc35.txt"
cat "$O/log.txt"; grep -E "^(device|map_max|gpc|copy|warning)" "$O/gpc35.csv"
