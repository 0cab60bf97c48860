#!/usr/bin/env bash
# Build and run every H200 measurement; raw outputs go to $OUT/raw and are packed into $OUT/h200_raw.tar.gz.
# Run from the repository root on the device machine:  bash validation/h200/run_all.sh
# (needs nvcc 13 and Nsight Compute's ncu on the PATH; never changes clocks: ncu --clock-control none).
# PARTS (default "occupancy patterns waves sgemm latency") picks which measurements run.
set -u
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/h200_out}
R=$OUT/raw
mkdir -p "$R" build
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 )) s] $*"; }

stamp "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu --format=csv > "$R/nvidia_smi_before.csv" 2>&1
nvidia-smi -q > "$R/nvidia_smi_q.txt" 2>&1
nvcc --version > "$R/nvcc_version.txt" 2>&1
ncu --version > "$R/ncu_version.txt" 2>&1

stamp "build"
for p in occupancy patterns waves sgemm latency; do
  ( nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -o build/$p $p.cu > "$R/ptxas_$p.txt" 2>&1 || echo "BUILD FAILED $p" ) &
done
wait
cat "$R"/ptxas_*.txt | grep -E "error|FAILED" && echo "build errors above"
cuobjdump --dump-sass build/patterns > "$R/sass_patterns.txt" 2>&1
cuobjdump --dump-sass build/sgemm > "$R/sass_sgemm.txt" 2>&1

stamp "device properties"
./build/occupancy props > "$R/device_props.csv" 2>&1

PARTS=${PARTS:-occupancy patterns waves sgemm latency}
has() { [[ " $PARTS " == *" $1 "* ]]; }

NCU_BASE="ncu --clock-control none --csv --page raw"
UNITS="--print-units base"
ncu_run() {  # ncu_run LOGFILE METRICS ARGS... ; retries without --print-units if ncu rejects it
  local log=$1 metrics=$2; shift 2
  $NCU_BASE $UNITS --metrics "$metrics" --log-file "$log" "$@" || {
    echo "ncu failed with --print-units; retrying without"; $NCU_BASE --metrics "$metrics" --log-file "$log" "$@"; }
}

if has occupancy; then
stamp "occupancy: API sweep, hardware residency"
./build/occupancy api > "$R/occupancy_api.csv" 2> "$R/occupancy_api.err"
./build/occupancy hw > "$R/occupancy_hw.csv" 2> "$R/occupancy_hw.err"
cat "$R/occupancy_hw.csv"
fi

if has patterns; then
stamp "ncu: shared-memory wavefronts and global sectors per warp instruction"
PM=smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum
PM=$PM,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
PM=$PM,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
PM=$PM,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_global_st.sum
PM=$PM,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
PM=$PM,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
ncu_run "$R/ncu_patterns.csv" "$PM" ./build/patterns patterns.txt > "$R/patterns_launches.csv" 2> "$R/patterns.err"
grep -c '"' "$R/ncu_patterns.csv"
fi

if has waves; then
stamp "waves: time against grid size (sleep and FMA kernels)"
./build/waves > "$R/waves_raw.csv" 2> "$R/waves.err"
wc -l "$R/waves_raw.csv"
fi

if has sgemm; then
stamp "sgemm: timing and correctness"
SIZES=1024,2048,3072,4096,6144,8192
./build/sgemm time $SIZES > "$R/sgemm_time.csv" 2> "$R/sgemm_time.err"
cat "$R/sgemm_time.csv"

stamp "sgemm: ncu DRAM bytes and L2 hit rate"
SM=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum
SM2=$SM,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum
SM2=$SM2,l1tex__t_sector_hit_rate.pct,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,sm__cycles_elapsed.avg.per_second
SM2=$SM2,launch__registers_per_thread,launch__occupancy_limit_warps,launch__occupancy_limit_registers
SM2=$SM2,launch__occupancy_limit_shared_mem,launch__waves_per_multiprocessor
ncu_run "$R/ncu_sgemm.csv" "$SM2" -k sgemm_tiled ./build/sgemm ncu $SIZES > "$R/sgemm_ncu_launches.csv" 2> "$R/sgemm_ncu.err" || {
  echo "full metric list failed; minimal list"; ncu_run "$R/ncu_sgemm.csv" "$SM" -k sgemm_tiled ./build/sgemm ncu $SIZES > "$R/sgemm_ncu_launches.csv" 2> "$R/sgemm_ncu.err"; }
grep -c '"' "$R/ncu_sgemm.csv"
fi

if has latency; then
stamp "latency: pointer chase"
./build/latency > "$R/latency_raw.csv" 2> "$R/latency.err"
cat "$R/latency_raw.csv"
fi

nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu --format=csv > "$R/nvidia_smi_after.csv" 2>&1
stamp "pack"
tar -czf "$OUT/h200_raw.tar.gz" -C "$OUT" raw && rm -rf "$R"
ls -la "$OUT"
stamp "done"
