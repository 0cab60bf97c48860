#!/bin/bash
# Round 4b on the H200 (issue 12): build mma_issue.cu, dump its SASS, run it. Clocks never changed.
# Usage (repository root): bash validation/h200/round4b/run_round4b.sh   -> $OUT/ (or ./out4b/)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
O=${OUT:-$PWD/out4b}; mkdir -p "$O"
cd "$HERE"
date -u +%FT%TZ > "$O/start_time.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > "$O/smi_before.csv" 2>&1
nvcc --version > "$O/nvcc_version.txt" 2>&1
mkdir -p build
nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -o build/mma_issue mma_issue.cu > "$O/ptxas.txt" 2>&1 || { echo build failed; cat "$O/ptxas.txt"; exit 1; }
cuobjdump -sass build/mma_issue > "$O/sass_mma_issue.txt" 2>&1
( time timeout 240 build/mma_issue > "$O/mma_issue.csv" 2> "$O/mma_issue.err" ) 2>> "$O/log.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv > "$O/smi_after.csv" 2>&1
date -u +%FT%TZ > "$O/end_time.txt"
wc -l "$O/mma_issue.csv"; tail -3 "$O/mma_issue.csv"; cat "$O/log.txt"
