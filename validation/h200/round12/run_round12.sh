#!/usr/bin/env bash
# Round 12 on the H200 (issue 11): block traces of the naive kernel with B (and A) L2-resident at 1-8 blocks per SM.
# Writes $OUT/traces12_bps.tar.gz and traces12_other.tar.gz (one CSV per launch), $OUT/launches12.txt (clock, blocks per SM, check per launch),
# $OUT/sass12.txt (the k-loop's loads), $OUT/meta12.txt (nvcc, nvidia-smi before and after, start and end time).
set -euo pipefail
. "$(dirname "$0")/../run_common.sh"
round_start 12
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/drift12 drift12.cu
cuobjdump -sass /tmp/drift12 | grep -E "Function|LDG" > "$OUT/sass12.txt" || true
mkdir -p /tmp/tr12 && rm -f /tmp/tr12/*.csv
if [ "${PART:-a}" = c ]; then
  # round 12c: does more work for the SM (extra FMAs per k step, the memory accesses unchanged) make the naive
  # kernel's block columns drift sooner? Column order at 5632, 8 per SM, ex = 0 (control), 16, 32, two launches each;
  # row order at ex = 32.
  LAUNCHES="$OUT/launches12c.txt"; : > "$LAUNCHES"
  runc() { timeout 120 /tmp/drift12 5632 "$1" 0 0 8 -1 "$2" > "/tmp/tr12/trace_5632_$1_ta0_tb0_bps8_ex$2${3:-}.csv" 2>> "$LAUNCHES" || echo "failed: $*" >> "$LAUNCHES"; }
  for ex in 0 16 32; do runc column $ex; runc column $ex _2; done
  runc row 32
  (cd /tmp/tr12 && tar -czf "$OUT/traces12c.tar.gz" trace_*.csv)
  round_end 12
  cat "$LAUNCHES"; ls -la "$OUT"; exit 0
fi
if [ "${PART:-a}" = b ]; then
  # round 12b: is the tie of one block column's blocks at 2-4 per SM (B L2-resident) their sharing of B's lines in
  # L1? tb = 3 reads the wrapped B past L1. And does L2 alone tie the original kernel's blocks? tb = 4.
  LAUNCHES="$OUT/launches12b.txt"; : > "$LAUNCHES"
  run() { timeout 120 /tmp/drift12 "$@" > "/tmp/tr12/trace_$1_$2_ta$3_tb$4_bps$5_c$6${7:-}.csv" 2>> "$LAUNCHES" || echo "failed: $*" >> "$LAUNCHES"; }
  for b in 4 3 2; do run 5632 column 0 3 $b 100; done
  run 5632 column 0 4 8 100; run 5632 row 0 4 8 100
  (cd /tmp/tr12 && tar -czf "$OUT/traces12b.tar.gz" trace_*.csv)
  round_end 12
  cat "$LAUNCHES"; ls -la "$OUT"; exit 0
fi
LAUNCHES="$OUT/launches12.txt"; : > "$LAUNCHES"
run() {  # N order ta tb bps carve [tag]
  timeout 120 /tmp/drift12 "$@" > "/tmp/tr12/trace_$1_$2_ta$3_tb$4_bps$5_c$6${7:-}.csv" 2>> "$LAUNCHES" \
    || echo "failed: $*" >> "$LAUNCHES"
}
for b in 8 6 4 3 2 1; do run 5632 column 0 2 $b 100; done
run 5632 column 0 2 4 100 _2
run 5632 row 0 2 4 100; run 5632 row 0 2 1 100
run 5632 column 2 2 8 100; run 5632 column 2 2 1 100
run 5632 column 0 0 8 100
(cd /tmp/tr12 && tar -czf "$OUT/traces12_bps.tar.gz" trace_5632_column_ta0_tb2_* && tar -czf "$OUT/traces12_other.tar.gz" trace_5632_row_* trace_5632_column_ta2_* trace_5632_column_ta0_tb0_*)
round_end 12
cat "$LAUNCHES"
ls -la "$OUT"
