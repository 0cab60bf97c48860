#!/bin/bash
# Round 4c on the H200 (issue 12): build ldsm_lat.cu, dump its SASS, run it. Clocks never changed.
# Usage (repository root): bash validation/h200/round4c/run_round4c.sh   -> $OUT/ (or ./out4c/)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
O=${OUT:-$PWD/out4c}; mkdir -p "$O"
cd "$HERE"
. ../run_common.sh
run_start "$O"
build_run "$O" ldsm_lat 120
run_end "$O"
cat "$O/ldsm_lat.csv"; cat "$O/log.txt" "$O/ldsm_lat.err"
grep -A3 -B1 "LDSM\|LDS\b" "$O/sass_ldsm_lat.txt" | grep -v "^--$" | head -60
