#!/bin/bash
# Round 10b on the H200 (issue 12): the k-step schedule of co-resident blocks of mma_pipe (round 3's mma_pipe.cu +
# round 4's and round 6's patches + mma_pipe10.patch, built with -DSTEP_CLOCK): thread 0 of the first 400 blocks
# reads clock64 four times in each of k-steps 32-55. Each recorded kernel is first checked against the fp32 reference.
# Clocks never changed. Usage (repository root): bash validation/h200/round10/run_round10b.sh -> $OUT/round10b_raw.tar.gz
# Round 10d, the other stage counts: S4096=34 S8192=234 TAG=10d bash validation/h200/round10/run_round10b.sh
set -u
S4096=${S4096:-12}; S8192=${S8192:-1}; TAG=${TAG:-10b}
HERE=$(cd "$(dirname "$0")" && pwd)
D=${OUT:-$PWD/out10b}; mkdir -p "$D"
O=$(mktemp -d)/raw; mkdir -p "$O"
cd "$HERE"
. ../run_common.sh
run_start "$O"
cp ../round3/mma_pipe.cu build/mma_pipe10.cu && patch -s build/mma_pipe10.cu ../round4/mma_pipe4.patch \
  && patch -s build/mma_pipe10.cu ../round6/mma_pipe6.patch && (cd build && patch -s mma_pipe10.cu ../mma_pipe10.patch) \
  || echo "patch failed" >> "$O/log.txt"
nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -I../round3 -DSTEP_CLOCK -o build/mp10 build/mma_pipe10.cu > "$O/ptxas.txt" 2>&1 || { echo build failed; tail "$O/ptxas.txt"; }
cuobjdump -sass build/mp10 > "$O/sass_mp10.txt" 2>&1; gzip -f "$O/sass_mp10.txt"
( time timeout 200 build/mp10 stepclock 4096,4096,4096 $S4096 > "$O/steps_4096.csv" 2> "$O/steps_4096.err" ) 2>> "$O/log.txt"
( time timeout 200 build/mp10 stepclock 8192,8192,8192 $S8192 > "$O/steps_8192.csv" 2> "$O/steps_8192.err" ) 2>> "$O/log.txt"
gzip -f "$O/steps_4096.csv" "$O/steps_8192.csv"
run_end "$O"
tar czf "$D/round${TAG}_raw.tar.gz" -C "$(dirname "$O")" raw
cat "$O/log.txt" "$O"/steps_*.err; ls -la "$O"
