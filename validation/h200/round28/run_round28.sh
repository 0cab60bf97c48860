#!/bin/bash
# Round 28 on the H200 (issue 12): the WMMA variant of the S sweep. Builds round 3's mma_pipe.cu + round 4's
# mma_pipe4.patch + wmma28.patch twice: with -DWMMA (the compute phase and epilogue through nvcuda::wmma) and without
# (round 4's ldmatrix + mma.sync kernels, built the same way here, measured beside them in the same call).
# Two parts, run as two calls so that the predictions are committed between them:
#   bash validation/h200/round28/run_round28.sh profile  -> SASS and ncu per-instruction executed counts at 4096^3
#                                                          (the model's inputs; no timing)
#   bash validation/h200/round28/run_round28.sh time     -> the S sweep timed (4096^3 and 8192^3, every launch with its
#                                                          own in-kernel clock) and ncu stall reasons at 4096^3
# Output: $OUT/round28_<part>.tar.gz (or ./out28/). Clocks are never changed (ncu --clock-control none).
set -u
PART=${1:?profile or time}
HERE=$(cd "$(dirname "$0")" && pwd)
D=${OUT:-$PWD/out28}; mkdir -p "$D"
O=$(mktemp -d)/raw28_$PART; mkdir -p "$O"
cd "$HERE"
. ../run_common.sh
run_start "$O"
ncu --version > "$O/ncu_version.txt" 2>&1
cp ../round3/mma_pipe.cu build/mma_pipe28.cu && patch -s build/mma_pipe28.cu ../round4/mma_pipe4.patch \
  && patch -s build/mma_pipe28.cu wmma28.patch || echo "patch failed" | tee -a "$O/log.txt"
F="-O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -I../round3"
nvcc $F -DWMMA -o build/mp28_wmma build/mma_pipe28.cu > "$O/ptxas_wmma.txt" 2>&1 &
nvcc $F -o build/mp28_mma build/mma_pipe28.cu > "$O/ptxas_mma.txt" 2>&1 &
wait
ls -la build >> "$O/log.txt"
for b in wmma mma; do cuobjdump -sass build/mp28_$b > "$O/sass_$b.txt" 2>&1; gzip -f "$O/sass_$b.txt"; done

if [ "$PART" = profile ]; then
  # per-instruction executed counts of all 24 WMMA kernels (12 with copies, 12 copy-less twins) at 4096^3
  ( time timeout 300 ncu --clock-control none --section SourceCounters --metrics inst_executed -k regex:mma_gemm -f \
      -o "$O/ncu_wmma" build/mp28_wmma ncu 4096,4096,4096 > "$O/ncu_wmma_launches.txt" 2> "$O/ncu_wmma.err" ) 2>> "$O/log.txt"
  ncu -i "$O/ncu_wmma.ncu-rep" --page source --csv --print-source sass > "$O/ncu_wmma_source.csv" 2> "$O/ncu_wmma_source.err"
  ncu -i "$O/ncu_wmma.ncu-rep" --csv --page raw --print-units base --metrics inst_executed > "$O/ncu_wmma_raw.csv" 2>> "$O/log.txt"
  gzip -f "$O/ncu_wmma_source.csv" "$O"/*.ncu-rep
else
  cd "$O"
  for b in wmma mma; do
    for n in 4096 8192; do
      ( time timeout 200 "$HERE/build/mp28_$b" check_time $n,$n,$n > ${b}_$n.csv 2> ${b}_$n.err ) 2>> log.txt
      mv launches_$n.csv launches_${b}_$n.csv; gpu_state "$O" "${b}_$n"
    done
  done
  cd "$HERE"
  WS=smsp__average_warp_latency_per_inst_issued.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,inst_executed,sm__warps_active.avg.pct_of_peak_sustained_active
  for s in long_scoreboard short_scoreboard wait barrier mio_throttle lg_throttle math_pipe_throttle not_selected selected dispatch_stall branch_resolving no_instruction; do
    WS=$WS,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio; done
  for b in wmma mma; do
    ( time timeout 200 ncu --clock-control none --csv --page raw --print-units base --metrics $WS -k regex:mma_gemm \
        --log-file "$O/ncu_stalls_$b.csv" build/mp28_$b ncu 4096,4096,4096 > "$O/ncu_stalls_${b}_launches.txt" 2> "$O/ncu_stalls_$b.err" ) 2>> "$O/log.txt"
  done
fi
run_end "$O"
cat "$O/log.txt"; ls -la "$O"
tar czf "$D/round28_$PART.tar.gz" -C "$(dirname "$O")" "$(basename "$O")"
