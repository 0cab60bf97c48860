#!/usr/bin/env bash
# Round 17 on the H200 (issue 11): a rule for which fractional numbers of block columns a wave drift, tested on new sizes.
# The naive kernel in column order (original A and B, 8 blocks per SM, ../round12/drift12.cu) at N = 5824, 6016,
# 6400, 8320, 9088, 9984 (a wave holds 2.90, 2.81, 2.64, 2.03, 1.86, 1.69 block columns), one traced launch each
# and ncu's DRAM bytes of another (--clock-control none).
# Writes $OUT/traces17.tar.gz (one pid,smid,start_ns,end_ns CSV per launch), $OUT/launches17.txt, $OUT/ncu17.tar.gz,
# $OUT/sass17.txt, $OUT/meta17.txt.
set -uo pipefail
OUT=${OUT:-out17}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")"
{ date -u; nvcc --version | tail -2; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version,temperature.gpu,power.draw --format=csv; } > "$OUT/meta17.txt"
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/drift17 ../round12/drift12.cu
cuobjdump -sass /tmp/drift17 | grep -E "Function|LDG" > "$OUT/sass17.txt" || true
LAUNCHES="$OUT/launches17.txt"; : > "$LAUNCHES"
mkdir -p /tmp/tr17 /tmp/ncu17 && rm -f /tmp/tr17/* /tmp/ncu17/*
SIZES="5824 6016 6400 8320 9088 9984"
for n in $SIZES; do for tag in ""; do
  timeout 120 /tmp/drift17 $n column 0 0 8 -1 > "/tmp/tr17/trace_${n}_column${tag}.csv" 2>> "$LAUNCHES" || echo "failed: $n$tag" >> "$LAUNCHES"
done; done
(cd /tmp/tr17 && tar -czf "$OUT/traces17.tar.gz" trace_*.csv)
cat "$LAUNCHES"
for n in $SIZES; do
  timeout 60 ncu --clock-control none --csv --page raw --print-units base \
    --metrics dram__bytes_read.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second -k regex:naive16w \
    --log-file /tmp/ncu17/ncu17_${n}.csv /tmp/drift17 $n column 0 0 8 -1 > /dev/null 2>> /tmp/ncu17/stderr.txt
done
(cd /tmp/ncu17 && tar -czf "$OUT/ncu17.tar.gz" *)
ls /tmp/ncu17
{ date -u; nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv; } >> "$OUT/meta17.txt"
ls -la "$OUT"
