#!/bin/bash
# Round 6 on the H200 (issue 12): the copy code's instruction latencies (lat6.cu), each copy kernel's copy phase timed
# inside the kernel (round 3's mma_pipe.cu + round 4's mma_pipe4.patch + mma_pipe6.patch: with the MMAs and without), and per-instruction executed
# counts and stall samples of the copy kernels (ncu SourceCounters) to read their executed path from. SASS of
# everything. Clocks never changed (ncu --clock-control none).
# Usage (repository root): bash validation/h200/round6/run_round6.sh   -> $OUT/round6_raw.tar.gz (or ./out6/)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
D=${OUT:-$PWD/out6}; mkdir -p "$D"
O=$(mktemp -d)/raw; mkdir -p "$O"  # packed into $D/round6_raw.tar.gz at the end (one file comes back)
cd "$HERE"
. ../run_common.sh
run_start "$O"
ncu --version > "$O/ncu_version.txt" 2>&1
cp ../round3/mma_pipe.cu build/mma_pipe6.cu && patch -s build/mma_pipe6.cu ../round4/mma_pipe4.patch \
  && patch -s build/mma_pipe6.cu mma_pipe6.patch || echo "patch failed" >> "$O/log.txt"
F="-O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -I../round3"
nvcc $F -o build/lat6 lat6.cu > "$O/ptxas_lat6.txt" 2>&1 &
nvcc $F -o build/mp6_plain build/mma_pipe6.cu > "$O/ptxas_plain.txt" 2>&1 &
nvcc $F -DCOPY_CLOCK -o build/mp6_clk build/mma_pipe6.cu > "$O/ptxas_clk.txt" 2>&1 &
nvcc $F -DCOPY_CLOCK -DNO_MMA -o build/mp6_nomma build/mma_pipe6.cu > "$O/ptxas_nomma.txt" 2>&1 &
wait
ls -la build >> "$O/log.txt"
for b in lat6 mp6_plain mp6_clk mp6_nomma; do cuobjdump -sass build/$b > "$O/sass_$b.txt" 2>&1; gzip -f "$O/sass_$b.txt"; done
( time timeout 60 build/lat6 > "$O/lat6.csv" 2> "$O/lat6.err" ) 2>> "$O/log.txt"
for b in clk nomma; do
  for p in 128,128,4096 4096,4096,4096; do
    ( time timeout 120 build/mp6_$b copyclock $p > "$O/copyclock_${b}_${p%%,*}.csv" 2> "$O/copyclock_${b}_${p%%,*}.err" ) 2>> "$O/log.txt"
  done
done
gpu_state "$O" mid
# per-instruction executed counts (and stall samples) of the copy kernels: the plain kernels (round 4's SASS) at 4096^3
# with the warp-state metrics of all 24, the two timed builds at 512 x 512 x 4096 (their copy code differs)
WS=smsp__average_warp_latency_per_inst_issued.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,inst_executed
for s in long_scoreboard short_scoreboard wait barrier mio_throttle lg_throttle math_pipe_throttle not_selected selected dispatch_stall branch_resolving no_instruction drain membar sleeping tex_throttle imc_miss misc; do
  WS=$WS,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio; done
( time timeout 200 ncu --clock-control none --section SourceCounters --metrics $WS -k regex:mma_gemm -f -o "$O/ncu_plain" \
    build/mp6_plain ncu 4096,4096,4096 > "$O/ncu_plain_launches.txt" 2> "$O/ncu_plain.err" ) 2>> "$O/log.txt"
for b in clk nomma; do
  ( time timeout 120 ncu --clock-control none --section SourceCounters --kernel-name-base mangled -k regex:Lb1E -f -o "$O/ncu_$b" \
      build/mp6_$b ncu 512,512,4096 > "$O/ncu_${b}_launches.txt" 2> "$O/ncu_$b.err" ) 2>> "$O/log.txt"
done
for b in plain clk nomma; do
  [ -f "$O/ncu_$b.ncu-rep" ] || continue
  ncu -i "$O/ncu_$b.ncu-rep" --page source --csv --print-source sass > "$O/ncu_${b}_source.csv" 2> "$O/ncu_${b}_source.err"
  python3 dump_pc.py "$O/ncu_$b.ncu-rep" > "$O/ncu_${b}_pc.csv" 2> "$O/ncu_${b}_pc.err"
  gzip -f "$O/ncu_${b}_source.csv" "$O/ncu_${b}_pc.csv"
done
ncu -i "$O/ncu_plain.ncu-rep" --csv --page raw --print-units base --metrics $WS > "$O/ncu_plain_raw.csv" 2>> "$O/log.txt"
gzip -f "$O"/*.ncu-rep
run_end "$O"
cat "$O/log.txt"; head -3 "$O"/copyclock_*.csv; ls -la "$O"
tar czf "$D/round6_raw.tar.gz" -C "$(dirname "$O")" raw
