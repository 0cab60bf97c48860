#!/bin/bash
# Round 41 on the H200 (issue 12): does the L2's favour follow the copy groups outstanding on an SM in the GEMM too?
# Round 34's traced binaries (round 28's mma.sync and WMMA builds with round 30's clk30.patch: every block's SM, start
# and end for the 11th of each configuration's 20 timed launches) at M = N = K = 4096, with the 64x64 tile's blocks
# given EXTRA_SMEM bytes of dynamic shared memory they do not use, so fewer fit on an SM (the kernel prints the
# occupancy API's blocks per SM). EXTRA_SMEM = 0 is round 34's launch. Nothing else changes; clocks are never changed.
#   bash validation/h200/round41/run_round41.sh   -> $OUT/round41.tar.gz (or ./out41/)
# (The build steps were written out here when it ran; they now call run_common.sh's traced_clk / pipe28_source /
# pipe28_compile, the same commands. The source that ran is raw/round41.tar.gz's mma_pipe41.cu.)
set -u
. "$(dirname "$0")/../run_common.sh"
packed_start 41
HERE=$PWD
traced_clk
pipe28_source 41
# the occupancy knob: extra dynamic shared memory for the 64x64 variants only
sed -i 's/^struct Variant {/static int g_extra = 0;  \/\/ round 41: EXTRA_SMEM bytes more for the 64x64 tile\nstruct Variant {/' build/mma_pipe41.cu
sed -i 's/G::NT, G::SMEM>>>/G::NT, G::SMEM + (BM == 64 ? g_extra : 0)>>>/' build/mma_pipe41.cu
sed -i 's/^  auto vs = variants();/  auto vs = variants();\n  { const char* e = std::getenv("EXTRA_SMEM"); g_extra = e ? std::atoi(e) : 0; for (auto\& v : vs) if (v.BM == 64) v.smem += g_extra; }/' build/mma_pipe41.cu
for pat in 'static int g_extra' 'G::SMEM + (BM == 64' 'EXTRA_SMEM'; do
  [ "$(grep -c "$pat" build/mma_pipe41.cu)" -ge 1 ] || echo "sed failed: $pat" | tee -a "$O/log.txt"
done
cp build/mma_pipe41.cu "$O/"
pipe28_compile 41 -include cstdlib
cd "$O"
for b in mma wmma; do
  for e in 0 24576 32768 40960 65536; do
    t=e$e
    ( time EXTRA_SMEM=$e SCHED_OUT=sched_${b}_$t.csv timeout 200 "$HERE/build/mp41_$b" check_time 4096,4096,4096 > ${b}_$t.csv 2> ${b}_$t.err ) 2>> log.txt
    mv launches_4096.csv launches_${b}_$t.csv; gzip -f sched_${b}_$t.csv; gpu_state "$O" "${b}_$t"
  done
done
cd "$HERE"
packed_end 41
