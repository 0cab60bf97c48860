#!/bin/bash
# Round 30 on the H200 (issue 12): where every block of the S sweep's launches ran, and when. Builds round 3's
# mma_pipe.cu + round 4's mma_pipe4.patch + round 28's wmma28.patch (mma.sync and -DWMMA), with round 3's clk.h +
# clk30.patch: every block's thread 0 records its SM (%smid), (globaltimer, clock64) at start and end, for up to 16,384
# blocks, and the 11th of each configuration's 20 timed launches writes them all to $SCHED_OUT.
#   bash validation/h200/round30/run_round30.sh   -> $OUT/round30.tar.gz (or ./out30/)
# Clocks are never changed.
set -u
. "$(dirname "$0")/../run_common.sh"
packed_start 30
HERE=$PWD
cp ../round3/clk.h build/clk.h && patch -s build/clk.h clk30.patch || echo "clk patch failed" | tee -a "$O/log.txt"
build_pipe28 30
cd "$O"
for b in mma wmma; do
  for n in 4096 8192; do
    ( time SCHED_OUT=sched_${b}_$n.csv timeout 200 "$HERE/build/mp30_$b" check_time $n,$n,$n > ${b}_$n.csv 2> ${b}_$n.err ) 2>> log.txt
    mv launches_$n.csv launches_${b}_$n.csv; gzip -f sched_${b}_$n.csv; gpu_state "$O" "${b}_$n"
  done
done
cd "$HERE"
packed_end 30
