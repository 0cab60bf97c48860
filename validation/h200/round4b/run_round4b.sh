#!/bin/bash
# Round 4b on the H200 (issue 12): build mma_issue.cu, dump its SASS, run it. Clocks never changed.
# Usage (repository root): bash validation/h200/round4b/run_round4b.sh   -> $OUT/ (or ./out4b/)
set -u
. "$(dirname "$0")/../run_common.sh"
micro_round mma_issue 240 out4b   # sets O, works in this folder
wc -l "$O/mma_issue.csv"; tail -3 "$O/mma_issue.csv"; cat "$O/log.txt"
