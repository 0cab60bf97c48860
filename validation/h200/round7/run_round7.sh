#!/usr/bin/env bash
# Round 7 on the H200 (issue 11): block-start traces of the naive kernel across sizes and operand layouts.
# Writes $OUT/traces7_sizes.tar.gz and traces7_layout.tar.gz (one CSV per launch), $OUT/launches7.txt (clock and result check per launch),
# $OUT/sass7.txt (the k-loop's loads) and $OUT/nvidia_smi.csv.
set -euo pipefail
OUT=${OUT:-out7}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/nvidia_smi.csv"
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/drift7 drift7.cu
cuobjdump -sass /tmp/drift7 | grep -E "Function|LDG" > "$OUT/sass7.txt" || true
mkdir -p /tmp/tr7
: > "$OUT/launches7.txt"
run() {  # N order ta tb [tag]
  timeout 120 /tmp/drift7 "$1" "$2" "$3" "$4" > "/tmp/tr7/trace_$1_$2_ta$3_tb$4${5:-}.csv" 2>> "$OUT/launches7.txt" \
    || echo "failed: $*" >> "$OUT/launches7.txt"
}
for n in 5120 5632 6144 6656 7168; do run $n row 0 0; run $n column 0 0; done
run 6144 column 1 0      # A column-major: the re-read operand read along its rows
run 6144 row 0 1         # B column-major: the re-read operand read down its columns
run 6144 column 0 0 _2   # a second launch of the original, for launch-to-launch variation
run 6144 column 1 0 _2
(cd /tmp/tr7 && tar -czf "$OUT/traces7_sizes.tar.gz" trace_*_ta0_tb0.csv && tar -czf "$OUT/traces7_layout.tar.gz" trace_6144_*ta1* trace_6144_*tb1* trace_6144_*_2.csv)
ls -la "$OUT"
cat "$OUT/launches7.txt"
