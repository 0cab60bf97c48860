#!/bin/bash
# Round 4d on the H200 (issue 12): build cpa_rt.cu, dump its SASS, run it. Clocks never changed.
# Usage (repository root): bash validation/h200/round4d/run_round4d.sh   -> $OUT/ (or ./out4d/)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
O=${OUT:-$PWD/out4d}; mkdir -p "$O"
cd "$HERE"
date -u +%FT%TZ > "$O/start_time.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > "$O/smi_before.csv" 2>&1
nvcc --version > "$O/nvcc_version.txt" 2>&1
mkdir -p build
nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -o build/cpa_rt cpa_rt.cu > "$O/ptxas.txt" 2>&1 || { echo build failed; cat "$O/ptxas.txt"; exit 1; }
cuobjdump -sass build/cpa_rt > "$O/sass_cpa_rt.txt" 2>&1
( time timeout 150 build/cpa_rt > "$O/cpa_rt.csv" 2> "$O/cpa_rt.err" ) 2>> "$O/log.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv > "$O/smi_after.csv" 2>&1
date -u +%FT%TZ > "$O/end_time.txt"
cat "$O/cpa_rt.csv"; cat "$O/log.txt" "$O/cpa_rt.err"
# the timed section of rt<1,1>: from one clock read to the next
awk '/Function : .*rt.*ILi1ELi1E/{f=1} f&&/CLOCK/{c++} f&&c>=1&&c<=3{print} /Function : /&&!/ILi1ELi1E/{f=0}' "$O/sass_cpa_rt.txt" | cut -c1-90 | head -60
