#!/usr/bin/env bash
# Round 24c on the H200 (issue 11): round 3's naive 16x16 kernel in row and column order at N = 6144 (where column
# order reads 1.51x row, round 3) with its operands at six placements (asym24.cu: sep, swap, rand1-4), and at 4096
# (row = column, round 3) at three, ncu on the second launch -> $OUT/ncu_asym24c.tar.gz (with launches.txt).
R=24c
. "$(dirname "$0")/../run_common.sh"
round_start "$R"
nvcc -O3 -arch=sm_90 -std=c++17 -I.. -o /tmp/asym24 asym24.cu || exit 1
cuobjdump -sass /tmp/asym24 | grep -E "Function|LDG" > "$OUT/sass24c.txt"
M=dram__bytes_read.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second
mkdir -p /tmp/ncuc && rm -f /tmp/ncuc/*
for spec in "6144 sep" "6144 swap" "6144 rand1" "6144 rand2" "6144 rand3" "6144 rand4" "4096 sep" "4096 swap" "4096 rand1"; do
  set -- $spec
  for order in row column; do
    timeout 120 ncu --clock-control none --csv --page raw --print-units base --metrics $M -k regex:naive16 --launch-skip 1 --launch-count 1 \
      --log-file /tmp/ncuc/asym_$1_$2_${order}_1.csv /tmp/asym24 $1 $order $2 naive 2>> /tmp/ncuc/launches.txt > /dev/null || echo "failed $spec $order" >> /tmp/ncuc/launches.txt
  done
done
grep -E "launch|failed" /tmp/ncuc/launches.txt
(cd /tmp/ncuc && tar -czf "$OUT/ncu_asym24c.tar.gz" *)
round_end "$R"
ls -la "$OUT"
