#!/bin/bash
# Round 4d on the H200 (issue 12): build cpa_rt.cu, dump its SASS, run it. Clocks never changed.
# Usage (repository root): bash validation/h200/round4d/run_round4d.sh   -> $OUT/ (or ./out4d/)
set -u
. "$(dirname "$0")/../run_common.sh"
micro_round cpa_rt 150 out4d   # sets O, works in this folder
cat "$O/cpa_rt.csv"; cat "$O/log.txt" "$O/cpa_rt.err"
# the timed section of rt<1,1>: from one clock read to the next
awk '/Function : .*rt.*ILi1ELi1E/{f=1} f&&/CLOCK/{c++} f&&c>=1&&c<=3{print} /Function : /&&!/ILi1ELi1E/{f=0}' "$O/sass_cpa_rt.txt" | cut -c1-90 | head -60
