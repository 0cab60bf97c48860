#!/usr/bin/env bash
# Round 24b on the H200 (issue 11): the tiled 32x32 SGEMM at N = 3072 in row and column order with A, B and C at
# eight random 2 MiB-aligned placements in one buffer (asym24.cu `randS`, S = 1..8), ncu on the second launch of
# each -> $OUT/ncu_asym24b.tar.gz (with launches.txt). Never changes clocks (ncu --clock-control none).
R=24b
. "$(dirname "$0")/../run_common.sh"
round_start "$R"
nvcc -O3 -arch=sm_90 -std=c++17 -I.. -o /tmp/asym24 asym24.cu || exit 1
M=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second
mkdir -p /tmp/ncub && rm -f /tmp/ncub/*
for s in 1 2 3 4 5 6 7 8; do
  for order in row column; do
    timeout 120 ncu --clock-control none --csv --page raw --print-units base --metrics $M -k regex:tiled32 --launch-skip 1 --launch-count 1 \
      --log-file /tmp/ncub/asym_3072_rand${s}_${order}_1.csv /tmp/asym24 3072 $order rand$s 2>> /tmp/ncub/launches.txt > /dev/null || echo "failed $s $order" >> /tmp/ncub/launches.txt
  done
done
grep launch /tmp/ncub/launches.txt
(cd /tmp/ncub && tar -czf "$OUT/ncu_asym24b.tar.gz" *)
round_end "$R"
ls -la "$OUT"
