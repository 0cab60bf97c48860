#!/usr/bin/env bash
# Round 7 on the H200 (issue 11): block-start traces of the naive kernel across sizes and operand layouts;
# PART=ncu: round 7b, ncu's DRAM bytes of repeated launches; PART=c: round 7c, traces and ncu at N = 4224, 4608, 8448; PART=d: round 7d, traces with A or B L2-resident.
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
ncu_runs() {  # TAG "N,order ...": ncu's DRAM bytes of each drift7 run (its warm-up and its traced launch), cold L2
  # before each launch, clocks untouched -> $OUT/ncu$TAG.csv (each line prefixed by its run number), $OUT/ncu${TAG}_runs.txt
  local NCU="ncu --clock-control none --csv --page raw --print-units base --metrics dram__bytes_read.sum,gpu__time_duration.sum"
  local i=0 spec
  : > "$OUT/ncu$1_runs.txt"
  for spec in $2; do
    spec=${spec/,/ }
    i=$((i + 1))
    echo "run $i: $spec" >> "$OUT/ncu$1_runs.txt"
    timeout 120 $NCU --log-file "/tmp/ncu$1_$i.csv" /tmp/drift7 $spec 0 0 > /dev/null 2>> "$OUT/ncu$1_runs.txt" || echo "failed: $spec" >> "$OUT/ncu$1_runs.txt"
    sed "s/^/$i,/" "/tmp/ncu$1_$i.csv" >> "$OUT/ncu$1.csv" || true
  done
  cat "$OUT/ncu$1_runs.txt"
}
if [ "${PART:-traces}" = ncu ]; then
  # round 7b: does a column-order launch's byte count vary as its lockstep onset does? SPECS="N,order ..." chooses
  # the runs; the second call: SPECS="5632,row 5632,row 6656,row 6656,row 5120,column 5120,column 7168,column
  # 7168,column 7168,row" (its files were renamed ncu7b*).
  ncu_runs 7 "${SPECS:-6144,column 6144,column 6144,column 6144,column 6144,row 6144,row 5632,column 5632,column 6656,column 6656,column}"
  exit 0
fi
mkdir -p /tmp/tr7
LAUNCHES="$OUT/launches7.txt"
run() {  # N order ta tb [tag]
  timeout 120 /tmp/drift7 "$1" "$2" "$3" "$4" > "/tmp/tr7/trace_$1_$2_ta$3_tb$4${5:-}.csv" 2>> "$LAUNCHES" \
    || echo "failed: $*" >> "$LAUNCHES"
}
if [ "${PART:-traces}" = c ]; then
  # round 7c: a prediction test. In drifted column-order launches the groups are whole block columns (the blocks
  # that share B); the wave then holds 1056 / (N/16) of them, exactly 3 at N = 5632, the size that drifted most.
  # N = 8448 (exactly 2 block columns a wave) and 4224 (exactly 4) test that; 4608 (3.67) is a control.
  # Traces (launches7c.txt, traces7c.tar.gz) and ncu's DRAM bytes of repeated launches (ncu7c.csv, ncu7c_runs.txt).
  LAUNCHES="$OUT/launches7c.txt"; : > "$LAUNCHES"
  run 8448 column 0 0; run 8448 column 0 0 _2; run 8448 row 0 0
  run 4224 column 0 0; run 4224 column 0 0 _2; run 4224 row 0 0
  run 4608 column 0 0
  (cd /tmp/tr7 && tar -czf "$OUT/traces7c.tar.gz" trace_*.csv)
  cat "$LAUNCHES"
  ncu_runs 7c "8448,column 8448,column 8448,row 4224,column 4224,column 4224,row 4608,column 4608,row"
  ls -la "$OUT"
  exit 0
fi
if [ "${PART:-traces}" = d ]; then
  # round 7d: what drives the drift. Column order with A's rows wrapped every 64 (ta = 2: A L2-resident, no sharing
  # of A between blocks left to lose) and with B's rows wrapped (tb = 2: the per-k-step stream L2-resident); row
  # order with B's rows wrapped (the operand its trailing blocks catch up on). Traces only (launches7d.txt,
  # traces7d.tar.gz); sass7d.txt holds the new instantiations' loads.
  cuobjdump -sass /tmp/drift7 | grep -E "Function|LDG" > "$OUT/sass7d.txt" || true
  LAUNCHES="$OUT/launches7d.txt"; : > "$LAUNCHES"
  rm -f /tmp/tr7/trace_*.csv
  for n in 5632 8448; do run $n column 2 0; run $n column 0 2; run $n row 0 2; done
  run 5632 column 0 0 _2; run 8448 column 0 0 _3   # one more launch of each original (7 and 7c hold the others)
  (cd /tmp/tr7 && tar -czf "$OUT/traces7d.tar.gz" trace_*.csv)
  cat "$LAUNCHES"
  ls -la "$OUT"
  exit 0
fi
: > "$LAUNCHES"
for n in 5120 5632 6144 6656 7168; do run $n row 0 0; run $n column 0 0; done
run 6144 column 1 0      # A column-major: the re-read operand read along its rows
run 6144 row 0 1         # B column-major: the re-read operand read down its columns
run 6144 column 0 0 _2   # a second launch of the original, for launch-to-launch variation
run 6144 column 1 0 _2
(cd /tmp/tr7 && tar -czf "$OUT/traces7_sizes.tar.gz" trace_*_ta0_tb0.csv && tar -czf "$OUT/traces7_layout.tar.gz" trace_6144_*ta1* trace_6144_*tb1* trace_6144_*_2.csv)
ls -la "$OUT"
cat "$OUT/launches7.txt"
