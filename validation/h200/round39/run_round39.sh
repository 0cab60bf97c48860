#!/bin/bash
# Round 39 on the H200 (issue 12): the copy-only order benchmark (copy39.cu: the 64x64 tile's copy, S = 1..4, k = 2..7
# blocks per SM, with and without a barrier per k-step, every block traced), then round 35b's script unchanged on the
# same device (the favoured-SM copy benchmark and the traced 64x64 GEMMs at 4096^3) so that the copy benchmark's
# order can be set against the same device's GEMM traces. Clocks never changed.
#   OUT=out bash validation/h200/round39/run_round39.sh   -> $OUT/round39.tar.gz, $OUT/round35b.tar.gz
set -u
. "$(dirname "$0")/../run_common.sh"
packed_start 39
HERE=$PWD
mkdir -p build
nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -o build/copy39 copy39.cu > "$O/ptxas_copy39.txt" 2>&1 \
  || echo "copy39 build failed" | tee -a "$O/log.txt"
cuobjdump -sass build/copy39 | gzip > "$O/sass_copy39.txt.gz"
zcat "$O/sass_copy39.txt.gz" | awk '/Function :/ {f=$3} /LDGSTS/ {n[f]++} END {for (k in n) print "ldgsts," k "," n[k]}' \
  | tee -a "$O/log.txt"
cd "$O"
( time timeout 300 "$HERE/build/copy39" > copy39.csv 2> copy39.err ) 2>> log.txt
gpu_state "$O" copy39
grep -c "^block," copy39.csv | sed 's/^/block rows: /' | tee -a log.txt
grep "^launch," copy39.csv | awk -F, '$10 ~ /^[0-9]+$/ && $10 != 0 {print "BAD " $0}' | tee -a log.txt
gzip -f copy39.csv
cd "$HERE"
packed_end 39
bash "$HERE/../round35/run_round35b.sh"
