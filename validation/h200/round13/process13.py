"""Round 13: the SM clock inside tensor-core kernels -> clock13_mma.csv, clock13_cublas.csv, model13_cublas.csv.

    python validation/h200/round13/process13.py            # reads raw/raw13.tar.gz; ~1 min (the model, 88 sizes)

1. ncu's clock against the kernel's own: round 3's mma_pipe, each configuration's 20 timed launches (ncu rows
   5-24 of the configuration's 24 launches: one checked, three warm-ups, twenty timed) -- the median of ncu's
   sm__cycles_elapsed.avg.per_second against the median the kernels read themselves (clock64 / %globaltimer).
2. cuBLAS under ncu: per size and dtype, the median duration and clock of the three spaced launches; beside it the
   clock the probe read without a profiler (every size of the coarse sweep, every second of the fine one) and
   round 3's profiler-trace duration of the same size.
3. What the probe read without a profiler, and what it cost the products beside it; the sustained clock.
4. The model (`hopper_ws` with the tile and persistent grid cuBLAS ran, as ../round3/model_vs_measured_tc.py runs
   it) at each kernel's own clock, against the same launches' durations: Pearson and median predicted/measured;
   also at ncu's clock divided by part 1's median ncu / own ratio (ncu reads mma_pipe's clock 1-4 % high).
"""

from __future__ import annotations

import csv
import io
import statistics
import sys
import tarfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROUND3 = HERE.parent / "round3"
RAW = HERE / "raw" / "raw13.tar.gz"
sys.path.insert(0, str(HERE.parent))
from h200_io import number, raw_rows, write_rows  # noqa: E402


def member(name: str) -> str:
    with tarfile.open(RAW) as t:
        return t.extractfile(f"raw13/{name}").read().decode()


def ncu_rows(name: str) -> list[dict]:
    """The launches of one of the archive's ncu pages, the gpu__ and sm__ metrics as floats."""
    return [{k: number(v) if k.startswith(("gpu__", "sm__")) else v for k, v in r.items()}
            for r in raw_rows(member(name))]


def write(name: str, rows: list[dict]) -> None:
    write_rows(HERE / name, rows)


def mma_check() -> list[dict]:
    out = []
    for n in (4096, 8192):
        own = list(csv.DictReader(io.StringIO(member(f"mma13_{n}.csv"))))
        ncu = ncu_rows(f"ncu13_mma_{n}.csv")
        assert len(ncu) == 24 * len(own), (n, len(ncu), len(own))
        for i, r in enumerate(own):
            timed = ncu[24 * i + 4: 24 * i + 24]
            mhz = statistics.median(x["sm__cycles_elapsed.avg.per_second"] for x in timed) / 1e6
            us = statistics.median(x["gpu__time_duration.sum"] for x in timed) / 1e3
            out.append(dict(kernel=r["kernel"], stages=int(r["stages"]), M=n, own_mhz=float(r["sm_mhz"]),
                            ncu_mhz=round(mhz, 1), ratio=round(mhz / float(r["sm_mhz"]), 4), ncu_duration_us=round(us, 1),
                            rel_err=r["rel_err"]))
    return out


def cublas() -> list[dict]:
    seq = list(csv.DictReader(io.StringIO(member("sweep13_launches.csv"))))
    ncu = ncu_rows("ncu13_cublas.csv")
    assert len(ncu) == len(seq), (len(ncu), len(seq))
    probe = list(csv.DictReader(io.StringIO(member("probe13.csv"))))
    r3 = {(r["dtype"], r["sweep"], int(r["M"]), int(r["N"])): r for r in csv.DictReader((ROUND3 / "model_tc_cublas.csv").open())}
    groups: dict = {}
    for s, k in zip(seq, ncu):
        key = (s["dtype"], s["sweep"], int(s["M"]), int(s["N"]), int(s["K"]))
        g = groups.setdefault(key, dict(reps=[], err=s["rel_err"] or None, names=set()))
        g["names"].add(k["Kernel Name"])
        g.setdefault("grids", set()).add(k["Grid Size"])
        if s["what"] == "first" and s["rel_err"]:
            g["err"] = s["rel_err"]
        if s["what"] == "rep":
            g["reps"].append(k)
    out = []
    for (dt, sw, M, N, K), g in groups.items():
        reps = g["reps"]
        us = statistics.median(x["gpu__time_duration.sum"] for x in reps) / 1e3
        mhz = statistics.median(x["sm__cycles_elapsed.avg.per_second"] for x in reps) / 1e6
        pr = [float(p["sm_mhz"]) for p in probe if p["dtype"] == dt and p["sweep"] == sw and int(p["M"]) == M
              and int(p["N"]) == N and p["probed"] == "1" and float(p["sm_mhz"]) > 0]
        old = r3.get((dt, sw, M, N), {})
        (name,) = g["names"] if len(g["names"]) == 1 else (";".join(sorted(g["names"])),)
        (grid,) = g["grids"] if len(g["grids"]) == 1 else ("0",)
        ctas = int(np.prod([int(x) for x in grid.strip("()").split(",")]))
        out.append(dict(sweep=sw, dtype=dt, M=M, N=N, K=K, kernel=name, grid=ctas, kernel_us=round(us, 2), sm_mhz=round(mhz, 1),
                        mhz_min=round(min(x["sm__cycles_elapsed.avg.per_second"] for x in reps) / 1e6, 1),
                        mhz_max=round(max(x["sm__cycles_elapsed.avg.per_second"] for x in reps) / 1e6, 1),
                        probe_mhz=round(statistics.median(pr), 1) if pr else "",
                        round3_kernel_us=old.get("kernel_us", ""), round3_kernel=old.get("kernel", ""),
                        tflops=round(2.0 * M * N * K / (us * 1e-6) / 1e12, 1), rel_err=g["err"]))
    return out


def probe_summary() -> None:
    """What the probe read (no profiler) and what it cost the products it ran beside."""
    rows = list(csv.DictReader(io.StringIO(member("probe13.csv"))))
    g: dict = {}
    for r in rows:
        if r["sweep"] != "sustained":
            g.setdefault((r["dtype"], r["sweep"], r["M"], r["N"]), ([], []))[int(r["probed"])].append(float(r["time_ms"]))
    cost = sorted(statistics.median(b) / statistics.median(a) for a, b in g.values())
    print(f"\nprobe: a probed product takes {statistics.median(cost):.2f}x the unprobed one's event time (median of "
          f"{len(cost)} sizes, {cost[0]:.2f}-{cost[-1]:.2f})")
    sus = [r for r in rows if r["sweep"] == "sustained"]
    print("sustained (6 s of back-to-back bf16 8192^3, then probed products 0.2 ms apart): "
          f"{min(float(r['sm_mhz']) for r in sus):.0f}-{max(float(r['sm_mhz']) for r in sus):.0f} MHz, "
          f"{min(float(r['time_ms']) for r in sus):.2f}-{max(float(r['time_ms']) for r in sus):.2f} ms")


def model(rows: list[dict], ncu_over_own: float) -> list[dict]:
    sys.path.insert(0, str(ROUND3))
    from model_vs_measured_tc import machine_at, pearson  # noqa: E402

    from gemmsim.machine import load_machine
    from gemmsim.sim.gpu import simulate_gpu

    h = load_machine("h200")
    out = []
    for r in rows:
        M, N, K = r["M"], r["N"], r["K"]
        extra = {"ctas": r["grid"]} if r["grid"] else {}  # the persistent grid cuBLAS launched (ncu), an input like the tile
        at = simulate_gpu(machine_at(h, r["sm_mhz"]), "hopper_ws", M=N, N=M, K=K, dtype=r["dtype"],
                          kernel_name=r["kernel"], max_blocks=264, **extra)
        low = simulate_gpu(machine_at(h, r["sm_mhz"] / ncu_over_own), "hopper_ws", M=N, N=M, K=K, dtype=r["dtype"],
                           kernel_name=r["kernel"], max_blocks=264, **extra)
        out.append(dict(r, model_tflops=round(at["tflops"], 1), ratio=round(at["tflops"] / r["tflops"], 4),
                        model_tflops_own_clock=round(low["tflops"], 1), ratio_own_clock=round(low["tflops"] / r["tflops"], 4)))
    print("\ncuBLAS, hopper_ws at each kernel's own clock (ncu) against the same launches' durations:")
    for dt in ("fp16", "bf16"):
        for sw in ("coarse", "fine"):
            g = [r for r in out if r["dtype"] == dt and r["sweep"] == sw]
            p = pearson([r["model_tflops"] for r in g], [r["tflops"] for r in g])
            med = statistics.median(r["ratio"] for r in g)
            po = pearson([r["model_tflops_own_clock"] for r in g], [r["tflops"] for r in g])
            mo = statistics.median(r["ratio_own_clock"] for r in g)
            print(f"  {dt} {sw:6s} n={len(g):2d}  Pearson {p:+.2f}  median predicted/measured {med:.3f}  "
                  f"range {min(r['ratio'] for r in g):.2f}-{max(r['ratio'] for r in g):.2f}   "
                  f"[at ncu's clock / {ncu_over_own:.3f}: Pearson {po:+.2f}, median {mo:.3f}]")
    return out


def main() -> None:
    mm = mma_check()
    write("clock13_mma.csv", mm)
    print("mma_pipe: ncu's clock / the kernel's own, per configuration (20 timed launches each):")
    for r in mm:
        print(f"  {r['kernel']:18s} S={r['stages']} {r['M']}: own {r['own_mhz']:.0f}  ncu {r['ncu_mhz']:.0f}  ratio {r['ratio']:.4f}")
    rows = cublas()
    write("clock13_cublas.csv", rows)
    print("\ncuBLAS kernels' clock (ncu, spaced launches) by size:")
    for r in rows:
        print(f"  {r['dtype']} {r['sweep']:6s} {r['M']:5d} {r['N']:5d}  {r['kernel_us']:8.1f} us (round 3 {r['round3_kernel_us']:>6})  "
              f"{r['sm_mhz']:6.0f} MHz [{r['mhz_min']:.0f}-{r['mhz_max']:.0f}]  probe {r['probe_mhz']}  {r['tflops']:6.1f} TF/s  {r['kernel'][:44]}")
    probe_summary()
    own = statistics.median(r["ratio"] for r in mm)
    write("model13_cublas.csv", model(rows, own))


if __name__ == "__main__":
    main()
