#!/bin/bash
# Round 11 on the H200 (issue 12): build sit11.cu, dump its SASS, run it. Clocks never changed.
# Usage (repository root): OUT=out11 bash validation/h200/round11/run_round11.sh   -> $OUT/ (launches.csv, marks.tar.gz, ...)
set -u
cd "$(dirname "$0")"
. ../run_common.sh
O=${OUT:-$PWD/out11}; mkdir -p "$O"; O=$(cd "$O" && pwd)
run_start "$O"
nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -o build/sit11 sit11.cu > "$O/ptxas.txt" 2>&1 || { echo build failed; cat "$O/ptxas.txt"; exit 1; }
cuobjdump -sass build/sit11 > "$O/sass_sit11.txt" 2>&1
mkdir -p /tmp/m11 && rm -f /tmp/m11/*
( time timeout 300 build/sit11 /tmp/m11 > "$O/sit11.out" 2> "$O/sit11.err" ) 2>> "$O/log.txt"
run_end "$O"
cp /tmp/m11/launches.csv "$O/"
( cd /tmp/m11 && tar czf "$O/marks.tar.gz" marks_*.csv )
gzip -9 "$O/sass_sit11.txt"
( cd "$O" && tar czf meta.tar.gz start_time.txt smi_before.csv nvcc_version.txt ptxas.txt log.txt sit11.out sit11.err smi_after.csv end_time.txt && rm -f start_time.txt smi_before.csv nvcc_version.txt ptxas.txt log.txt sit11.out sit11.err smi_after.csv end_time.txt )
cat "$O/launches.csv"
zcat "$O/sass_sit11.txt.gz" | grep -E "Function|HMMA|LDGSTS|LDG|CS2R|IADD3|BAR" | awk '{print $1, $2, $3}' | sort | uniq -c | sort -rn | head -40
ls -la "$O"
