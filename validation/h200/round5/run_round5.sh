#!/usr/bin/env bash
# Round 5 on the H200 (issue 11): which L2 partition each SM is near. Writes into $OUT (default ./out5).
set -euo pipefail
OUT=${OUT:-out5}
mkdir -p "$OUT"
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/nvidia_smi.csv"
nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v -o /tmp/partition_probe partition_probe.cu 2> "$OUT/ptxas.txt"
cuobjdump -sass /tmp/partition_probe | grep -E "LDG|CS2R|S2UR|S2R" > "$OUT/sass_loads.txt" || true
/tmp/partition_probe > "$OUT/partition_probe.csv" 2> "$OUT/partition_probe.log" || echo "partition_probe failed"
gzip -f "$OUT/partition_probe.csv"
cat "$OUT/partition_probe.log"
# block-start traces of round 3's order.cu at the two sizes whose row/column bytes differ (tiled 3072, naive 6144)
nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -o /tmp/order ../round3/order.cu
for n in 3072 6144; do timeout 200 /tmp/order trace $n > "$OUT/order_trace_$n.csv" 2> "$OUT/order_trace_$n.err" || echo "trace $n failed"; done
wc -l "$OUT"/order_trace_*.csv
gzip -f "$OUT"/order_trace_*.csv
# round 5b: block-start traces of the grouped order (order.cu with order5.patch: it traces the grouped order only)
if [ -n "${GROUPED:-}" ]; then
  cp ../round3/order.cu /tmp/order5.cu && patch -s /tmp/order5.cu order5.patch   # trace the grouped order only
  nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -I../round3 -o /tmp/order5 /tmp/order5.cu
  for n in 3072 4096 6144; do timeout 200 /tmp/order5 trace $n > "$OUT/order_trace_grouped_$n.csv" 2> "$OUT/order_trace_grouped_$n.err" || echo "grouped trace $n failed"; done
  wc -l "$OUT"/order_trace_grouped_*.csv
  gzip -f "$OUT"/order_trace_grouped_*.csv
fi
