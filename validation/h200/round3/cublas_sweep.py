"""cuBLAS sweep on the H200 (issue 12): torch.matmul fp16 and bf16 (fp32 accumulation), kernel names, clocks.

Run on the device machine:  python3 cublas_sweep.py OUTDIR
Writes
  OUTDIR/cublas_sweep.csv   sweep,dtype,M,N,K,time_ms,tflops,time_min_ms,time_max_ms,reps,
                            mhz_before,mhz_after,kernel,kernels   (one row per size and dtype)
  OUTDIR/cublas_launches.csv every timed launch: sweep,dtype,M,N,K,rep,time_ms,mhz_before,mhz_after
  OUTDIR/cublas_sustain.csv  back-to-back bf16 8192^3 products for SUSTAIN_S seconds:
                            launch,t_s,time_ms,tflops,mhz_after (clock probe after every 8th launch)
  OUTDIR/cublas_trace.json   torch.profiler chrome trace of one product per size (kernel names)

Sizes: coarse M = N in 1024..8192 step 512 at K = 4096; fine N = 3840..4736 step 32 at M = K = 4096.
Inputs: torch.randn (never zeros), fresh per size. Checked against an fp32 matmul of the same inputs
(relative Frobenius error printed in the log). Timing: 3 warm-ups, then REPS launches, each between two
CUDA events, 1 ms host sleep between launches (spaced), median reported.
Clock: a 1-thread probe kernel (CuPy RawKernel on torch's stream) spins 20 us reading clock64 and
%globaltimer right before and right after each timed product: MHz = d clock64 / d ns * 1000.
"""

import json
import os
import statistics
import sys
import time

import torch

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
REPS = int(os.environ.get("REPS", "15"))
SUSTAIN_S = float(os.environ.get("SUSTAIN_S", "12"))
os.makedirs(OUT, exist_ok=True)
dev = torch.device("cuda")

probe = None
try:
    import cupy as cp

    _src = r"""
    extern "C" __global__ void probe(unsigned long long* out, int slot, unsigned long long spin_ns) {
      unsigned long long g0, g1, c0, c1;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
      c0 = clock64();
      do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1)); } while (g1 - g0 < spin_ns);
      c1 = clock64();
      out[2 * slot] = c1 - c0; out[2 * slot + 1] = g1 - g0;
    }"""
    _k = cp.RawKernel(_src, "probe")
    _buf = cp.zeros(2 * 64, dtype=cp.uint64)

    def probe(slot: int) -> None:
        with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            _k((1,), (1,), (_buf, cp.int32(slot), cp.uint64(20000)))

    def probe_mhz(slot: int) -> float:
        v = cp.asnumpy(_buf[2 * slot: 2 * slot + 2])
        return float(v[0]) / float(v[1]) * 1e3 if v[1] else -1.0
except Exception as e:  # noqa: BLE001
    print("clock probe unavailable:", repr(e), flush=True)


def clocked(fn):
    """Run fn between two clock probes; return (ms, mhz_before, mhz_after)."""
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if probe:
        probe(0)
    a.record()
    fn()
    b.record()
    if probe:
        probe(1)
    torch.cuda.synchronize()
    ms = a.elapsed_time(b)
    if probe:
        return ms, probe_mhz(0), probe_mhz(1)
    return ms, -1.0, -1.0


sizes = [("coarse", m, m, 4096) for m in range(1024, 8192 + 1, 512)]
sizes += [("fine", 4096, n, 4096) for n in range(3840, 4736 + 1, 32)]
dtypes = [("fp16", torch.float16), ("bf16", torch.bfloat16)]

rows, launches = [], []
t_start = time.time()
for dname, dt in dtypes:
    for sweep, M, N, K in sizes:
        a = torch.randn(M, K, device=dev, dtype=dt)
        b = torch.randn(K, N, device=dev, dtype=dt)
        c = torch.matmul(a, b)
        ref = torch.matmul(a.float(), b.float())
        err = float((c.float() - ref).norm() / ref.norm())
        for _ in range(3):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        ts, mb, ma = [], [], []
        for r in range(REPS):
            time.sleep(0.001)
            ms, m0, m1 = clocked(lambda: torch.matmul(a, b, out=c))
            ts.append(ms); mb.append(m0); ma.append(m1)
            launches.append((sweep, dname, M, N, K, r, f"{ms:.5f}", f"{m0:.0f}", f"{m1:.0f}"))
        med = statistics.median(ts)
        rows.append(dict(sweep=sweep, dtype=dname, M=M, N=N, K=K, time_ms=f"{med:.5f}",
                         tflops=f"{2.0 * M * N * K / (med * 1e-3) / 1e12:.1f}", time_min_ms=f"{min(ts):.5f}",
                         time_max_ms=f"{max(ts):.5f}", reps=REPS, mhz_before=f"{statistics.median(mb):.0f}",
                         mhz_after=f"{statistics.median(ma):.0f}", rel_err=f"{err:.2e}"))
        print(sweep, dname, M, N, K, rows[-1]["time_ms"], rows[-1]["tflops"], rows[-1]["mhz_after"], rows[-1]["rel_err"],
              flush=True)
print(f"timing done in {time.time() - t_start:.1f} s", flush=True)

# Kernel names: one product per size under the profiler, a marker kernel (a fill) between sizes.
names = {}
try:
    from torch.profiler import ProfilerActivity, profile

    marker = torch.empty(1, device=dev)
    tensors = []
    for dname, dt in dtypes:
        for sweep, M, N, K in sizes:
            tensors.append((dname, sweep, M, N, K, torch.randn(M, K, device=dev, dtype=dt), torch.randn(K, N, device=dev, dtype=dt)))
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        for (dname, sweep, M, N, K, a, b) in tensors:
            marker.fill_(1.0)
            torch.cuda.synchronize()
            torch.matmul(a, b)
            torch.cuda.synchronize()
        marker.fill_(1.0)
        torch.cuda.synchronize()
    path = os.path.join(OUT, "cublas_trace.json")
    prof.export_chrome_trace(path)
    ev = json.load(open(path))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    kern = sorted((e for e in ev if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    groups, cur = [], None
    for e in kern:
        if "fill" in e["name"].lower() or "FillFunctor" in e["name"]:
            if cur is not None:
                groups.append(cur)
            cur = []
        elif cur is not None:
            cur.append(e["name"])
    for (dname, sweep, M, N, K, _, _), g in zip(tensors, groups):
        names[(dname, sweep, M, N, K)] = g
    print("kernel groups:", len(groups), "sizes:", len(tensors), flush=True)
except Exception as e:  # noqa: BLE001
    print("profiler failed:", repr(e), flush=True)

with open(os.path.join(OUT, "cublas_sweep.csv"), "w") as f:
    cols = ["sweep", "dtype", "M", "N", "K", "time_ms", "tflops", "time_min_ms", "time_max_ms", "reps", "mhz_before",
            "mhz_after", "rel_err", "kernel", "kernels"]
    f.write(",".join(cols) + "\n")
    for r in rows:
        g = names.get((r["dtype"], r["sweep"], r["M"], r["N"], r["K"]), [])
        main = max(g, key=len) if g else ""
        gemm = [n for n in g if "gemm" in n.lower() or "sm90" in n.lower() or "cutlass" in n.lower()]
        r["kernel"] = '"' + (gemm[0] if gemm else main).replace('"', "'") + '"'
        r["kernels"] = '"' + " | ".join(g).replace('"', "'") + '"'
        f.write(",".join(str(r[c]) for c in cols) + "\n")
with open(os.path.join(OUT, "cublas_launches.csv"), "w") as f:
    f.write("sweep,dtype,M,N,K,rep,time_ms,mhz_before,mhz_after\n")
    for l in launches:
        f.write(",".join(map(str, l)) + "\n")

# Sustained tensor-core load: back-to-back bf16 8192^3 products, a clock probe after every 8th.
a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
c = torch.matmul(a, b)
torch.cuda.synchronize()
t0 = time.time()
with open(os.path.join(OUT, "cublas_sustain.csv"), "w") as f:
    f.write("launch,t_s,time_ms,tflops,mhz_after\n")
    i = 0
    while time.time() - t0 < SUSTAIN_S:
        ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ev0.record()
        for _ in range(8):
            torch.matmul(a, b, out=c)
        ev1.record()
        if probe:
            probe(2)
        torch.cuda.synchronize()
        ms = ev0.elapsed_time(ev1) / 8
        mhz = probe_mhz(2) if probe else -1.0
        f.write(f"{i},{time.time() - t0:.3f},{ms:.4f},{2 * 8192**3 / (ms * 1e-3) / 1e12:.1f},{mhz:.0f}\n")
        i += 8
print("sustain done", flush=True)
