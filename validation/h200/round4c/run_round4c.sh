#!/bin/bash
# Round 4c on the H200 (issue 12): build ldsm_lat.cu, dump its SASS, run it. Clocks never changed.
# Usage (repository root): bash validation/h200/round4c/run_round4c.sh   -> $OUT/ (or ./out4c/)
set -u
. "$(dirname "$0")/../run_common.sh"
micro_round ldsm_lat 120 out4c   # sets O, works in this folder
cat "$O/ldsm_lat.csv"; cat "$O/log.txt" "$O/ldsm_lat.err"
grep -A3 -B1 "LDSM\|LDS\b" "$O/sass_ldsm_lat.txt" | grep -v "^--$" | head -60
