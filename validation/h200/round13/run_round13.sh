#!/usr/bin/env bash
# Round 13 (issue 12): the SM clock inside tensor-core kernels. Run from the repository root on the device machine:
#   bash validation/h200/round13/run_round13.sh
# Writes $OUT/raw13.tar.gz (CSVs, ncu pages, logs; at most 8 files come back from a device call). Never changes clocks: ncu runs with --clock-control none.
#   mma:    round 3's mma_pipe check_time (its kernels read their own clock: clock64 / %globaltimer per block)
#           under ncu -- ncu's sm__cycles_elapsed.avg.per_second against the kernel's own reading, same launches
#   cublas: clock13.py sweep under ncu (nvjet fp16/bf16 kernels): duration and SM clock of every launch
#   probe:  clock13.py probe without a profiler: a co-resident probe's clock during each product
set -u
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/h200_round13}
R=/tmp/raw13_work/raw13
mkdir -p "$R" build
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
PARTS=${PARTS:-mma cublas probe}
has() { [[ " $PARTS " == *" $1 "* ]]; }
NCU="ncu --clock-control none --csv --page raw --print-units base"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,power.draw,temperature.gpu --format=csv > "$R/nvidia_smi_before.csv" 2>&1
ncu --version > "$R/ncu_version.txt" 2>&1
python3 -c 'import torch, cupy; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0), cupy.__version__)' > "$R/versions.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -lms 100 > "$R/smi_samples.csv" 2>&1 &
SMI_PID=$!

stamp build
nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -I.. -o build/mma_pipe ../round3/mma_pipe.cu > "$R/ptxas_mma_pipe.txt" 2>&1 || echo "BUILD FAILED mma_pipe"
cuobjdump --dump-sass build/mma_pipe > "$R/sass_mma_pipe.txt" 2>&1
echo "HMMA $(grep -c HMMA $R/sass_mma_pipe.txt) LDGSTS $(grep -c LDGSTS $R/sass_mma_pipe.txt) LDSM $(grep -c LDSM $R/sass_mma_pipe.txt)"

CM=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.avg,sm__cycles_elapsed.max,sm__cycles_active.avg
if has mma; then
  stamp "mma (4096 and 8192, every launch profiled)"
  for n in 4096 8192; do
    timeout 90 $NCU --metrics $CM -k regex:mma_gemm --log-file $R/ncu13_mma_$n.csv ./build/mma_pipe check_time $n,$n,$n > $R/mma13_$n.csv 2> $R/mma13_$n.err
    echo "rc $? $(grep -c mma_gemm $R/ncu13_mma_$n.csv) profiled"; cat $R/mma13_$n.csv | cut -d, -f1,6,13-17
  done
fi
if has cublas; then
  stamp "cublas sweep under ncu"
  ncu --query-metrics --csv > $R/ncu_query_metrics.csv 2>&1
  TM=""
  for m in sm__pipe_tensor_op_gmma_cycles_active sm__inst_executed_pipe_tensor_op_gmma sm__ops_path_tensor_src_fp16_dst_fp32 sm__ops_path_tensor_src_bf16_dst_fp32; do
    grep -q "\"$m\"" $R/ncu_query_metrics.csv && TM=$TM,$m.sum
  done
  echo "tensor metrics: $TM"
  timeout 240 $NCU --metrics $CM$TM -k regex:"nvjet_sm90_(hsh|tst)" --log-file $R/ncu13_cublas.csv python3 clock13.py sweep $R > $R/cublas13_log.txt 2>&1
  rc=$?
  echo "rc $rc $(grep -c nvjet $R/ncu13_cublas.csv) profiled"; tail -3 $R/cublas13_log.txt
  if (( rc != 0 )) && [ -n "$TM" ]; then
    stamp "retry without tensor metrics"
    timeout 120 $NCU --metrics $CM -k regex:"nvjet_sm90_(hsh|tst)" --log-file $R/ncu13_cublas.csv python3 clock13.py sweep $R > $R/cublas13_log.txt 2>&1
    echo "rc $? $(grep -c nvjet $R/ncu13_cublas.csv) profiled"
  fi
fi
if has probe; then
  stamp probe
  timeout 130 python3 clock13.py probe $R > $R/probe13_log.txt 2>&1; echo "rc $?"; tail -8 $R/probe13_log.txt
fi
kill $SMI_PID 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$R/nvidia_smi_after.csv" 2>&1
gzip -f $R/sass_mma_pipe.txt $R/ncu_query_metrics.csv $R/smi_samples.csv 2>/dev/null
ls -la $R
tar czf $OUT/raw13.tar.gz -C /tmp/raw13_work raw13
stamp done
