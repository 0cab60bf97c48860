#!/bin/bash
# Round 10 on the H200 (issue 12): build smsp_share.cu, dump its SASS, run it. Clocks never changed.
# Usage (repository root): bash validation/h200/round10/run_round10.sh   -> $OUT/ (or ./out10/)
set -u
. "$(dirname "$0")/../run_common.sh"
micro_round smsp_share 240 out10   # sets O, works in this folder
wc -l "$O/smsp_share.csv"; head -3 "$O/smsp_share.csv"; cat "$O/log.txt"; head "$O/smsp_share.err"
gzip -9 "$O/sass_smsp_share.txt"
( cd "$O" && tar czf meta.tar.gz start_time.txt smi_before.csv nvcc_version.txt ptxas.txt log.txt smsp_share.err smi_after.csv end_time.txt && rm -f start_time.txt smi_before.csv nvcc_version.txt ptxas.txt log.txt smsp_share.err smi_after.csv end_time.txt )
ls -la "$O"
