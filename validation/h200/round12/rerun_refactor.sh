#!/usr/bin/env bash
# Refactor check on the H200 (from the repository root, OUT=<dir>): with the pre-refactor sources placed beside the
# new ones as round7/drift7_old.cu and round12/drift12_old.cu (git show <commit>:<path>), builds both versions,
# compares the kernels' SASS and runs the same four launches with each -> raw/rerun_refactor.txt.
set -u
cd validation/h200
mkdir -p $OUT
for v in old new; do
  src7=round7/drift7.cu; src12=round12/drift12.cu
  [ $v = old ] && src7=round7/drift7_old.cu && src12=round12/drift12_old.cu
  nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/d7_$v $src7 && nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/d12_$v $src12 || exit 1
  for b in d7 d12; do cuobjdump -sass /tmp/${b}_$v | grep -E "^\s+/\*[0-9a-f]{4}\*/|Function" | sed 's#/\* 0x[0-9a-f]* \*/##' > /tmp/${b}_$v.sass; done
  /tmp/d7_$v 5632 column 0 0 > /tmp/t7a_$v.csv 2>> $OUT/rerun_$v.txt
  /tmp/d7_$v 5632 column 0 2 > /tmp/t7b_$v.csv 2>> $OUT/rerun_$v.txt
  /tmp/d12_$v 5632 column 0 2 8 100 > /tmp/t12a_$v.csv 2>> $OUT/rerun_$v.txt
  /tmp/d12_$v 5632 column 0 0 8 -1 32 > /tmp/t12b_$v.csv 2>> $OUT/rerun_$v.txt
done
for b in d7 d12; do cmp /tmp/${b}_old.sass /tmp/${b}_new.sass && echo "$b kernels' SASS identical ($(grep -c Function /tmp/${b}_new.sass) functions, $(wc -l < /tmp/${b}_new.sass) lines)"; done | tee $OUT/sass_compare.txt
for t in t7a t7b t12a t12b; do echo "$t header $(head -1 /tmp/${t}_new.csv) rows $(wc -l < /tmp/${t}_old.csv) $(wc -l < /tmp/${t}_new.csv)"; done | tee -a $OUT/sass_compare.txt
paste -d'\n' $OUT/rerun_old.txt $OUT/rerun_new.txt
