#!/bin/bash
# Round 32 on the H200 (issue 12): round 30's traced S sweep (every block's SM, start and end, for the 11th of each
# configuration's 20 timed launches) at N = 2048 and 6144, sizes round 31's schedule rule was not built on, and ncu's
# DRAM bytes of one launch of every variant at both sizes. Builds as round 30 (round 3's mma_pipe.cu + round 4's
# patch + round 28's WMMA patch, round 3's clk.h + round 30's clk30.patch).
#   bash validation/h200/round32/run_round32.sh   -> $OUT/round32.tar.gz (or ./out32/)
# Clocks are never changed (ncu --clock-control none).
set -u
. "$(dirname "$0")/../run_common.sh"
packed_start 32
HERE=$PWD
build_traced28 32
ncu --version > "$O/ncu_version.txt" 2>&1
cd "$O"
traced_sweep 32 2048 6144
for b in mma wmma; do
  for n in 2048 6144; do
    ( time timeout 200 ncu --clock-control none --csv --page raw --print-units base \
        --metrics dram__bytes_read.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second -k regex:mma_gemm \
        --log-file ncu_${b}_$n.csv "$HERE/build/mp32_$b" ncu $n,$n,$n > ncu_${b}_${n}_launches.txt 2> ncu_${b}_$n.err ) 2>> log.txt
  done
done
cd "$HERE"
packed_end 32
