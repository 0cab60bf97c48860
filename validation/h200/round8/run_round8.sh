#!/bin/bash
# Round 8 on the H200 (issue 12): the L2 throughput of 16-byte cp.async traffic from all SMs (l2req.cu), and ncu's
# L2 counters on it and on round 3's mma_pipe GEMMs (requests, sectors, tag-lookup utilisation, L2 clock, DRAM).
# Usage (repository root): bash validation/h200/round8/run_round8.sh   -> $OUT/round8.tar.gz (or ./out8/)
# Clocks never changed (ncu --clock-control none).
set -u
. "$(dirname "$0")/../run_common.sh"
micro_round l2req 240 out8   # sets O, works in this folder: build, SASS, run -> $O/l2req.csv
ncu --version > "$O/ncu_version.txt" 2>&1
nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -o build/mma_pipe ../round3/mma_pipe.cu > "$O/ptxas_mma_pipe.txt" 2>&1 || echo "BUILD FAILED mma_pipe"
gpu_state "$O" mid
# the L2 counters this ncu has (a missing name would fail the whole profile)
ncu --query-metrics --csv > "$O/ncu_query_metrics.csv" 2>&1
WANT="gpu__time_duration.sum sm__cycles_elapsed.avg.per_second lts__cycles_elapsed.avg.per_second lts__cycles_elapsed.avg
lts__t_requests_srcunit_tex_op_read.sum lts__t_sectors_srcunit_tex_op_read.sum lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum
lts__t_tag_requests.sum lts__t_tag_requests.avg.pct_of_peak_sustained_elapsed lts__t_sectors.sum
lts__t_sectors.avg.pct_of_peak_sustained_elapsed lts__throughput.avg.pct_of_peak_sustained_elapsed
lts__t_requests_srcunit_ltcfabric.sum lts__t_sectors_srcunit_ltcfabric.sum dram__bytes_read.sum
lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed lts__xbar2lts_cycles_active.avg.pct_of_peak_sustained_elapsed
l1tex__m_xbar2l1tex_read_sectors.sum"
M=""
for m in $WANT; do grep -q "\"${m%%.*}\"" "$O/ncu_query_metrics.csv" && M="$M,$m" || echo "no metric $m" >> "$O/log.txt"; done
M=${M#,}; echo "metrics: $M" >> "$O/log.txt"
NCU="ncu --clock-control none --csv --page raw --print-units base"
( time timeout 150 $NCU --metrics "$M" -k regex:tilecopy --log-file "$O/ncu_l2req.csv" build/l2req ncu > "$O/ncu_l2req_launches.txt" 2> "$O/ncu_l2req.err" ) 2>> "$O/log.txt"
for s in 4096 8192; do
  ( time timeout 120 $NCU --metrics "$M" -k regex:mma_gemm --log-file "$O/ncu_mma_$s.csv" build/mma_pipe ncu $s,$s,$s > "$O/ncu_mma_${s}_launches.txt" 2> "$O/ncu_mma_$s.err" ) 2>> "$O/log.txt"
done
cuobjdump -sass build/mma_pipe > "$O/sass_mma_pipe.txt" 2>&1
run_end "$O"
gzip -f "$O/sass_l2req.txt" "$O/sass_mma_pipe.txt" "$O/ncu_query_metrics.csv"
# only 8 files come back from the device: everything in one archive, beside the main table
tar czf /tmp/round8.tar.gz -C "$O" --exclude=l2req.csv . && find "$O" -mindepth 1 ! -name l2req.csv -delete && mv /tmp/round8.tar.gz "$O/"
# what comes back besides the archive
tar tzvf "$O/round8.tar.gz"; head -3 "$O/l2req.csv"; wc -l "$O/l2req.csv"
tar xzf "$O/round8.tar.gz" -O ./log.txt ./l2req.err
# the timed loop of one kernel (64x64 tile, S = 2): copies, commit, wait, barrier and the clock reads only
tar xzf "$O/round8.tar.gz" -O ./sass_l2req.txt.gz | zcat | awk '/Function : _Z8tilecopyILi128ELi2ELi2E/{f=1;next} /Function : /{f=0} f' | grep -E "LDGSTS|DEPBAR|BAR.SYNC|CLOCK|LDL|STL" | head -24
