#!/bin/bash
# Round 33 on the H200 (issue 12): round 30's traced S sweep (round 28's binaries: mma.sync and WMMA, S = 1..4, three
# tiles and their copy-less twins; every block's SM, start and end for the 11th of each configuration's 20 timed
# launches) at N = 4096 and 8192 with one block per SM: smem33.patch gives every launch at least SMEM_MIN bytes of
# dynamic shared memory. Nothing else changes; clocks are never changed.
#   bash validation/h200/round33/run_round33.sh   -> $OUT/round33.tar.gz (or ./out33/)
set -u
. "$(dirname "$0")/../run_common.sh"
packed_start 33
HERE=$PWD
mkdir -p build
cp ../round3/clk.h build/clk.h && patch -s build/clk.h ../round30/clk30.patch || echo "clk patch failed" | tee -a "$O/log.txt"
cp ../round3/mma_pipe.cu build/mma_pipe33.cu && patch -s build/mma_pipe33.cu ../round4/mma_pipe4.patch \
  && patch -s build/mma_pipe33.cu ../round28/wmma28.patch && patch -s build/mma_pipe33.cu smem33.patch \
  || echo "patch failed" | tee -a "$O/log.txt"
F="-O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -I../round3"
nvcc $F -DWMMA -o build/mp33_wmma build/mma_pipe33.cu > "$O/ptxas_wmma.txt" 2>&1 &
nvcc $F -o build/mp33_mma build/mma_pipe33.cu > "$O/ptxas_mma.txt" 2>&1 &
wait
ls -la build >> "$O/log.txt"
for b in wmma mma; do cuobjdump -sass "build/mp33_$b" > "$O/sass_$b.txt" 2>&1; gzip -f "$O/sass_$b.txt"; done
cd "$O"
export SMEM_MIN=120000
traced_sweep 33 4096 8192
cd "$HERE"
packed_end 33
