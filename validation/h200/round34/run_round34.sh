#!/bin/bash
# Round 34 on the H200 (issue 12): how a launch ends as its last wave fills. Round 30's traced binaries (round 28's
# mma.sync and WMMA builds with clk30.patch: every block's SM, start and end for the 11th of each configuration's 20
# timed launches) at M = K = 4096 and N = 3712 ... 4608, so that the part-wave after the last whole wave of the 64x64
# tile takes 0.02-0.99 of a wave. Nothing else changes; clocks are never changed.
#   bash validation/h200/round34/run_round34.sh   -> $OUT/round34.tar.gz (or ./out34/)
set -u
. "$(dirname "$0")/../run_common.sh"
packed_start 34
HERE=$PWD
build_traced28 34
cd "$O"
for b in mma wmma; do
  for n in 3712 3968 4096 4352 4608; do
    ( time SCHED_OUT=sched_${b}_$n.csv timeout 200 "$HERE/build/mp34_$b" check_time 4096,$n,4096 > ${b}_$n.csv 2> ${b}_$n.err ) 2>> log.txt
    mv launches_4096.csv launches_${b}_$n.csv; gzip -f sched_${b}_$n.csv; gpu_state "$O" "${b}_$n"
  done
done
cd "$HERE"
packed_end 34
