#!/bin/bash
# Round 38b on the H200 (issue 12): round 35b's measurement again on the device this session is lent -- the copy
# benchmark that finds the favoured SMs (gpc35) and the traced 64x64 GEMMs at 4096^3, mma.sync and WMMA, S = 1..4,
# 20 timed launches each with their clocks -- so that one more device gives (favoured count, S order). Clocks never
# changed.
#   OUT=out bash validation/h200/round38/run_round38.sh   -> $OUT/round35b.tar.gz (stored as raw/round38.tar.gz)
set -u
bash "$(dirname "$0")/../round35/run_round35b.sh"
