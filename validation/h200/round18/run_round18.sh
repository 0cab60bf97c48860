#!/usr/bin/env bash
# Round 18 on the H200 (issue 11): the hold criterion for drifting block columns (r / d against 0.03), tested on new sizes.
# The naive kernel in column order (original A and B, 8 blocks per SM, ../round12/drift12.cu) at N = 5952, 6080,
# 6272, 10240, 10752 (a wave holds 2.84, 2.78, 2.69, 1.65, 1.57 block columns), one traced launch each and ncu's
# DRAM bytes of another (--clock-control none).
# Writes $OUT/traces18.tar.gz (one pid,smid,start_ns,end_ns CSV per launch), $OUT/launches18.txt, $OUT/ncu18.tar.gz,
# $OUT/sass18.txt, $OUT/meta18.txt.
set -uo pipefail
OUT=${OUT:-out18}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")"
{ date -u; nvcc --version | tail -2; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version,temperature.gpu,power.draw --format=csv; } > "$OUT/meta18.txt"
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/drift18 ../round12/drift12.cu
cuobjdump -sass /tmp/drift18 | grep -E "Function|LDG" > "$OUT/sass18.txt" || true
LAUNCHES="$OUT/launches18.txt"; : > "$LAUNCHES"
mkdir -p /tmp/tr18 /tmp/ncu18 && rm -f /tmp/tr18/* /tmp/ncu18/*
SIZES="5952 6080 6272 10240 10752"
for n in $SIZES; do for tag in ""; do
  timeout 120 /tmp/drift18 $n column 0 0 8 -1 > "/tmp/tr18/trace_${n}_column${tag}.csv" 2>> "$LAUNCHES" || echo "failed: $n$tag" >> "$LAUNCHES"
done; done
(cd /tmp/tr18 && tar -czf "$OUT/traces18.tar.gz" trace_*.csv)
cat "$LAUNCHES"
for n in $SIZES; do
  timeout 60 ncu --clock-control none --csv --page raw --print-units base \
    --metrics dram__bytes_read.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second -k regex:naive16w \
    --log-file /tmp/ncu18/ncu18_${n}.csv /tmp/drift18 $n column 0 0 8 -1 > /dev/null 2>> /tmp/ncu18/stderr.txt
done
(cd /tmp/ncu18 && tar -czf "$OUT/ncu18.tar.gz" *)
ls /tmp/ncu18
{ date -u; nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv; } >> "$OUT/meta18.txt"
ls -la "$OUT"
