# What every H200 round script (rounds 4-6) records around its runs. Sourced from the round's folder:
#   . ../run_common.sh
# Clocks are never changed; nvidia-smi only reads them.

# run_start DIR: the UTC start time, the GPU's clocks, power and temperature, and nvcc's version into DIR; ./build made
run_start() {
  date -u +%FT%TZ > "$1/start_time.txt"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > "$1/smi_before.csv" 2>&1
  nvcc --version > "$1/nvcc_version.txt" 2>&1
  mkdir -p build
}

# gpu_state DIR NAME: the GPU's clock, power and temperature now, into DIR/smi_NAME.csv
gpu_state() {
  nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv > "$1/smi_$2.csv" 2>&1
}

# run_end DIR: the GPU's state after the runs (smi_after.csv) and the UTC end time
run_end() {
  gpu_state "$1" after
  date -u +%FT%TZ > "$1/end_time.txt"
}

# build_run DIR NAME TIMEOUT_S: build NAME.cu (ptxas report in DIR/ptxas.txt; stop if it fails), its SASS into
# DIR/sass_NAME.txt, one run under the timeout into DIR/NAME.csv and NAME.err, its time appended to DIR/log.txt
build_run() {
  nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -o "build/$2" "$2.cu" > "$1/ptxas.txt" 2>&1 || { echo build failed; cat "$1/ptxas.txt"; exit 1; }
  cuobjdump -sass "build/$2" > "$1/sass_$2.txt" 2>&1
  ( time timeout "$3" "build/$2" > "$1/$2.csv" 2> "$1/$2.err" ) 2>> "$1/log.txt"
}

# micro_round NAME TIMEOUT_S DEFAULT_OUT: a one-program round (4b, 4c, 4d): O = $OUT or ./DEFAULT_OUT (made), into the
# calling script's folder, then run_start, build_run NAME, run_end. Leaves O set and the caller in its folder.
micro_round() {
  O=${OUT:-$PWD/$3}; mkdir -p "$O"
  cd "$(dirname "${BASH_SOURCE[1]}")"
  run_start "$O"
  build_run "$O" "$1" "$2"
  run_end "$O"
}

# round_start R (rounds 12-18): OUT made absolute (default out$R, created), the working directory the calling
# script's own folder, and $OUT/meta$R.txt begun: UTC time, nvcc's version, the GPU's name, clocks, driver,
# temperature and power.
round_start() {
  OUT=${OUT:-out$1}
  mkdir -p "$OUT"
  OUT=$(cd "$OUT" && pwd)
  cd "$(dirname "$0")" || exit 1
  { date -u; nvcc --version | tail -2; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version,temperature.gpu,power.draw --format=csv; } > "$OUT/meta$1.txt"
}

# round_end R: the UTC time and the GPU's clock, temperature and power after the runs, appended to $OUT/meta$R.txt
round_end() {
  { date -u; nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv; } >> "$OUT/meta$1.txt"
}

# traced_profiled R BIN "N K" ...: rounds 24 and 26 -- the naive kernel in column order (BIN: ../round12/drift12.cu
# built) traced and profiled by ncu in the same launch, once per "N K" (K: the launch's number at that size), in the
# order given. Writes $OUT/traces$R.tar.gz (trace_N_column_K.csv), $OUT/ncu$R.tar.gz (ncu$R_N_K.csv) and appends each
# launch's line (clock, check) to $OUT/launches$R.txt.
traced_profiled() {
  local r=$1 bin=$2 spec
  shift 2
  mkdir -p "/tmp/tr$r" && rm -f "/tmp/tr$r"/*
  for spec in "$@"; do
    set -- $spec
    timeout 120 ncu --clock-control none --csv --page raw --print-units base \
      --metrics dram__bytes_read.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second -k regex:naive16w \
      --log-file "/tmp/tr$r/ncu${r}_$1_$2.csv" "$bin" "$1" column 0 0 8 -1 2>> "$OUT/launches$r.txt" \
      | grep -v "^==" > "/tmp/tr$r/trace_$1_column_$2.csv" || echo "failed: $1 $2" >> "$OUT/launches$r.txt"
  done
  (cd "/tmp/tr$r" && tar -czf "$OUT/traces$r.tar.gz" trace_*.csv && tar -czf "$OUT/ncu$r.tar.gz" "ncu${r}"_*.csv)
}

# packed_start NAME: a round whose raw files come back as one archive. D = $OUT, or out<NAME> in the folder it was
# started from (made); O = a fresh temporary folder raw<NAME>; then the calling script's folder becomes the working
# folder and run_start O. The script sources this file by its path first: . "$(dirname "$0")/../run_common.sh"
packed_start() {
  D=${OUT:-$PWD/out$1}; mkdir -p "$D"
  O=$(mktemp -d)/raw$1; mkdir -p "$O"
  cd "$(dirname "${BASH_SOURCE[1]}")" || exit 1
  run_start "$O"
}

# packed_end NAME: run_end O, its log and listing printed, O packed into $D/round<NAME>.tar.gz
packed_end() {
  run_end "$O"
  cat "$O/log.txt"; ls -la "$O"
  tar czf "$D/round$1.tar.gz" -C "$(dirname "$O")" "$(basename "$O")"
}

# build_pipe28 TAG: rounds 28 and 30 -- round 3's mma_pipe.cu + round 4's mma_pipe4.patch + round 28's wmma28.patch
# as build/mma_pipe<TAG>.cu, built twice, build/mp<TAG>_wmma (-DWMMA) and build/mp<TAG>_mma (ptxas reports in $O),
# their SASS gzipped into $O. A build/clk.h made beforehand (round 30's) takes the place of round 3's.
build_pipe28() {
  pipe28_source "$1"
  pipe28_compile "$1"
}

# pipe28_source TAG: build_pipe28's source, build/mma_pipe<TAG>.cu, for a round to change before pipe28_compile
pipe28_source() {
  cp ../round3/mma_pipe.cu "build/mma_pipe$1.cu" && patch -s "build/mma_pipe$1.cu" ../round4/mma_pipe4.patch \
    && patch -s "build/mma_pipe$1.cu" ../round28/wmma28.patch || echo "patch failed" | tee -a "$O/log.txt"
}

# pipe28_compile TAG [NVCC FLAGS...]: build_pipe28's two builds of build/mma_pipe<TAG>.cu, with any extra flags
pipe28_compile() {
  local tag=$1
  shift
  local F="-O3 -arch=sm_90 -std=c++17 -lineinfo -Xptxas -v -I../round3"
  nvcc $F "$@" -DWMMA -o "build/mp${tag}_wmma" "build/mma_pipe$tag.cu" > "$O/ptxas_wmma.txt" 2>&1 &
  nvcc $F "$@" -o "build/mp${tag}_mma" "build/mma_pipe$tag.cu" > "$O/ptxas_mma.txt" 2>&1 &
  wait
  ls -la build >> "$O/log.txt"
  for b in wmma mma; do cuobjdump -sass "build/mp${tag}_$b" > "$O/sass_$b.txt" 2>&1; gzip -f "$O/sass_$b.txt"; done
}

# build_traced28 TAG: rounds 30 and 32 -- round 3's clk.h with round 30's clk30.patch (every block's SM, start and end
# for the 11th of each configuration's 20 timed launches, into $SCHED_OUT), then build_pipe28 TAG.
build_traced28() {
  traced_clk
  build_pipe28 "$1"
}

# traced_clk: build/clk.h, round 3's with round 30's clk30.patch (build_traced28's first step)
traced_clk() {
  cp ../round3/clk.h build/clk.h && patch -s build/clk.h ../round30/clk30.patch || echo "clk patch failed" | tee -a "$O/log.txt"
}

# traced_sweep TAG N...: rounds 30 and 32 -- both builds of build_traced28 TAG timed (check_time) at each N, run from
# $O, each configuration's 11th launch traced into sched_<build>_<N>.csv.gz; launches_<build>_<N>.csv, the GPU state.
traced_sweep() {
  local tag=$1 b n
  shift
  for b in mma wmma; do
    for n in "$@"; do
      ( time SCHED_OUT=sched_${b}_$n.csv timeout 200 "$HERE/build/mp${tag}_$b" check_time $n,$n,$n > ${b}_$n.csv 2> ${b}_$n.err ) 2>> log.txt
      mv launches_$n.csv launches_${b}_$n.csv; gzip -f sched_${b}_$n.csv; gpu_state "$O" "${b}_$n"
    done
  done
}
