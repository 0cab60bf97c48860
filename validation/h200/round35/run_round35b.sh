#!/bin/bash
# Round 35b on the H200 (issue 12): on one device, in one call, the GPC map (gpc35 map) and round 34's traced 64x64
# GEMMs at 4096^3 (mma.sync and WMMA, every block's SM, start and end for the 11th launch of each configuration), so
# that the SMs the traces find fast can be set against the GPCs. Clocks never changed.
#   OUT=out bash validation/h200/round35/run_round35b.sh   -> $OUT/round35b.tar.gz
set -u
. "$(dirname "$0")/../run_common.sh"
packed_start 35b
HERE=$PWD
build_traced28 35b
nvcc -O3 -arch=sm_90 -std=c++17 -o build/gpc35 gpc35.cu > "$O/ptxas_gpc35.txt" 2>&1 || echo "gpc35 build failed" | tee -a "$O/log.txt"
cd "$O"
"$HERE/build/gpc35" > gpc35.csv 2> gpc35.err
for b in mma wmma; do
  ( time SCHED_OUT=sched_${b}_4096.csv timeout 200 "$HERE/build/mp35b_$b" check_time 4096,4096,4096 > ${b}_4096.csv 2> ${b}_4096.err ) 2>> log.txt
  mv launches_4096.csv launches_${b}_4096.csv; gzip -f sched_${b}_4096.csv; gpu_state "$O" "${b}_4096"
done
"$HERE/build/gpc35" > gpc35_after.csv 2>> gpc35.err
cd "$HERE"
packed_end 35b
