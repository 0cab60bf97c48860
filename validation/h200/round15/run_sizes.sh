#!/usr/bin/env bash
# Rounds 15-18 on the H200 (issue 11): the naive kernel in column order (original A and B, 8 blocks per SM,
# ../round12/drift12.cu) at the sizes SIZES, one traced launch per tag in TAGS ("" or "_2") and size, then ncu's DRAM
# bytes of one more launch of each size (--clock-control none). Each round's run_roundR.sh sets R, SIZES and TAGS.
#   R=15 SIZES="5600 5632" TAGS=" _2" bash validation/h200/round15/run_sizes.sh
# Writes $OUT/tracesR.tar.gz (one pid,smid,start_ns,end_ns CSV per launch), $OUT/launchesR.txt, $OUT/ncuR.tar.gz,
# $OUT/sassR.txt, $OUT/metaR.txt.
set -uo pipefail
: "${R:?R: the round}" "${SIZES:?SIZES: the sizes N}"
TAGS=${TAGS:-}
. "$(dirname "$0")/../run_common.sh"
round_start "$R"
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/drift$R ../round12/drift12.cu
cuobjdump -sass /tmp/drift$R | grep -E "Function|LDG" > "$OUT/sass$R.txt" || true
LAUNCHES="$OUT/launches$R.txt"; : > "$LAUNCHES"
mkdir -p /tmp/tr$R /tmp/ncu$R && rm -f /tmp/tr$R/* /tmp/ncu$R/*
for n in $SIZES; do for tag in "" $TAGS; do
  timeout 120 /tmp/drift$R $n column 0 0 8 -1 > "/tmp/tr$R/trace_${n}_column${tag}.csv" 2>> "$LAUNCHES" || echo "failed: $n$tag" >> "$LAUNCHES"
done; done
(cd /tmp/tr$R && tar -czf "$OUT/traces$R.tar.gz" trace_*.csv)
cat "$LAUNCHES"
for n in $SIZES; do
  timeout 60 ncu --clock-control none --csv --page raw --print-units base \
    --metrics dram__bytes_read.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second -k regex:naive16w \
    --log-file /tmp/ncu$R/ncu${R}_${n}.csv /tmp/drift$R $n column 0 0 8 -1 > /dev/null 2>> /tmp/ncu$R/stderr.txt
done
(cd /tmp/ncu$R && tar -czf "$OUT/ncu$R.tar.gz" *)
ls /tmp/ncu$R
round_end "$R"
ls -la "$OUT"
