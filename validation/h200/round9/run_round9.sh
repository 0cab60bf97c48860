#!/bin/bash
# Round 9 on the H200 (issue 12): round 8's copy-only kernel (l2req.cu + l2req9.patch, mode r9): the padded copy
# shape's bytes-in-flight sweep at the 8192^3 footprint, and the round trip of one SM's copies when only k SMs copy.
# Usage (repository root): bash validation/h200/round9/run_round9.sh   -> $OUT/ (or ./out9/)
# Clocks never changed (ncu --clock-control none).
set -u
cd "$(dirname "$0")"
. ../run_common.sh
O=${OUT:-$PWD/out9}; mkdir -p "$O"
run_start "$O"
cp ../round8/l2req.cu build/l2req9.cu && (cd build && patch -s l2req9.cu < ../l2req9.patch) && sed -i 's#"../round3/clk.h"#"../../round3/clk.h"#' build/l2req9.cu
nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -o build/l2req9 build/l2req9.cu > "$O/ptxas.txt" 2>&1 || { echo build failed; cat "$O/ptxas.txt"; exit 1; }
cuobjdump -sass build/l2req9 > "$O/sass_l2req9.txt" 2>&1
( time timeout 200 build/l2req9 r9 > "$O/l2req9.csv" 2> "$O/l2req9.err" ) 2>> "$O/log.txt"
gpu_state "$O" mid
ncu --version > "$O/ncu_version.txt" 2>&1
M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__cycles_elapsed.avg.per_second,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_tag_requests.sum,lts__t_tag_requests.avg.pct_of_peak_sustained_elapsed,l1tex__m_xbar2l1tex_read_sectors.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_requests_srcunit_ltcfabric.sum"
( time timeout 120 ncu --clock-control none --csv --page raw --print-units base --metrics "$M" -k regex:tilecopy --log-file "$O/ncu_l2req9.csv" build/l2req9 r9ncu > "$O/ncu_l2req9_launches.txt" 2> "$O/ncu_l2req9.err" ) 2>> "$O/log.txt"
run_end "$O"
gzip -f "$O/sass_l2req9.txt" "$O/ncu_l2req9.csv"
tar czf /tmp/round9.tar.gz -C "$O" --exclude=l2req9.csv . && find "$O" -mindepth 1 ! -name l2req9.csv -delete && mv /tmp/round9.tar.gz "$O/"
tar tzvf "$O/round9.tar.gz"; wc -l "$O/l2req9.csv"; tar xzf "$O/round9.tar.gz" -O ./log.txt ./l2req9.err ./ncu_l2req9.err | tail -20
# the timed loop of the S = 1, 256-thread kernel: copies, commit, wait, barriers and clock reads only
tar xzf "$O/round9.tar.gz" -O ./sass_l2req9.txt.gz | zcat | awk '/Function : _Z8tilecopyILi256ELi1ELi2E/{f=1;next} /Function : /{f=0} f' | grep -E "LDGSTS|DEPBAR|BAR.SYNC|CLOCK|LDL|STL" | head -16
awk -F, 'NR==1 || $1=="sms_pad" || $15==0' "$O/l2req9.csv" | cut -d, -f1,5,6,9,10,11,13,17,19,20,22,23,24,25 | head -60
