#!/bin/bash
# Round 4c on the H200 (issue 12): build ldsm_lat.cu, dump its SASS, run it. Clocks never changed.
# Usage (repository root): bash validation/h200/round4c/run_round4c.sh   -> $OUT/ (or ./out4c/)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
O=${OUT:-$PWD/out4c}; mkdir -p "$O"
cd "$HERE"
date -u +%FT%TZ > "$O/start_time.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > "$O/smi_before.csv" 2>&1
nvcc --version > "$O/nvcc_version.txt" 2>&1
mkdir -p build
nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -o build/ldsm_lat ldsm_lat.cu > "$O/ptxas.txt" 2>&1 || { echo build failed; cat "$O/ptxas.txt"; exit 1; }
cuobjdump -sass build/ldsm_lat > "$O/sass_ldsm_lat.txt" 2>&1
( time timeout 120 build/ldsm_lat > "$O/ldsm_lat.csv" 2> "$O/ldsm_lat.err" ) 2>> "$O/log.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv > "$O/smi_after.csv" 2>&1
date -u +%FT%TZ > "$O/end_time.txt"
cat "$O/ldsm_lat.csv"; cat "$O/log.txt" "$O/ldsm_lat.err"
grep -A3 -B1 "LDSM\|LDS\b" "$O/sass_ldsm_lat.txt" | grep -v "^--$" | head -60
