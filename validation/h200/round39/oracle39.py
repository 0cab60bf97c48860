"""Round 39 (issue 12), offline: would an SM that serves its oldest block first give round 34's launch ends? An oracle.

    python validation/h200/round39/oracle39.py        # ~20 min on 2 cores (round 36's captures in /tmp/capture36) -> oracle39.csv
    python validation/h200/round39/oracle39.py whole  # the 4096 launches as whole launches (captures), printed
    python validation/h200/round39/oracle39.py mean   # the same averaged over 8 realisations of the spread, ~15 min

``order39.py`` shows the H200's SMs sharing themselves out in dispatch order at some (api, S) and evenly at others.
Here round 34's 40 launches (64x64, M = K = 4096, N = 3712..4608) run through the dispatch model as shipped
(``sm_pipeline.dispatch_cycles``: caps, the chip's rate, 24 favoured SMs at load, the rule's spread of block times)
and through the same fluid model with each SM's rate shared among its running blocks by age: the k-th oldest gets a
weight 1 / t_k, t_k the traced first-wave time of an SM's k-th dispatched block (order39.csv, **round 30's launch at
4096 of the same api and S**: taken from the traces, so not a model; round 34's own traces are not used). Variants:
* ``shipped``: dispatch_cycles (checked against this script's own fluid loop with no age weights);
* ``age``: the age weights, every block one unit of work;
* ``age_spread``: the age weights and the rule's spread;
* ``copy_age`` / ``copy_age_spread``: the same with weights from the copy-only benchmark instead of the GEMM traces
  (copy39.csv, round 39b: the copy of the same tile at the GEMM's copy groups in flight and blocks per SM, a barrier
  per k-step) -- no GEMM timing or trace in them.
Each is the launch's cycles over its steady pace, against round 34's measured ``span_over_steady``.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
for d in ("", "round36", "round28", "round3"):
    sys.path.insert(0, str(H200 / d))
from h200_io import agreement, write_rows  # noqa: E402
import dispatch36  # noqa: E402  (round 36's captured step costs of round 34's launches)

VARIANTS = ("shipped", "age", "age_spread", "copy_age", "copy_age_spread")


def profiles() -> dict:
    """(api, S) -> weights by age rank (oldest first), from round 30's launches at 4096 in order39.csv."""
    out = {}
    with (HERE / "order39.csv").open() as f:
        for r in csv.DictReader(f):
            if r["round"] == "30" and int(r["N"]) == 4096:
                t = np.array([float(x) for x in r["by_rank"].split()])
                out[(r["api"], int(r["stages"]))] = (1.0 / t) / np.mean(1.0 / t)
    return out


def copy_profiles() -> dict:
    """(S, k) -> weights by age rank from the copy-only benchmark (copy39.csv, round 39b's device, a barrier per
    k-step as in the GEMM): the GEMM's S - 1 groups in flight after its commit (1 at S = 1) are copy39's S' groups,
    so the GEMM's (S, k) reads copy39's (max(S - 1, 1), k)."""
    out = {}
    with (HERE / "copy39.csv").open() as f:
        for r in csv.DictReader(f):
            if r["run"] == "39b" and r["barrier"] == "1":
                t = np.array([float(x) for x in r["by_rank"].split()])
                out[(int(r["S"]), int(r["k"]))] = (1.0 / t) / np.mean(1.0 / t)
    return out


def fluid(grid, sms, bps, first, cap, rate, weight, work, age_w=None, cohort=False):
    """sm_pipeline.fluid_dispatch without prologues, and with ``age_w``: an SM's rate (water_fill's per-block rate x its
    running blocks) shared among them by ``age_w[rank]``, rank 0 the block that started first (ties: slot order).
    ``cohort`` (round 40): the blocks an SM takes at one instant all get the work of the first of them (SM s's
    first-wave blocks that of block s), so an SM's co-started blocks end together and its slots refill together."""
    from gemmsim.models import sm_pipeline as sp
    rem = np.zeros((sms, bps))
    born = np.full((sms, bps), np.inf)
    nxt = 0
    for j in range(first):
        take = min(sms, grid - nxt)
        rem[:take, j] = work[:take] if cohort else work[nxt:nxt + take]
        born[:take, j] = j * 1e-9
        nxt += take
    t, eps = 0.0, 1e-9
    while True:
        run = rem > eps
        if not run.any():
            return t
        busy = run.sum(axis=1)
        c = np.array([cap(int(j)) if j else 0.0 for j in busy])
        r = sp.water_fill(busy.astype(float), c, weight, rate)
        rr = np.repeat(r[:, None], bps, axis=1)
        if age_w is not None:
            for s in np.flatnonzero(busy > 1):
                i = np.flatnonzero(run[s])
                i = i[np.argsort(born[s, i], kind="stable")]
                w = age_w[: len(i)]
                rr[s, i] = r[s] * len(i) * w / w.sum()
        rr = np.where(run, rr, 0.0)
        left = np.where(run, rem / np.where(rr > 0, rr, 1.0), np.inf)
        dt = float(left.min())
        t += dt
        rem = np.where(run, rem - rr * dt, rem)
        rem[rem <= eps] = 0.0
        if nxt < grid:
            for s in np.flatnonzero((rem == 0.0).any(axis=1)):
                slots = np.flatnonzero(rem[s] == 0.0)[: grid - nxt]
                rem[s, slots] = work[nxt] if cohort else work[nxt:nxt + len(slots)]
                born[s, slots] = t + np.arange(len(slots)) * 1e-9
                nxt += len(slots)
                if nxt >= grid:
                    break


def launch(c: dict) -> dict:
    """One captured launch as ``dispatch_cycles`` sets it up (DISPATCH_PROLOGUE off): the machine file's 24 favoured
    SMs drawing their share at load, the rule's spread; ``run(shift, age_w)`` is this script's fluid loop on it, the
    spread's sequence shifted by ``shift`` (0: dispatch_cycles' own), ``pace`` the steady pace's cycles."""
    from gemmsim.machine import load_machine
    from gemmsim.models import sm_pipeline as sp
    from gemmsim.models import tc_schedule as tcs

    h = load_machine("h200")
    cost, grid, sms, bps = c["cost"], c["grid"], c["sms"], c["bps"]
    spread = tcs.work_spread(bool(c["holds"]), bps)
    main = sp.pipeline_time(cost, bps).cycles
    free = sp.unloaded(cost)
    known = sorted({1, (1 + bps) // 2, bps})
    sm_rate = [j * max(1.0 / sp.pipeline_time(free, j).cycles, 1.0 / main) for j in known]
    caps = {j: float(np.interp(j, known, sm_rate)) / j for j in range(1, bps + 1)}
    weight = np.ones(sms)
    weight[(np.arange(h.l2_favoured_sms) * sms) // h.l2_favoured_sms] = 1.0 / sp.favoured_step_ratio(
        cost, bps, h.l2_favoured_share)

    def run(shift: float | None, age_w=None, cohort: bool = False) -> float:  # shift None: every block one unit of work
        work = np.ones(grid) if shift is None or not spread else \
            1.0 + spread * ((np.arange(grid) * sp.GOLDEN + shift) % 1.0 - 0.5)
        return fluid(grid, sms, bps, bps, caps.__getitem__, sms * bps / main, weight, work, age_w, cohort)

    shipped = sp.grid_cycles(cost, grid, sms, bps, h.l2_favoured_sms, h.l2_favoured_share, spread).cycles
    return dict(run=run, spread=spread, shipped=shipped, pace=grid * main / (sms * bps), bps=bps, grid=grid)


def evaluate(c: dict) -> dict:
    L = launch(c)
    run, shipped = L["run"], L["shipped"]
    check = run(0.0)
    if abs(check - shipped) > 1e-6 * shipped:
        raise SystemExit(f"{c['api']} S={c['stages']} N={c['N']}: this loop gives {check:.0f}, dispatch_cycles {shipped:.0f}")
    age_w = profiles()[(c["api"], c["stages"])]
    copy_w = copy_profiles()[(max(c["stages"] - 1, 1), L["bps"])]
    ends = dict(shipped=shipped, age=run(None, age_w), age_spread=run(0.0, age_w), copy_age=run(None, copy_w),
                copy_age_spread=run(0.0, copy_w))
    return dict(api=c["api"], stages=c["stages"], N=c["N"], grid=L["grid"], blocks_per_sm=L["bps"],
                spread=round(L["spread"], 4), **{k: round(v / L["pace"], 4) for k, v in ends.items()})


def whole() -> None:
    """The 4096 launches as whole launches: each variant's end times the model's steady pace (round 36's captures),
    S = 2..4 over S = 1 and S = 2 over S = 4, beside the H200's per SM cycle (round34/compare34.csv)."""
    import pickle

    from gemmsim.models import sm_pipeline as sp

    rows = {(r["api"], int(r["stages"])): r for r in csv.DictReader((HERE / "oracle39.csv").open()) if r["N"] == "4096"}
    with (H200 / "round34" / "compare34.csv").open() as f:
        per_clk = {(r["api"], int(r["stages"])): float(r["tflops"]) / float(r["sm_mhz"])
                   for r in csv.DictReader(f) if r["N"] == "4096"}
    for api in ("mma", "wmma"):
        cyc = {}
        for S in (1, 2, 3, 4):
            c = pickle.loads((dispatch36.CACHE / f"{api}_{S}_4096.pkl").read_bytes())
            pace = c["grid"] * sp.pipeline_time(c["cost"], c["bps"]).cycles / (c["sms"] * c["bps"])
            cyc[S] = {v: pace * float(rows[(api, S)][v]) for v in VARIANTS}
        cyc_h = {S: 1.0 / per_clk[(api, S)] for S in (1, 2, 3, 4)}
        for v, c in [(v, {S: cyc[S][v] for S in cyc}) for v in ("shipped", "age_spread", "copy_age_spread")] + [("H200", cyc_h)]:
            print(f"{api:4} {v:15s} " + " ".join(f"S{S}/S1 {c[S] / c[1]:.3f}" for S in (2, 3, 4)) + f"  S2/S4 {c[2] / c[4]:.3f}")


REALISATIONS = 8


def _mean_job(job: tuple) -> dict:
    """One 4096 launch's whole-launch cycles per variant, averaged over REALISATIONS shifts of the spread's sequence."""
    import pickle

    api, S = job
    c = pickle.loads((dispatch36.CACHE / f"{api}_{S}_4096.pkl").read_bytes())
    L = launch(c)
    ages = dict(shipped=None, age_spread=profiles()[(api, S)], copy_age_spread=copy_profiles()[(max(S - 1, 1), L["bps"])])
    return dict(api=api, stages=S, **{v: float(np.mean([L["run"](r / REALISATIONS, w) for r in range(REALISATIONS)]))
                                      for v, w in ages.items()})


def mean() -> None:
    """The 4096 launches' whole-launch cycles averaged over REALISATIONS (round 37: one realisation's end moves by up to
    2 %), S = 2..4 over S = 1 and S = 2 over S = 4, beside the H200's per SM cycle."""
    from multiprocessing import get_context

    with get_context("spawn").Pool(2) as pool:
        rows = pool.map(_mean_job, [(api, S) for api in ("mma", "wmma") for S in (1, 2, 3, 4)], chunksize=1)
    with (H200 / "round34" / "compare34.csv").open() as f:
        per_clk = {(r["api"], int(r["stages"])): float(r["tflops"]) / float(r["sm_mhz"])
                   for r in csv.DictReader(f) if r["N"] == "4096"}
    for api in ("mma", "wmma"):
        by = {r["stages"]: r for r in rows if r["api"] == api}
        for v in ("shipped", "age_spread", "copy_age_spread", "H200"):
            c = {S: (1.0 / per_clk[(api, S)] if v == "H200" else by[S][v]) for S in (1, 2, 3, 4)}
            tag = "per SM cycle" if v == "H200" else f"mean of {REALISATIONS}"
            print(f"{api:4} {v:15s} {tag}: " + " ".join(f"S{S}/S1 {c[S] / c[1]:.3f}" for S in (2, 3, 4))
                  + f"  S2/S4 {c[2] / c[4]:.3f}")


def main() -> None:
    rows = dispatch36.round34_rows(evaluate)
    write_rows(HERE / "oracle39.csv", rows)
    y = np.array([r["measured"] for r in rows])
    for v in VARIANTS:
        x = np.array([r[v] for r in rows])
        print(f"{v:11s} {agreement(x, y)}")
    for r in rows:
        print(f"{r['api']:4} S={r['stages']} N={r['N']}: measured {r['measured']:.3f}  " + "  ".join(f"{v} {r[v]:.3f}" for v in VARIANTS))


if __name__ == "__main__":
    {"whole": whole, "mean": mean}.get(sys.argv[1] if sys.argv[1:] else "", main)()
