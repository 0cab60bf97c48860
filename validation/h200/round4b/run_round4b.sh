#!/bin/bash
# Round 4b on the H200 (issue 12): build mma_issue.cu, dump its SASS, run it. Clocks never changed.
# Usage (repository root): bash validation/h200/round4b/run_round4b.sh   -> $OUT/ (or ./out4b/)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
O=${OUT:-$PWD/out4b}; mkdir -p "$O"
cd "$HERE"
. ../run_common.sh
run_start "$O"
build_run "$O" mma_issue 240
run_end "$O"
wc -l "$O/mma_issue.csv"; tail -3 "$O/mma_issue.csv"; cat "$O/log.txt"
