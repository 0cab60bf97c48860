#!/usr/bin/env bash
# Round 16 on the H200 (issue 11): round 15's map of which fractional numbers of block columns a wave drift, tested at other sizes.
# The naive kernel in column order (original A and B, 8 blocks per SM, ../round12/drift12.cu) at N = 8384, 8576,
# 8896, 9392 (a wave holds 2.02, 1.97, 1.90, 1.80 block columns), two launches each; then ncu's DRAM bytes of one
# more launch of each (--clock-control none).
# Writes $OUT/traces16.tar.gz (one pid,smid,start_ns,end_ns CSV per launch), $OUT/launches16.txt, $OUT/ncu16.tar.gz,
# $OUT/sass16.txt, $OUT/meta16.txt.
set -uo pipefail
OUT=${OUT:-out16}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")"
{ date -u; nvcc --version | tail -2; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version,temperature.gpu,power.draw --format=csv; } > "$OUT/meta16.txt"
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/drift16 ../round12/drift12.cu
cuobjdump -sass /tmp/drift16 | grep -E "Function|LDG" > "$OUT/sass16.txt" || true
LAUNCHES="$OUT/launches16.txt"; : > "$LAUNCHES"
mkdir -p /tmp/tr16 /tmp/ncu16 && rm -f /tmp/tr16/* /tmp/ncu16/*
SIZES="8384 8576 8896 9392"
for n in $SIZES; do for tag in "" _2; do
  timeout 120 /tmp/drift16 $n column 0 0 8 -1 > "/tmp/tr16/trace_${n}_column${tag}.csv" 2>> "$LAUNCHES" || echo "failed: $n$tag" >> "$LAUNCHES"
done; done
(cd /tmp/tr16 && tar -czf "$OUT/traces16.tar.gz" trace_*.csv)
cat "$LAUNCHES"
for n in $SIZES; do
  timeout 60 ncu --clock-control none --csv --page raw --print-units base \
    --metrics dram__bytes_read.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second -k regex:naive16w \
    --log-file /tmp/ncu16/ncu16_${n}.csv /tmp/drift16 $n column 0 0 8 -1 > /dev/null 2>> /tmp/ncu16/stderr.txt
done
(cd /tmp/ncu16 && tar -czf "$OUT/ncu16.tar.gz" *)
ls /tmp/ncu16
{ date -u; nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv; } >> "$OUT/meta16.txt"
ls -la "$OUT"
