#!/bin/bash
# Round 42 on the H200 (issue 12): where a k-step's time goes in the WMMA kernels, beside the mma.sync kernels on the
# same device. Round 28's source (round 3's mma_pipe.cu + round 4's mma_pipe4.patch + round 28's wmma28.patch:
# run_common.sh's pipe28_source) with round 6's and round 10's clock reads applied on top (steps42.patch: round 6's
# mma_pipe6.patch and round 10's mma_pipe10.patch, as they apply to the WMMA source), built with -DSTEP_CLOCK, with and
# without -DWMMA. Mode stepclock (round 10b's): each copy kernel is checked against the fp32 reference, then one launch
# has thread 0 of each of its first 400 blocks read clock64 four times in each of k-steps 32-55 (S = 1: before its copy
# code, after commit_group, after the wait + barrier, after the MMAs + barrier; S > 1: before the wait, after the
# barrier, after commit_group, after the MMAs). All three tiles, S = 1..4, at 4096^3 and 8192^3, twice (a and b), then
# round 28's timing (check_time, 20 spaced launches per configuration with their clocks) at 4096^3 of the builds
# without the clock reads. Clocks are never changed.
#   bash validation/h200/round42/run_round42.sh   -> $OUT/r42_{wmma,mma,rest}.tar.gz (or ./out42/)
# (It ran writing one archive, round42.tar.gz, over what a device call brings back; the same files were packed again on
# the device into the three archives this script now writes.)
set -u
. "$(dirname "$0")/../run_common.sh"
packed_start 42
HERE=$PWD
pipe28_source 42
pipe28_compile 42
mv build/mma_pipe42.cu build/mma_pipe42_plain.cu
for b in wmma mma; do mv "$O/sass_$b.txt.gz" "$O/sass_plain_$b.txt.gz"; mv "$O/ptxas_$b.txt" "$O/ptxas_plain_$b.txt"; done
cp build/mma_pipe42_plain.cu build/mma_pipe42.cu
patch -s build/mma_pipe42.cu steps42.patch || echo "steps patch failed" | tee -a "$O/log.txt"
cp build/mma_pipe42.cu "$O/"
mv build/mp42_wmma build/mp42p_wmma; mv build/mp42_mma build/mp42p_mma
pipe28_compile 42 -DSTEP_CLOCK
cd "$O"
for rep in a b; do
  for b in wmma mma; do
    for n in 4096 8192; do
      ( time timeout 240 "$HERE/build/mp42_$b" stepclock $n,$n,$n 1234 > steps_${b}_${n}_$rep.csv 2> steps_${b}_${n}_$rep.err ) 2>> log.txt
      gzip -f steps_${b}_${n}_$rep.csv; gpu_state "$O" "steps_${b}_${n}_$rep"
    done
  done
done
for b in wmma mma; do
  ( time timeout 240 "$HERE/build/mp42p_$b" check_time 4096,4096,4096 > time_${b}_4096.csv 2> time_${b}_4096.err ) 2>> log.txt
  mv launches_4096.csv launches_${b}_4096.csv; gpu_state "$O" "time_${b}_4096"
done
cd "$HERE"
run_end "$O"
cat "$O/log.txt"; ls -la "$O"
cd "$(dirname "$O")"
tar czf "$D/r42_wmma.tar.gz" raw42/steps_wmma_*.csv.gz raw42/steps_wmma_*.err
tar czf "$D/r42_mma.tar.gz" raw42/steps_mma_*.csv.gz raw42/steps_mma_*.err
tar czf "$D/r42_rest.tar.gz" --exclude='raw42/steps_*.csv.gz' raw42
