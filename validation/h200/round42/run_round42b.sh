#!/bin/bash
# Round 42b on the H200 (issue 12): is it the clock reads' code or their execution that takes WMMA's gain away?
# Round 42's two builds of each API (plain; -DSTEP_CLOCK), both timed with round 28's check_time at 4096^3 (20 spaced
# launches a configuration, each with its clock). In check_time no block records (g_steps stays null), so the
# -DSTEP_CLOCK build runs its clock-read code's branches but never reads the clock or stores: its code, not the reads.
# Order: plain, clock code, plain, clock code, for both APIs. Clocks are never changed.
#   bash validation/h200/round42/run_round42b.sh   -> $OUT/round42b.tar.gz (or ./out42b/)
set -u
. "$(dirname "$0")/../run_common.sh"
packed_start 42b
HERE=$PWD
pipe28_source 42
pipe28_compile 42
for b in wmma mma; do mv "$O/sass_$b.txt.gz" "$O/sass_plain_$b.txt.gz"; mv "$O/ptxas_$b.txt" "$O/ptxas_plain_$b.txt"; done
mv build/mp42_wmma build/mp42p_wmma; mv build/mp42_mma build/mp42p_mma
patch -s build/mma_pipe42.cu steps42.patch || echo "steps patch failed" | tee -a "$O/log.txt"
pipe28_compile 42 -DSTEP_CLOCK
cd "$O"
for rep in 1 2; do
  for b in wmma mma; do
    for v in p ""; do
      t=${b}_${v:-s}_$rep
      ( time timeout 240 "$HERE/build/mp42${v}_$b" check_time 4096,4096,4096 > time_$t.csv 2> time_$t.err ) 2>> log.txt
      mv launches_4096.csv launches_$t.csv; gpu_state "$O" "$t"
    done
  done
done
cd "$HERE"
packed_end 42b
