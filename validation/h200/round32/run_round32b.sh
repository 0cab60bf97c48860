#!/bin/bash
# Round 32b on the H200 (issue 12): is the mma.sync kernel's shortfall at N = 2048 (round 32: 16-24 % below the model
# at S >= 2, where the WMMA build meets it) the kernel's, or the order of the runs (round 32 timed mma.sync first,
# after the GPU idled)? Both builds of round 32 at 2048, alternated and WMMA first, twice, then once each at 4096.
# No block traces (SCHED_OUT unset).
#   bash validation/h200/round32/run_round32b.sh   -> $OUT/round32b.tar.gz (or ./out32b/)
set -u
. "$(dirname "$0")/../run_common.sh"
packed_start 32b
HERE=$PWD
build_traced28 32
cd "$O"
k=0
for spec in "wmma 2048" "mma 2048" "wmma 2048" "mma 2048" "mma 4096" "wmma 4096"; do
  set -- $spec
  k=$((k + 1))
  ( time timeout 200 "$HERE/build/mp32_$1" check_time $2,$2,$2 > run${k}_$1_$2.csv 2> run${k}_$1_$2.err ) 2>> log.txt
  mv launches_$2.csv launches_run${k}_$1_$2.csv; gpu_state "$O" "run${k}_$1_$2"
done
cd "$HERE"
packed_end 32b
