#!/bin/bash
# Round 40b on the H200 (issue 12): does S = 1's slow launch end (round 34: 11-12 % over its pace at N = 3968 and
# 4096, 4-6 % at 3712, 4352, 4608, M = K = 4096) follow the grid's width (N / 64 tiles) or its count? Round 34's
# traced binaries (round 28's mma.sync and WMMA builds with round 30's clk30.patch: every block's SM, start and end for
# the 11th of each configuration's 20 timed launches), K = 4096:
#   M = 4096, N = 3840 3904 3968 4032 4096 4160 4224  (the band around round 34's slow N, 3968 and 4096 repeated)
#   N = 4096, M = 3712 4352 4608                      (round 34's fast counts, transposed: 64 tiles wide)
# Nothing else changes; clocks are never changed.
#   bash validation/h200/round40/run_round40b.sh   -> $OUT/round40b.tar.gz (or ./out40b/)
set -u
. "$(dirname "$0")/../run_common.sh"
packed_start 40b
HERE=$PWD
build_traced28 40b
cd "$O"
for b in mma wmma; do
  for mn in 4096,3840 4096,3904 4096,3968 4096,4032 4096,4096 4096,4160 4096,4224 3712,4096 4352,4096 4608,4096; do
    m=${mn%,*}; n=${mn#*,}; t=m${m}n${n}
    ( time SCHED_OUT=sched_${b}_$t.csv timeout 200 "$HERE/build/mp40b_$b" check_time $m,$n,4096 > ${b}_$t.csv 2> ${b}_$t.err ) 2>> log.txt
    mv launches_$m.csv launches_${b}_$t.csv; gzip -f sched_${b}_$t.csv; gpu_state "$O" "${b}_$t"
  done
done
cd "$HERE"
packed_end 40b
