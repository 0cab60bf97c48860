#!/usr/bin/env bash
# Round 14 on the H200 (issue 11): how fast do the naive kernel's block columns drift apart as the SM gets busier,
# and is N = 4224's slow drift a matter of its size? Column order, original A and B, 8 blocks per SM, with ex extra
# FMAs per k step (../round12/drift12.cu; same memory accesses): 4224 at ex = 0 (three launches), 4, 8, 16; 5632 at
# ex = 0, 4, 8, 16; 8448 at ex = 0, 8. Then ncu on one launch of each 5632 and 4224 configuration: issue activity and
# DRAM bytes (--clock-control none).
# Writes $OUT/traces14_<N>.tar.gz (one pid,smid,start_ns,end_ns CSV per launch), $OUT/launches14.txt (clock, check,
# span per launch), $OUT/ncu14.tar.gz (one ncu page per configuration: both launches of the program), $OUT/sass14.txt (loads and FFMA counts per instantiation), $OUT/meta14.txt.
set -uo pipefail
. "$(dirname "$0")/../run_common.sh"
round_start 14
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/drift14 ../round12/drift12.cu
cuobjdump -sass /tmp/drift14 > /tmp/sass14_full.txt
awk '/Function/ {if (f) printf "%s LDG=%d FFMA=%d\n", f, l, m; f=$0; l=0; m=0} /LDG/ {l++} /FFMA/ {m++} END {printf "%s LDG=%d FFMA=%d\n", f, l, m}' /tmp/sass14_full.txt > "$OUT/sass14.txt"
cat "$OUT/sass14.txt"
LAUNCHES="$OUT/launches14.txt"; : > "$LAUNCHES"
mkdir -p /tmp/tr14 && rm -f /tmp/tr14/*.csv
run() {  # N ex [tag]
  timeout 120 /tmp/drift14 "$1" column 0 0 8 -1 "$2" > "/tmp/tr14/trace_$1_column_ex$2${3:-}.csv" 2>> "$LAUNCHES" || echo "failed: $*" >> "$LAUNCHES"
}
for ex in 0 4 8 16; do run 4224 $ex; done
run 4224 0 _2; run 4224 0 _3
for ex in 0 4 8 16; do run 5632 $ex; done
run 8448 0; run 8448 8
for n in 4224 5632 8448; do (cd /tmp/tr14 && tar -czf "$OUT/traces14_$n.tar.gz" trace_${n}_*.csv); done
cat "$LAUNCHES"
M=sm__inst_issued.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second
mkdir -p /tmp/ncu14 && rm -f /tmp/ncu14/*
for n in 4224 5632; do for ex in 0 4 8 16; do
  timeout 60 ncu --clock-control none --csv --page raw --print-units base --metrics $M -k regex:naive16w \
    --log-file /tmp/ncu14/ncu14_${n}_ex${ex}.csv /tmp/drift14 $n column 0 0 8 -1 $ex > /dev/null 2>> /tmp/ncu14/stderr.txt
done; done
(cd /tmp/ncu14 && tar -czf "$OUT/ncu14.tar.gz" *)
ls /tmp/ncu14
round_end 14
ls -la "$OUT"
