"""Round 32 (issue 12): round 31's tensor-core schedule at two sizes it was not built on, predicted before the run.

    python validation/h200/round32/predict32.py predict [mma|wmma]   # -> predictions32_<api>.csv (~6 min each)
    python validation/h200/round32/predict32.py compare              # after the run: compare32.csv, printed

Round 31's rule (``gemmsim.models.tc_schedule``) came from round 30's block-start traces at N = 4096 and 8192 (its
drift rate fitted on the mma.sync launches at 4096). Here the same binaries (round 28's mma.sync and WMMA kernels,
S = 1..4, three tiles) run at N = 2048 and 6144. Predicted per launch, at 1980 MHz (the comparison reruns the model at
each launch's own clock, as rounds 3 and 28 do): TFLOP/s, the DRAM bytes read (against ncu's), whether the blocks hold
in step, and the spread of every whole wave (5-95 % of its starts over the median block) -- 0 if they hold, else
min(``DRIFT_PER_WAVE`` x blocks per SM x w, 0.9). At 2048 the 128x128 tiles are one partial wave (256 blocks), so
the rule's first point (the first wave starts together) is all there is; the 64x64 tile 1.1-1.6 waves.
"""
from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "round28"))
import predict28 as p  # noqa: E402
from h200_io import write_rows  # noqa: E402

from gemmsim.machine import load_machine  # noqa: E402
from gemmsim.models import tc_schedule as tcs  # noqa: E402
from gemmsim.sim.gpu import simulate_gpu  # noqa: E402

SIZES = (2048, 6144)
TILES = ("mma_128x128_w2x2", "mma_128x128_w2x4", "mma_64x64_w2x2")


def params(api: str, kernel: str, S: int) -> dict:
    if api == "mma":
        return p.mma_params(kernel, S)
    inputs = {(r["kernel"], int(r["S"])): r for r in p.read(p.HERE / "inputs28.csv")}
    return p.wmma_params(inputs[(kernel, S)])


def run(h, api: str, kernel: str, S: int, n: int, mhz: float) -> dict:
    r = simulate_gpu(p.mv.machine_at(h, mhz), "tensorcore", M=n, N=n, K=n, dtype="fp16", **params(api, kernel, S))
    return dict(tflops=2.0 * n ** 3 / (r["time_s"] + p.mv.launch_overhead_s(p.mv.HERE)) / 1e12, row=r)


def predict(api: str) -> None:
    h = load_machine("h200")
    out = []
    for kernel in TILES:
        for S in (1, 2, 3, 4):
            for n in SIZES:
                m = run(h, api, kernel, S, n, p.MHZ)
                r = m["row"]
                bps = int(r["blocks_per_sm"])
                wave = h.sms * bps
                blocks = (n // int(r["BM"])) * (n // int(r["BN"]))
                spreads = [0.0 if r["tc_holds"] else min(tcs.DRIFT_PER_WAVE * bps * w, tcs.EVEN_SPREAD)
                           for w in range(blocks // wave)]
                out.append(dict(api=api, kernel=kernel, stages=S, M=n, blocks=blocks, blocks_per_sm=bps,
                                tflops_at_1980=round(m["tflops"], 1), dram_bytes_read=int(r["dram_bytes_read"]),
                                holds=int(r["tc_holds"]), restoring_gain=round(float(r["tc_restoring_gain"]), 4),
                                stagger_mean=round(float(r["tc_stagger_mean"]), 3),
                                wave_spreads=" ".join(f"{x:.2f}" for x in spreads), bound=r["bound"]))
                print(out[-1], flush=True)
    write_rows(HERE / f"predictions32_{api}.csv", out)


ARCHIVE = HERE / "raw" / "round32.tar.gz"


def _ncu_bytes() -> dict:
    """ncu's DRAM bytes read of one launch of every copy kernel: {(api, kernel, S, N): bytes}."""
    import tarfile

    from h200_io import number, raw_rows
    out = {}
    with tarfile.open(ARCHIVE) as tar:
        for api in ("mma", "wmma"):
            for n in SIZES:
                rows = raw_rows(tar.extractfile(f"raw32/ncu_{api}_{n}.csv").read().decode())
                names = [line.split(",") for line in tar.extractfile(f"raw32/ncu_{api}_{n}_launches.txt").read().decode().split()
                         if line.startswith("ncu_launch")]
                assert len(rows) == len(names) == 24, (api, n, len(rows), len(names))
                for r, (_, kernel, copy, S) in zip(rows, names):
                    if copy == "copy=1":
                        out[(api, kernel, int(S[2:]), n)] = number(r["dram__bytes_read.sum"])
    return out


def _cycles() -> dict:
    """Every timed launch's SM cycles (time x its clock) per (api, kernel, N, S), for the ranking with ties."""
    import io
    import tarfile
    cyc = {}
    with tarfile.open(ARCHIVE) as tar:
        for api in ("mma", "wmma"):
            for n in SIZES:
                for r in csv.DictReader(io.TextIOWrapper(tar.extractfile(f"raw32/launches_{api}_{n}.csv"))):
                    if r["copy"] == "1":
                        cyc.setdefault((api, r["kernel"], n, int(r["stages"])), []).append(
                            float(r["time_ms"]) * float(r["sm_mhz"]))
    return cyc


def _model_at(job: tuple) -> float:
    api, kernel, S, n, mhz = job
    return run(load_machine("h200"), api, kernel, S, n, mhz)["tflops"]


def trace_modules() -> tuple:
    """(drift31, process30): round 31's wave spreads and round 30's trace reader, from their folders."""
    sys.path.insert(0, str(HERE.parent / "round30"))
    sys.path.insert(0, str(HERE.parent / "round31"))
    import drift31
    import process30
    return drift31, process30


def by_launch(folder: Path, stem: str) -> dict:
    """{(api, kernel, S, M): row} from ``folder``/<stem>_<api>.csv for the APIs whose file exists."""
    out = {}
    for api in ("mma", "wmma"):
        path = folder / f"{stem}_{api}.csv"
        if path.exists():
            for r in csv.DictReader(path.open()):
                out[(api, r["kernel"], int(r["stages"]), int(r["M"]))] = r
    return out


def compare() -> None:
    """The predictions and the model at each launch's clock against the run: compare32.csv, summary printed."""
    from multiprocessing import Pool

    drift31, process30 = trace_modules()
    pred = by_launch(HERE, "predictions32")
    traced = [r for r in process30.launches(ARCHIVE, SIZES, "32") if r["copy"] == "1"]
    ncu = _ncu_bytes()
    jobs = [(r["api"], r["kernel"], int(r["stages"]), int(r["M"]), float(r["sm_mhz"])) for r in traced]
    with Pool(2) as pool:
        model = pool.map(_model_at, jobs)
    rows = []
    for r, job, tf in zip(traced, jobs, model):
        key = job[:4]
        pr = pred[key]
        x = drift31.wave_spreads(r)
        held = (x[-1] < drift31.HELD) if len(x) >= 3 else ""
        rows.append(dict(api=key[0], kernel=key[1], stages=key[2], M=key[3], sm_mhz=job[4], blocks_per_sm=r["blocks_per_sm"],
                         measured_tflops=float(r["tflops"]), model_tflops=round(tf, 1), ratio=round(tf / float(r["tflops"]), 3),
                         predicted_ratio_at_1980=round(float(pr["tflops_at_1980"]) / float(r["tflops_at_1980"]), 3),
                         ncu_dram_bytes_read=int(ncu[key]), model_dram_bytes_read=int(pr["dram_bytes_read"]),
                         bytes_over_ncu=round(int(pr["dram_bytes_read"]) / ncu[key], 3),
                         model_holds=int(pr["holds"]), measured_held=("" if held == "" else int(held)),
                         measured_wave_spreads=" ".join(f"{v:.2f}" for v in x),
                         predicted_wave_spreads=pr["wave_spreads"]))
    write_rows(HERE / "compare32.csv", rows)

    cyc = _cycles()
    for api in ("mma", "wmma"):
        sel = [x for x in rows if x["api"] == api]
        e = [abs(x["ratio"] - 1) for x in sel]
        print(f"{api}: model / measured at each launch's clock: within 10 % {sum(v <= 0.10 for v in e)} of {len(e)} "
              f"(median {statistics.median(e):.1%}); at 1980 MHz as predicted "
              f"{sum(abs(x['predicted_ratio_at_1980'] - 1) <= 0.10 for x in sel)} of {len(sel)}")
        for n in SIZES:
            part = [x for x in sel if x["M"] == n]
            b = [x["bytes_over_ncu"] for x in part]
            print(f"  N={n}: within 10 % {sum(abs(x['ratio'] - 1) <= 0.10 for x in part)} of {len(part)}; DRAM bytes / ncu "
                  f"median {statistics.median(b):.2f}, {min(b):.2f}-{max(b):.2f}, within 0.8-1.25x {sum(0.8 <= v <= 1.25 for v in b)}")
        for x in sel:
            print(f"  {x['kernel']:18s} {x['M']} S={x['stages']} {x['sm_mhz']:5.0f} MHz  measured {x['measured_tflops']:6.1f}  "
                  f"model {x['model_tflops']:6.1f}  ratio {x['ratio']:.3f}  bytes/ncu {x['bytes_over_ncu']:.2f}  holds "
                  f"model {x['model_holds']} H200 {x['measured_held']}  waves {x['measured_wave_spreads'][:48]}")
        # the S order with ties, as round 28 counts it
        p.rank_groups(api, {k[1:]: v for k, v in cyc.items() if k[0] == api},
                      {(x["kernel"], x["M"], x["stages"]): x["sm_mhz"] / x["model_tflops"] for x in sel})
    held = [x for x in rows if x["measured_held"] != ""]
    print(f"hold in step, model against the traces (launches of >= 3 whole waves): "
          f"{sum(x['model_holds'] == x['measured_held'] for x in held)} of {len(held)}")


def repeat() -> None:
    """Round 32b: the 2048 launches timed again (alternated, WMMA first, twice per build) beside round 32's, per SM cycle
    (TFLOP/s at 1980 MHz, each launch's own clock) against the prediction at 1980 -> repeat32.csv, printed."""
    import io
    import tarfile
    runs = {}
    for path, tag, names in ((ARCHIVE, "raw32", ("mma_2048", "wmma_2048")),
                             (HERE / "raw" / "round32b.tar.gz", "raw32b",
                              ("run1_wmma_2048", "run2_mma_2048", "run3_wmma_2048", "run4_mma_2048"))):
        with tarfile.open(path) as tar:
            for name in names:
                api = name.split("_")[-2]
                for r in csv.DictReader(io.TextIOWrapper(tar.extractfile(f"{tag}/{name}.csv"))):
                    if r["copy"] == "1":
                        runs.setdefault((api, r["kernel"], int(r["stages"])), []).append(float(r["tflops_at_1980"]))
    rows = []
    for (api, kernel, S), v in sorted(runs.items()):
        pr = float(next(r for r in csv.DictReader((HERE / f"predictions32_{api}.csv").open())
                        if (r["kernel"], int(r["stages"]), int(r["M"])) == (kernel, S, 2048))["tflops_at_1980"])
        med = statistics.median(v)
        rows.append(dict(api=api, kernel=kernel, stages=S, runs=len(v), measured_at_1980=" ".join(f"{x:.1f}" for x in v),
                         spread=round((max(v) - min(v)) / med, 3), predicted_at_1980=pr, ratio_to_median=round(pr / med, 3)))
        print(rows[-1])
    write_rows(HERE / "repeat32.csv", rows)
    for api in ("mma", "wmma"):
        sel = [r for r in rows if r["api"] == api]
        print(f"{api} at 2048, prediction / median of {sel[0]['runs']} runs: within 10 % "
              f"{sum(abs(r['ratio_to_median'] - 1) <= 0.10 for r in sel)} of {len(sel)}, "
              f"ratios {min(r['ratio_to_median'] for r in sel):.2f}-{max(r['ratio_to_median'] for r in sel):.2f}; "
              f"run-to-run spread up to {max(r['spread'] for r in sel):.0%}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["predict"]:
        for api in sys.argv[2:] or ["mma", "wmma"]:
            predict(api)
    elif sys.argv[1:2] == ["compare"]:
        compare()
    elif sys.argv[1:2] == ["repeat"]:
        repeat()
