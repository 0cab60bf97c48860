#!/bin/bash
# Round 30 on the H200 (issue 12): where every block of the S sweep's launches ran, and when. Builds round 3's
# mma_pipe.cu + round 4's mma_pipe4.patch + round 28's wmma28.patch (mma.sync and -DWMMA), with round 3's clk.h +
# clk30.patch: every block's thread 0 records its SM (%smid), (globaltimer, clock64) at start and end, for up to 16,384
# blocks, and the 11th of each configuration's 20 timed launches writes them all to $SCHED_OUT.
#   bash validation/h200/round30/run_round30.sh   -> $OUT/round30.tar.gz (or ./out30/)
# Clocks are never changed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
D=${OUT:-$PWD/out30}; mkdir -p "$D"
O=$(mktemp -d)/raw30; mkdir -p "$O"
cd "$HERE"
. ../run_common.sh
run_start "$O"
cp ../round3/mma_pipe.cu build/mma_pipe30.cu && patch -s build/mma_pipe30.cu ../round4/mma_pipe4.patch \
  && patch -s build/mma_pipe30.cu ../round28/wmma28.patch || echo "patch failed" | tee -a "$O/log.txt"
cp ../round3/clk.h build/clk.h && patch -s build/clk.h clk30.patch || echo "clk patch failed" | tee -a "$O/log.txt"
F="-O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v"
nvcc $F -DWMMA -o build/mp30_wmma build/mma_pipe30.cu > "$O/ptxas_wmma.txt" 2>&1 &
nvcc $F -o build/mp30_mma build/mma_pipe30.cu > "$O/ptxas_mma.txt" 2>&1 &
wait
ls -la build >> "$O/log.txt"
for b in wmma mma; do cuobjdump -sass build/mp30_$b > "$O/sass_$b.txt" 2>&1; gzip -f "$O/sass_$b.txt"; done
cd "$O"
for b in mma wmma; do
  for n in 4096 8192; do
    ( time SCHED_OUT=sched_${b}_$n.csv timeout 200 "$HERE/build/mp30_$b" check_time $n,$n,$n > ${b}_$n.csv 2> ${b}_$n.err ) 2>> log.txt
    mv launches_$n.csv launches_${b}_$n.csv; gzip -f sched_${b}_$n.csv; gpu_state "$O" "${b}_$n"
  done
done
cd "$HERE"
run_end "$O"
cat "$O/log.txt"; ls -la "$O"; head -3 "$O"/mma_4096.csv
tar czf "$D/round30.tar.gz" -C "$(dirname "$O")" "$(basename "$O")"
