"""Round 14: a drift law for the naive kernel's block columns, and the DRAM bytes it implies -> drift_law14.csv.

    python validation/h200/round14/drift_law14.py      # ~3 min (the memory model's offset-bytes curves, cached)

1. Each traced column-order launch of the original kernel at 4224, 5632 and 8448 (rounds 7 and 14, and round 14's
   extra-FMA launches) gives the partners' median start offset wave by wave (block tm of block column c against
   block tm of c + 1, by the later block's wave); its *rate* is the least-squares slope through the origin of that
   offset against the wave, over the waves before it first reaches 0.1 of a block.
2. The law ``rate = a(ex) (N / 5632)^p`` is fitted on the 4224 and 5632 launches (p shared, a per ex); 8448's rates
   are held out and predicted. Launches that reach 0.1 within three waves (ex = 16) are spread at once (rate inf).
3. Bytes: offsets ``delta(w) = min(1 / C, rate (w + 1/2))`` (C block columns a wave) put wave by wave through the
   memory model's DRAM bytes with block columns ``delta`` apart (``simulate_memory(stagger=delta C,
   stagger_group=N/16)``, sampled; linear between grid points) and averaged over the launch -- against ncu's bytes
   of other launches (round 7's ncu7*.csv; round 14's ncu pages, one launch per ex). Also each traced launch's own
   offsets through the same curve ("given the drift").
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
R7 = HERE.parent / "round7"
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "round5"), str(R7), str(HERE.parent / "round12"), str(HERE)]

import process7 as p7  # noqa: E402
import process12 as p12  # noqa: E402
import process14 as p14  # noqa: E402
from h200_io import write_rows  # noqa: E402

WAVE = 132 * 8
SIZES = (4224, 5632, 8448)
GRID = {4224: (0.0, 0.05, 0.1, 0.125, 0.15, 0.175, 0.2, 0.25),
        5632: (0.0, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 1 / 3),
        8448: (0.0, 0.05, 0.0625, 0.075, 0.0875, 0.1, 0.2, 0.5)}
CURVES = HERE / "curves14.json"


def pairs(start, end, N: int) -> tuple[np.ndarray, np.ndarray]:
    """Partner offsets (block times: block tm of block column c against block tm of c + 1) and the later block's
    wave, for the partners less than half a block apart (the others are in different waves)."""
    T = N // 16
    bt = float(np.median(end - start))
    t = (start / bt).reshape(T, T)
    off = np.abs(t[1:] - t[:-1])
    wave = (np.arange(1, T)[:, None] * T + np.arange(T)[None, :]) // WAVE
    keep = off < 0.5
    return off[keep], wave[keep]


def per_wave(start, end, N: int, how=np.median) -> np.ndarray:
    """The partners' offset wave by wave (``how``: median or mean over the wave's partners; nan where none)."""
    off, wave = pairs(start, end, N)
    out = np.full(((N // 16) ** 2 - 1) // WAVE + 1, np.nan)
    for w in np.unique(wave):
        out[w] = how(off[wave == w])
    return out


def rate(off: np.ndarray) -> float:
    """Offset per wave before the offset first reaches 0.1; inf where it does within three waves (spread at once)."""
    hit = np.flatnonzero(off >= 0.1)
    n = int(hit[0]) if len(hit) else len(off)
    if n < 3:
        return float("inf")
    w, y = np.arange(n) + 0.5, off[:n]
    ok = ~np.isnan(y)
    return float((w[ok] * y[ok]).sum() / (w[ok] ** 2).sum())


def traced() -> list[dict]:
    out = []
    for (n, order, ta, tb, rep), d in p7.launches():
        if order == "column" and not ta and not tb and n in SIZES:
            out.append(dict(N=n, ex=0, source=f"round 7, launch {rep}", off=per_wave(d[:, 2], d[:, 3], n)))
    tr = p12.load12((p14.NPZ,))
    for N, ex, tag in p14.RUNS:
        smid, start, end = tr[f"{N}_column_ex{ex}{tag}"]
        out.append(dict(N=N, ex=ex, source=f"round 14, launch {tag.strip('_') or 1}", off=per_wave(start, end, N)))
    for r in out:
        r["rate"] = rate(r["off"])
    return out


def model_curve(N: int, grid) -> list[float]:
    """The memory model's DRAM bytes read by the naive kernel in column order at N^3 with block columns ``delta``
    apart, for each ``delta`` of ``grid`` (sampled as the model samples)."""
    import model_measured_schedule as mms

    import gemmsim.models.gpu_memory as gm

    m, spec, occ, L, l1 = mms.setup("naive", N, "column")
    T = N // 16
    return [float(gm.simulate_memory(m, spec, L, occ.blocks_per_sm, l1, stagger=d * WAVE / T,
                                     stagger_group=T).counters["dram_bytes_read"]) for d in grid]


def curves() -> dict:
    if CURVES.exists():
        return {int(k): v for k, v in json.loads(CURVES.read_text()).items()}
    out = {}
    for N in SIZES:
        out[N] = model_curve(N, GRID[N])
        print(N, [round(b / 1e9, 2) for b in out[N]], flush=True)
    CURVES.write_text(json.dumps(out))
    return out


def launch_bytes(N: int, offsets: np.ndarray, curve) -> float:
    return launch_bytes_grid(GRID[N], offsets, curve)


def launch_bytes_grid(grid, offsets: np.ndarray, curve) -> float:
    """The launch's bytes: each wave's offset through the bytes-against-offset curve (linear between grid points)."""
    return float(np.mean(np.interp(offsets, grid, curve)))


def law_offsets(N: int, r: float) -> np.ndarray:
    waves = -(-(N // 16) ** 2 // WAVE)
    return np.minimum(1 / (WAVE / (N // 16)), r * (np.arange(waves) + 0.5))


def main() -> None:
    runs = traced()
    fit = [r for r in runs if r["N"] in (4224, 5632) and np.isfinite(r["rate"])]
    exs = sorted({r["ex"] for r in fit})
    # log rate = log a(ex) + p log(N / 5632): least squares, p shared
    X = np.array([[float(r["ex"] == e) for e in exs] + [np.log(r["N"] / 5632)] for r in fit])
    y = np.log([r["rate"] for r in fit])
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    a = {e: float(np.exp(c)) for e, c in zip(exs, coef[:-1])}
    p = float(coef[-1])
    print(f"law fitted on 4224 and 5632 ({len(fit)} launches): p = {p:.2f}; a(ex) per wave at 5632: "
          + ", ".join(f"ex {e}: {v:.4f}" for e, v in a.items()))
    for r in runs:
        r["law_rate"] = a[r["ex"]] * (r["N"] / 5632) ** p if r["ex"] in a else float("inf")
        print(f"  {r['N']} ex {r['ex']:2d} {r['source']:18s} rate {r['rate']:.4f}/wave  law {r['law_rate']:.4f}"
              f"{'   (held out)' if r['N'] == 8448 else ''}")
    cv = curves()
    rows = []
    ncu7 = [r for r in p7.ncu_launches() if r["order"] == "column" and r["N"] in SIZES]
    nc14 = p14.ncu()
    print("\nDRAM bytes read, GB: the law's offsets / each traced launch's own offsets, through the model's curve; ncu")
    for N in SIZES:
        for ex in sorted({r["ex"] for r in runs if r["N"] == N}):
            law = launch_bytes(N, law_offsets(N, a.get(ex, float("inf")) * (N / 5632) ** p), cv[N])
            given = [launch_bytes(N, np.where(np.isnan(r["off"]), np.nanmedian(r["off"]), r["off"]), cv[N])
                     for r in runs if r["N"] == N and r["ex"] == ex]
            meas = [r["dram_bytes_read"] for r in ncu7 if r["N"] == N and ex == 0]
            if (N, ex) in nc14:
                meas.append(nc14[(N, ex)]["dram__bytes_read.sum"])
            lo, hi = (min(meas), max(meas)) if meas else (float("nan"), float("nan"))
            ok = (hi / 1.5 <= law <= lo * 1.5) if meas else ""
            rows.append(dict(N=N, ex=ex, law_rate=round(a.get(ex, float("inf")) * (N / 5632) ** p, 5),
                             model_lockstep_gb=round(cv[N][0] / 1e9, 2), model_law_gb=round(law / 1e9, 2),
                             model_given_drift_gb=";".join(f"{g / 1e9:.2f}" for g in given),
                             ncu_min_gb=round(lo / 1e9, 2), ncu_max_gb=round(hi / 1e9, 2), ncu_launches=len(meas),
                             law_within_1_5x=ok))
            print(f"  {N} ex {ex:2d}: lockstep {cv[N][0] / 1e9:6.2f}  law {law / 1e9:6.2f}  given the drift "
                  f"{', '.join(f'{g / 1e9:.2f}' for g in given)}  ncu {lo / 1e9:.2f}-{hi / 1e9:.2f} ({len(meas)})"
                  f"  {'' if ok == '' else 'within 1.5x' if ok else 'NOT within 1.5x'}")
    write_rows(HERE / "drift_law14.csv", rows)
    keep = ("N", "ex", "source", "rate", "law_rate")
    write_rows(HERE / "drift_rates14.csv", [{k: (round(r[k], 5) if isinstance(r[k], float) else r[k]) for k in keep}
                                           for r in runs])


if __name__ == "__main__":
    main()
