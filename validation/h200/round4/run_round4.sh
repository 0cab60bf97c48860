#!/bin/bash
# Round 4 on the H200 (issue 12): build mma_pipe4.cu (round 3's mma_pipe.cu + mma_pipe4.patch), dump its SASS, run the loaded cp.async latency sweep, the S sweep
# with every launch kept (4096^3 and 8192^3, copy and copy-less twins), and ncu's executed-instruction counts and
# stall reasons of every variant at 4096^3. Never changes clocks (ncu --clock-control none).
# Usage (repository root): bash validation/h200/round4/run_round4.sh   -> $OUT/round4_raw.tar.gz (or ./out4/ without $OUT)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
O=${OUT:-$PWD/out4}; R=$(mktemp -d)/raw; mkdir -p "$R"  # packed into $O/round4_raw.tar.gz at the end
cd "$HERE"
. ../run_common.sh
run_start "$R"
cp ../round3/mma_pipe.cu build/mma_pipe4.cu && patch -s build/mma_pipe4.cu mma_pipe4.patch || echo "patch failed" | tee -a "$R/log.txt"
if nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -I../round3 -o build/mma_pipe4_dev build/mma_pipe4.cu > "$R/ptxas.txt" 2>&1; then B=build/mma_pipe4_dev; else echo "device build failed, using the carried binary" | tee -a "$R/log.txt"; B=build/mma_pipe4; fi
echo "binary $B" >> "$R/log.txt"
cuobjdump -sass "$B" > "$R/sass_mma_pipe4.txt" 2>&1
cd "$R"
( time timeout 150 "$HERE/$B" loaded > loaded.csv 2> loaded.err ) 2>> "$R/log.txt"; tail -2 loaded.csv
for n in 4096 8192; do
  ( time timeout 150 "$HERE/$B" check_time $n,$n,$n > mma_$n.csv 2> mma_$n.err ) 2>> "$R/log.txt"; cat mma_$n.csv
done
gpu_state "$R" mid
( time timeout 200 ncu --clock-control none --csv --page raw --print-units base \
    --metrics inst_executed,gpc__cycles_elapsed.max,gpc__cycles_elapsed.avg.per_second,smsp__average_warp_latency_per_inst_issued.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__m_xbar2l1tex_read_bytes.sum \
    --log-file ncu_mma4.csv -k regex:mma_gemm "$HERE/$B" ncu 4096,4096,4096 > ncu_launches.csv 2> ncu.err ) 2>> "$R/log.txt"
grep -c mma_gemm ncu_mma4.csv
run_end "$R"
ls -la "$R"
tar czf "$O/round4_raw.tar.gz" -C "$(dirname "$R")" raw
