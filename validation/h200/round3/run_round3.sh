#!/usr/bin/env bash
# Round 3 of the H200 measurements (issues 11 and 12). Run from the repository root on the device machine:
#   bash validation/h200/round3/run_round3.sh
#   PARTS="mma_ncu cublas" bash validation/h200/round3/run_round3.sh     # only some parts (a re-run)
# Writes $OUT/round3_raw.tar.gz (small CSVs and logs) and $OUT/round3_bulk.tar.gz (block traces, SASS, ncu pages,
# profiler trace). Never changes clocks: ncu always runs with --clock-control none. Each part is independent,
# bounded by `timeout`, and logs its errors; a part is skipped once the run nears BUDGET_S seconds.
set -u
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/h200_round3}
R=$OUT/raw
BK=$OUT/bulk
mkdir -p "$R" "$BK" build
T0=$(date +%s)
BUDGET_S=${BUDGET_S:-500}
stamp() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
PARTS=${PARTS:-order_time order_ncu order_ncu2 order_trace waves_rate waves mma_check latency cpasync cublas mma_sustain order_ncu order_ncu_extra mma_ncu}
has() { [[ " $PARTS " == *" $1 "* ]]; }
left() { echo $(( BUDGET_S - ($(date +%s) - T0) )); }
# run_part NAME MAX_S CMD...: skip if too little time is left, else run under timeout (capped by what is left)
run_part() {
  local name=$1 max=$2; shift 2
  has "$name" || return 0
  local l; l=$(left)
  if (( l < 20 )); then stamp "SKIP $name (budget)"; echo "$name" >> "$R/skipped.txt"; return 0; fi
  (( max > l )) && max=$l
  stamp "part $name (limit ${max}s)"
  # own session, so the watchdog can end the part's whole process group (ncu and its children too)
  setsid bash -c "$*" &
  local pid=$!
  ( sleep "$max"; kill -TERM -- -"$pid" 2>/dev/null; sleep 3; kill -KILL -- -"$pid" 2>/dev/null ) &
  local wd=$!
  wait "$pid"; local rc=$?
  kill "$wd" 2>/dev/null
  if (( rc != 0 )); then echo "PART $name FAILED rc=$rc"; echo "$name rc=$rc" >> "$R/failed.txt"; fi
  return 0
}
export R BK

stamp "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,power.draw,temperature.gpu --format=csv > "$R/nvidia_smi_before.csv" 2>&1
nvidia-smi -q > "$BK/nvidia_smi_q.txt" 2>&1
nvcc --version > "$R/nvcc_version.txt" 2>&1
ncu --version > "$R/ncu_version.txt" 2>&1
python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))' > "$R/torch_version.txt" 2>&1
# driver-side clock samples during the whole run (every 100 ms)
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 100 > "$R/smi_samples.csv" 2>&1 &
SMI_PID=$!
date -u +%FT%T.%N > "$R/start_time.txt"

stamp "build"
BPIDS=""
for p in order waves3 mma_pipe; do
  ( nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -o build/$p $p.cu > "$R/ptxas_$p.txt" 2>&1 || echo "BUILD FAILED $p" ) &
  BPIDS="$BPIDS $!"
done
( nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -I.. -o build/latency ../latency.cu > "$R/ptxas_latency.txt" 2>&1 || echo "BUILD FAILED latency" ) &
BPIDS="$BPIDS $!"
wait $BPIDS   # only the builds: a bare `wait` would also wait for the nvidia-smi sampler
grep -hE "error|FAILED" "$R"/ptxas_*.txt && echo "build errors above"
for p in order waves3 mma_pipe; do cuobjdump --dump-sass build/$p > "$BK/sass_$p.txt" 2>&1; done
{ echo "binary,instruction,count"
  for p in order waves3 mma_pipe; do
    for ins in HMMA LDGSTS LDSM LDGDEPBAR DEPBAR FFMA LDG.E LDS BAR.SYNC STG; do
      echo "$p,$ins,$(grep -c "$ins" "$BK/sass_$p.txt")"; done; done; } > "$R/sass_counts.csv"
cat "$R/sass_counts.csv" | tr '\n' ' '; echo

NCU="ncu --clock-control none --csv --page raw --print-units base"

run_part order_time 150 './build/order time 2048,3072,4096,6144 > $R/order_time.csv 2> $R/order_time.err; cat $R/order_time.csv'
OM=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum
OM=$OM,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum
OM=$OM,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,lts__t_sectors.sum,lts__t_sectors_lookup_hit.sum,lts__t_sectors_lookup_miss.sum
OM=$OM,l1tex__t_sector_hit_rate.pct,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
OM=$OM,sm__cycles_elapsed.avg.per_second,launch__registers_per_thread,launch__waves_per_multiprocessor
export OM NCU
run_part order_ncu 150 '$NCU --metrics $OM --log-file $R/ncu_order.csv -k regex:"naive16|tiled32" ./build/order ncu 2048,3072,4096,6144 > $R/order_ncu_launches.csv 2> $R/order_ncu.err || { echo retry minimal; $NCU --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum --log-file $R/ncu_order.csv -k regex:"naive16|tiled32" ./build/order ncu 2048,3072,4096,6144 > $R/order_ncu_launches.csv 2>> $R/order_ncu.err; }; grep -c naive16 $R/ncu_order.csv'
# run 3: the same kernels again (run-to-run spread) at 2048..8192 with the L2-fabric (cross-partition) sectors and
# the min/max over L2 slices of the sector counters.
FM=$OM,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_ltcfabric_lookup_hit.sum,lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum
FM=$FM,lts__t_sectors.max,lts__t_sectors.min,lts__t_sectors.avg,lts__t_sectors_lookup_miss.max,lts__t_sectors_lookup_miss.min,dram__bytes_read.max,dram__bytes_read.min
export FM
run_part order_ncu2 200 '$NCU --metrics $FM --log-file $R/ncu_order2.csv -k regex:"naive16|tiled32" ./build/order ncu 2048,3072,4096,5120,6144,8192 > $R/order_ncu2_launches.csv 2> $R/order_ncu2.err || { echo retry without fabric; $NCU --metrics $OM --log-file $R/ncu_order2.csv -k regex:"naive16|tiled32" ./build/order ncu 2048,3072,4096,5120,6144,8192 > $R/order_ncu2_launches.csv 2>> $R/order_ncu2.err; }; grep -c naive16 $R/ncu_order2.csv'
run_part order_trace 60 './build/order trace 2048 > $BK/order_trace_2048.csv 2> $R/order_trace.err; ./build/order trace 4096 > $BK/order_trace_4096.csv 2>> $R/order_trace.err; wc -l $BK/order_trace_*.csv'
run_part waves_rate 30 './build/waves3 rate > $R/waves_rate.csv 2> $R/waves_rate.err; cat $R/waves_rate.csv | head -12'
run_part waves 90 './build/waves3 waves > $R/waves3.csv 2> $R/waves3.err; wc -l $R/waves3.csv'
run_part mma_check 90 './build/mma_pipe check_time 4096,4096,4096 > $R/mma_4096.csv 2> $R/mma_4096.err; cat $R/mma_4096.csv; ./build/mma_pipe check_time 8192,8192,8192 > $R/mma_8192.csv 2> $R/mma_8192.err; cat $R/mma_8192.csv'
run_part latency 60 './build/latency > $R/latency_raw.csv 2> $R/latency.err; cat $R/latency_raw.csv'
run_part cpasync 40 './build/mma_pipe cpasync > $R/cpasync.csv 2> $R/cpasync.err; cat $R/cpasync.csv'
run_part cublas 120 'cd $R && SUSTAIN_S=12 PYTHONUNBUFFERED=1 python3 '"$PWD"'/cublas_sweep.py $R > $R/cublas_log.txt 2>&1; tail -5 $R/cublas_log.txt; mv $R/cublas_trace.json $BK/ 2>/dev/null'
run_part mma_sustain 20 './build/mma_pipe sustain 8192,8192,8192 10 > $R/mma_sustain.csv 2> $R/mma_sustain.err; tail -3 $R/mma_sustain.csv'

# per-partition / per-slice: list what this ncu has, then ask for the L2 fabric metrics that exist and the
# min/max/avg over L2 slices (rollups across unit instances) of the sector counters.
run_part mma_ncu 150 '$NCU --section WarpStateStats --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats --section MemoryWorkloadAnalysis --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio --log-file $R/ncu_mma.csv -k regex:mma_gemm ./build/mma_pipe ncu 4096,4096,4096 > $R/mma_ncu_launches.csv 2> $R/mma_ncu.err || { echo retry sections only; $NCU --section WarpStateStats --section SpeedOfLight --section Occupancy --log-file $R/ncu_mma.csv -k regex:mma_gemm ./build/mma_pipe ncu 4096,4096,4096 > $R/mma_ncu_launches.csv 2>> $R/mma_ncu.err; }; grep -c mma_gemm $R/ncu_mma.csv'
run_part order_ncu_extra 120 'ncu --query-metrics --csv > $BK/ncu_query_metrics.csv 2>&1; grep -oE "\"?lts__[a-z_]*(fabric|ltcfabric)[a-z_]*" $BK/ncu_query_metrics.csv | tr -d "\"" | sort -u > $R/ncu_fabric_metrics.txt; cat $R/ncu_fabric_metrics.txt; XM=lts__t_sectors.max,lts__t_sectors.min,lts__t_sectors.avg,lts__t_sectors_srcunit_tex_op_read.max,lts__t_sectors_srcunit_tex_op_read.min,lts__t_sectors_lookup_miss.max,lts__t_sectors_lookup_miss.min,dram__bytes_read.max,dram__bytes_read.min,dram__bytes_read.avg; for m in $(head -6 $R/ncu_fabric_metrics.txt); do XM=$XM,$m.sum; done; echo $XM; $NCU --metrics $XM --log-file $R/ncu_order_extra.csv -k regex:"naive16|tiled32" ./build/order ncu 2048,4096 > /dev/null 2> $R/order_ncu_extra.err || { echo extra failed, rollups only; $NCU --metrics lts__t_sectors.max,lts__t_sectors.min,lts__t_sectors.avg,dram__bytes_read.max,dram__bytes_read.min --log-file $R/ncu_order_extra.csv -k regex:"naive16|tiled32" ./build/order ncu 2048,4096 > /dev/null 2>> $R/order_ncu_extra.err; }; wc -l $R/ncu_order_extra.csv'

kill $SMI_PID 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$R/nvidia_smi_after.csv" 2>&1
nvidia-smi -q -d PERFORMANCE,CLOCK,POWER > "$R/nvidia_smi_perf_after.txt" 2>&1
stamp "pack"
ls -la "$R" "$BK" > "$R/listing.txt"
tar -czf "$OUT/round3_raw.tar.gz" -C "$OUT" raw
tar -czf "$OUT/round3_bulk.tar.gz" -C "$OUT" bulk
rm -rf "$R" "$BK"
ls -la "$OUT"
stamp "done"
