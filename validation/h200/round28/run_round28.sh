#!/bin/bash
# Round 28 on the H200 (issue 12): the WMMA variant of the S sweep. Builds round 3's mma_pipe.cu + round 4's
# mma_pipe4.patch + wmma28.patch twice: with -DWMMA (the compute phase and epilogue through nvcuda::wmma) and without
# (round 4's ldmatrix + mma.sync kernels, built the same way here, measured beside them in the same call).
# Two parts, run as two calls so that the predictions are committed between them:
#   bash validation/h200/round28/run_round28.sh profile  -> SASS and ncu per-instruction executed counts at 4096^3
#                                                          (the model's inputs; no timing)
#   bash validation/h200/round28/run_round28.sh time     -> the S sweep timed (4096^3 and 8192^3, every launch with its
#                                                          own in-kernel clock) and ncu stall reasons at 4096^3
# Output: $OUT/round28_<part>.tar.gz (or ./out28_<part>/). Clocks are never changed (ncu --clock-control none).
set -u
PART=${1:?profile or time}
. "$(dirname "$0")/../run_common.sh"
packed_start "28_$PART"
HERE=$PWD
ncu --version > "$O/ncu_version.txt" 2>&1
build_pipe28 28

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
packed_end "28_$PART"
