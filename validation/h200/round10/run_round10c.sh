#!/bin/bash
# Round 10c on the H200 (issue 12): build smsp_mio.cu, dump its SASS, run it. Clocks never changed.
# Usage (repository root): bash validation/h200/round10/run_round10c.sh   -> $OUT/ (or ./out10c/)
set -u
. "$(dirname "$0")/../run_common.sh"
micro_round smsp_mio 240 out10c   # sets O, works in this folder
wc -l "$O/smsp_mio.csv"; cat "$O/log.txt"; head "$O/smsp_mio.err"
gzip -9 "$O/sass_smsp_mio.txt"
( cd "$O" && tar czf meta10c.tar.gz start_time.txt smi_before.csv nvcc_version.txt ptxas.txt log.txt smsp_mio.err smi_after.csv end_time.txt && rm -f start_time.txt smi_before.csv nvcc_version.txt ptxas.txt log.txt smsp_mio.err smi_after.csv end_time.txt )
