#!/bin/bash
# Round 30 on the H200 (issue 12): where every block of the S sweep's launches ran, and when. Builds round 3's
# mma_pipe.cu + round 4's mma_pipe4.patch + round 28's wmma28.patch (mma.sync and -DWMMA), with round 3's clk.h +
# clk30.patch: every block's thread 0 records its SM (%smid), (globaltimer, clock64) at start and end, for up to 16,384
# blocks, and the 11th of each configuration's 20 timed launches writes them all to $SCHED_OUT.
#   bash validation/h200/round30/run_round30.sh   -> $OUT/round30.tar.gz (or ./out30/)
# Clocks are never changed.
set -u
. "$(dirname "$0")/../run_common.sh"
packed_start 30
HERE=$PWD
build_traced28 30
cd "$O"
traced_sweep 30 4096 8192
cd "$HERE"
packed_end 30
