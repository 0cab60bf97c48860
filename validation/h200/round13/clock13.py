"""Round 13 (issue 12): the SM clock *inside* cuBLAS kernels on the H200.

    python3 clock13.py sweep OUTDIR    # run under ncu (run_round13.sh): the round 3 sweep, spaced launches
    python3 clock13.py probe OUTDIR    # no profiler: a co-resident probe samples the clock during each product

sweep: the sizes and dtypes of round 3's cuBLAS sweep (../round3/cublas_sweep.py: coarse M = N = 1024..8192 step
512 at K = 4096, fine N = 3840..4736 step 32 at M = K = 4096; torch.matmul fp16 and bf16, fp32 accumulation).
Per size: one product checked against an fp32 product of the same inputs (relative Frobenius error), two
warm-ups, then REPS launches with a 1 ms host sleep before each (as round 3 spaced them). ncu, filtered to the
fp16/bf16 nvjet kernels, records each launch's duration and sm__cycles_elapsed.avg.per_second (the SM clock the
kernel ran at, from the SM's own cycle counter) with --clock-control none. Writes OUTDIR/sweep13_launches.csv:
the launch sequence (one row per product launched: sweep,dtype,M,N,K,what,rep) for matching ncu's rows in order.

probe: the same sizes (every second one of the fine sweep), each product launched REPS times with a probe and
REPS times without, alternating, 1 ms apart. The probe is one 32-thread block on a stream of its own, started
before the product: it reads %globaltimer and clock64 every ~0.5 us into a buffer until a stop flag is set (a
one-thread kernel after the product on the product's stream). Markers (one-thread kernels writing %globaltimer)
before and after the product on its stream bound the interval; the clock is the slope of clock64 against
%globaltimer over the samples inside it. A probe that could not share its SM with a product CTA would hold that
CTA until the probe ends (5 ms): such launches show up as a duration far above the unprobed one and are flagged.
Writes OUTDIR/probe13.csv.
"""

import csv
import os
import statistics
import sys
import time

import torch

MODE = sys.argv[1]
OUT = sys.argv[2] if len(sys.argv) > 2 else "."
REPS = int(os.environ.get("REPS", "3"))
os.makedirs(OUT, exist_ok=True)
dev = torch.device("cuda")

sizes = [("coarse", m, m, 4096) for m in range(1024, 8192 + 1, 512)]
sizes += [("fine", 4096, n, 4096) for n in range(3840, 4736 + 1, 32)]
dtypes = [("fp16", torch.float16), ("bf16", torch.bfloat16)]


def inputs(M, N, K, dt):
    a = torch.randn(M, K, device=dev, dtype=dt)
    b = torch.randn(K, N, device=dev, dtype=dt)
    c = torch.matmul(a, b)
    ref = torch.matmul(a.float(), b.float())
    err = float((c.float() - ref).norm() / ref.norm())
    del ref
    return a, b, c, err


def sweep() -> None:
    seq = []
    for dname, dt in dtypes:
        for sw, M, N, K in sizes:
            a, b, c, err = inputs(M, N, K, dt)
            seq.append((sw, dname, M, N, K, "first", 0, f"{err:.2e}"))
            for w in range(2):
                torch.matmul(a, b, out=c)
                seq.append((sw, dname, M, N, K, "warm", w, ""))
            torch.cuda.synchronize()
            for r in range(REPS):
                time.sleep(0.001)
                torch.matmul(a, b, out=c)
                torch.cuda.synchronize()
                seq.append((sw, dname, M, N, K, "rep", r, ""))
            print(sw, dname, M, N, K, f"rel_err {err:.2e}", flush=True)
    with open(os.path.join(OUT, "sweep13_launches.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sweep", "dtype", "M", "N", "K", "what", "rep", "rel_err"])
        w.writerows(seq)


PROBE_SRC = r"""
__device__ __forceinline__ unsigned long long gt() {
  unsigned long long g; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g)); return g; }
extern "C" __global__ void probe(unsigned long long* out, int n, unsigned long long max_ns, volatile int* stop) {
  if (threadIdx.x != 0) return;
  unsigned long long g0 = gt();
  int i = 0;
  while (i < n) {
    unsigned long long g = gt();
    unsigned long long c = clock64();
    out[2 * i] = g; out[2 * i + 1] = c; ++i;
    if (*stop || g - g0 > max_ns) break;
    __nanosleep(400);
  }
  out[2 * n] = (unsigned long long)i;
  unsigned sm; asm volatile("mov.u32 %0, %%smid;" : "=r"(sm)); out[2 * n + 1] = sm;
}
extern "C" __global__ void marker(unsigned long long* slot) { *slot = gt(); }
extern "C" __global__ void set_flag(int* flag, int v) { *flag = v; }
"""


def probe_run() -> None:
    import cupy as cp
    import numpy as np

    mod = cp.RawModule(code=PROBE_SRC)
    k_probe, k_marker, k_flag = mod.get_function("probe"), mod.get_function("marker"), mod.get_function("set_flag")
    NS = 1 << 15
    buf = cp.zeros(2 * NS + 2, dtype=cp.uint64)
    marks = cp.zeros(2, dtype=cp.uint64)
    flag = cp.zeros(1, dtype=cp.int32)
    pstream = cp.cuda.Stream(non_blocking=True)
    ts = torch.cuda.current_stream()
    tstream = cp.cuda.ExternalStream(ts.cuda_stream)
    def product(matmul, probed: bool, max_ns: int, wait_reset: bool = True):
        """One product between two marker kernels on its stream, with the probe beside it if ``probed`` (the probe
        stops at the flag set after the product, or after ``max_ns``). Returns the event time (ms), the markers'
        interval (ns), the probe's clock over the samples inside it (MHz, -1 without 3 of them), those samples and
        the probe's SM."""
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if probed:
            with tstream:
                k_flag((1,), (1,), (flag, cp.int32(0)))
            if wait_reset:
                tstream.synchronize()
            with pstream:
                k_probe((1,), (32,), (buf, cp.int32(NS), cp.uint64(max_ns), flag))
            time.sleep(0.0002)  # the probe is resident before the product is launched
        with tstream:
            k_marker((1,), (1,), (marks[0:1],))
        e0.record()
        matmul()
        e1.record()
        with tstream:
            k_marker((1,), (1,), (marks[1:2],))
            if probed:
                k_flag((1,), (1,), (flag, cp.int32(1)))
        torch.cuda.synchronize()
        pstream.synchronize()
        ms = e0.elapsed_time(e1)
        m0, m1 = (int(x) for x in cp.asnumpy(marks))
        mhz, n_in, smid = -1.0, 0, -1
        if probed:
            h = cp.asnumpy(buf)
            n = int(h[2 * NS]); smid = int(h[2 * NS + 1])
            g = h[0:2 * n:2].astype(np.int64); ck = h[1:2 * n:2].astype(np.int64)
            sel = (g >= m0) & (g <= m1)
            n_in = int(sel.sum())
            if n_in >= 3:
                gg, cc = g[sel] - g[sel][0], ck[sel] - ck[sel][0]
                mhz = float(np.polyfit(gg.astype(float), cc.astype(float), 1)[0] * 1e3)
        return ms, m1 - m0, mhz, n_in, smid

    rows = []
    chosen = [s for i, s in enumerate(sizes) if s[0] == "coarse" or i % 2 == 0]
    for dname, dt in dtypes:
        for sw, M, N, K in chosen:
            a, b, c, err = inputs(M, N, K, dt)
            for _ in range(2):
                torch.matmul(a, b, out=c)
            torch.cuda.synchronize()
            for r in range(2 * REPS):
                probed = r % 2 == 0
                time.sleep(0.001)
                ms, span, mhz, n_in, smid = product(lambda: torch.matmul(a, b, out=c), probed, 5_000_000)
                rows.append(dict(sweep=sw, dtype=dname, M=M, N=N, K=K, rep=r, probed=int(probed), time_ms=f"{ms:.5f}",
                                 marker_us=f"{span / 1e3:.2f}", samples_inside=n_in, probe_smid=smid,
                                 sm_mhz=f"{mhz:.0f}", rel_err=f"{err:.2e}"))
            pr = [r for r in rows[-2 * REPS:] if r["probed"]]
            print(sw, dname, M, N, K, "MHz", [r["sm_mhz"] for r in pr], "ms", [r["time_ms"] for r in rows[-2 * REPS:]],
                  flush=True)
    # sustained: bf16 8192^3 back to back for SUSTAIN_S seconds, then probed launches 0.2 ms apart
    a, b, c, err = inputs(8192, 8192, 8192, torch.bfloat16)
    t0 = time.time()
    i = 0
    while time.time() - t0 < float(os.environ.get("SUSTAIN_S", "6")):
        torch.matmul(a, b, out=c)
        i += 1
        if i % 8 == 0:
            torch.cuda.synchronize()
    for r in range(2 * REPS):
        ms, span, mhz, n_in, smid = product(lambda: torch.matmul(a, b, out=c), True, 20_000_000, wait_reset=False)
        rows.append(dict(sweep="sustained", dtype="bf16", M=8192, N=8192, K=8192, rep=r, probed=1,
                         time_ms=f"{ms:.5f}", marker_us=f"{span / 1e3:.2f}",
                         samples_inside=n_in, probe_smid=smid, sm_mhz=f"{mhz:.0f}", rel_err=f"{err:.2e}"))
        print("sustained", rows[-1], flush=True)
    with open(os.path.join(OUT, "probe13.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


if MODE == "sweep":
    sweep()
elif MODE == "probe":
    probe_run()
else:
    sys.exit(f"unknown mode {MODE}")
