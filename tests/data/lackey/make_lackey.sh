#!/bin/sh
# Regenerate the valgrind lackey reference traces of gemmsim's CPU kernels.
#
#   tests/data/lackey/make_lackey.sh [OUTDIR]      (default: this script's folder)
#
# Compiles gemm_lackey.c at -O0 (gemmsim promotion="none") and -O1 (promotion="hoisted") for fp32 and
# fp64, runs each under `valgrind --tool=lackey --trace-mem=yes` on 5x7x6 (tiles 2x3x4: edge tiles on every
# side) and 8x8x8 (tiles 4x4x4), and keeps each kernel's accesses to A, B and C (filter_lackey.py) in
# OUTDIR/<opt>_<M>x<N>x<K>_<dtype>/<kernel>.lackey.gz. Needs gcc, valgrind and python3.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
py=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
compiler=$(gcc -dumpfullversion 2>/dev/null || gcc -dumpversion)
for dtype in fp32 fp64; do
    case $dtype in fp32) ctype=float ;; fp64) ctype=double ;; esac
    for opt in O0 O1; do
        gcc -$opt -DTYPE=$ctype -o "$work/gemm_${dtype}_$opt" "$here/gemm_lackey.c"
        for shape in "5 7 6 2 3 4" "8 8 8 4 4 4"; do
            [ "$dtype" = fp64 ] && [ "$shape" != "5 7 6 2 3 4" ] && continue
            # shellcheck disable=SC2086
            valgrind --tool=lackey --trace-mem=yes --log-file="$work/log" "$work/gemm_${dtype}_$opt" $shape > "$work/stdout"
            # shellcheck disable=SC2086
            "$py" "$here/filter_lackey.py" "$work/log" "$work/stdout" "$out" $shape $dtype $opt "gcc-$compiler"
        done
    done
done
