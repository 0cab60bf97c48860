#!/usr/bin/env bash
# Round 24 on the H200 (issue 11), one device call:
#  1. home24.cu: the home L2 partition of every 4 KiB chunk of a 512 MiB buffer (and every line of its first 2 MiB,
#     and the chunks of a second buffer's first 64 MiB) -> $OUT/home24.csv.gz
#  2. asym24.cu: the tiled 32x32 SGEMM's DRAM bytes in row and column order at N = 3072 with the operands placed three
#     ways (sep twice, swap, pad) and at N = 3008, 3136 (sep), ncu on the second launch -> $OUT/ncu_asym24.tar.gz
#  3. the naive kernel in column order (../round12/drift12.cu) traced *and* profiled in the same launch: 4288 x4,
#     4224 x2, 4352 x2, 4416 x2 -> $OUT/traces24.tar.gz (CSV per launch), $OUT/ncu24.tar.gz, $OUT/launches24.txt
# Never changes clocks (ncu --clock-control none).
#   bash validation/h200/round24/run_round24.sh
R=24
. "$(dirname "$0")/../run_common.sh"
round_start "$R"
set -u
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/home24 home24.cu || exit 1
nvcc -O3 -arch=sm_90 -std=c++17 -I.. -o /tmp/asym24 asym24.cu || exit 1
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/drift24 ../round12/drift12.cu || exit 1
{ cuobjdump -sass /tmp/home24 | grep -E "Function|LDG|CS2R"; cuobjdump -sass /tmp/asym24 | grep -E "Function|LDG|STS|LDS"; cuobjdump -sass /tmp/drift24 | grep -E "Function|LDG"; } > "$OUT/sass24.txt"
# 1
( time timeout 120 /tmp/home24 > /tmp/home24.csv 2> "$OUT/home24.log" ) 2>> "$OUT/home24.log"
gzip -c /tmp/home24.csv > "$OUT/home24.csv.gz"; tail -3 "$OUT/home24.log"
# 2
M=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second
mkdir -p /tmp/ncua && rm -f /tmp/ncua/*
for spec in "3072 sep 1" "3072 swap 1" "3072 pad 1" "3072 sep 2" "3008 sep 1" "3136 sep 1"; do
  set -- $spec
  for order in row column; do
    timeout 120 ncu --clock-control none --csv --page raw --print-units base --metrics $M -k regex:tiled32 --launch-skip 1 --launch-count 1 \
      --log-file /tmp/ncua/asym_$1_$2_${order}_$3.csv /tmp/asym24 $1 $order $2 2>> /tmp/ncua/launches.txt > /dev/null || echo "failed $spec $order" >> /tmp/ncua/launches.txt
  done
done
grep launch /tmp/ncua/launches.txt
(cd /tmp/ncua && tar -czf "$OUT/ncu_asym24.tar.gz" *)
# 3
traced_profiled 24 /tmp/drift24 "4288 1" "4224 1" "4288 2" "4352 1" "4416 1" "4288 3" "4224 2" "4352 2" "4416 2" "4288 4"
grep -c . /tmp/tr24/trace_*.csv | head -3; grep -h "pass" /tmp/tr24/ncu24_*.csv | head -3
round_end "$R"
ls -la "$OUT"
