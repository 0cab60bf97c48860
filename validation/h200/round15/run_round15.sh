#!/usr/bin/env bash
# Round 15 on the H200 (issue 11): do block columns drift apart when a wave holds *almost* a whole number of them?
# The naive kernel in column order (original A and B, 8 blocks per SM, ../round12/drift12.cu) at N = 5600, 5696,
# 5760, 5888 (a wave holds 3.02, 2.97, 2.93, 2.87 block columns: each wave the slot groups shift by 6, 12, 24, 48
# slots, 2-13 % of a column), the controls 5632 (3 exactly) and 6144 (2.75, a 25 % shift), two launches each; then
# ncu's DRAM bytes of one more launch of each (--clock-control none).
# Writes $OUT/traces15.tar.gz (one pid,smid,start_ns,end_ns CSV per launch), $OUT/launches15.txt, $OUT/ncu15.tar.gz,
# $OUT/sass15.txt, $OUT/meta15.txt.
set -uo pipefail
OUT=${OUT:-out15}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")"
{ date -u; nvcc --version | tail -2; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version,temperature.gpu,power.draw --format=csv; } > "$OUT/meta15.txt"
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/drift15 ../round12/drift12.cu
cuobjdump -sass /tmp/drift15 | grep -E "Function|LDG" > "$OUT/sass15.txt" || true
LAUNCHES="$OUT/launches15.txt"; : > "$LAUNCHES"
mkdir -p /tmp/tr15 /tmp/ncu15 && rm -f /tmp/tr15/* /tmp/ncu15/*
SIZES="5600 5696 5760 5888 5632 6144"
for n in $SIZES; do for tag in "" _2; do
  timeout 120 /tmp/drift15 $n column 0 0 8 -1 > "/tmp/tr15/trace_${n}_column${tag}.csv" 2>> "$LAUNCHES" || echo "failed: $n$tag" >> "$LAUNCHES"
done; done
(cd /tmp/tr15 && tar -czf "$OUT/traces15.tar.gz" trace_*.csv)
cat "$LAUNCHES"
for n in $SIZES; do
  timeout 60 ncu --clock-control none --csv --page raw --print-units base \
    --metrics dram__bytes_read.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second -k regex:naive16w \
    --log-file /tmp/ncu15/ncu15_${n}.csv /tmp/drift15 $n column 0 0 8 -1 > /dev/null 2>> /tmp/ncu15/stderr.txt
done
(cd /tmp/ncu15 && tar -czf "$OUT/ncu15.tar.gz" *)
ls /tmp/ncu15
{ date -u; nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv; } >> "$OUT/meta15.txt"
ls -la "$OUT"
