"""Round 41 (issue 12): how much the L2 favours its favoured SMs at each load, from round 39's copy-only benchmark.

    python validation/h200/round41/ramp41.py      # -> ramp41.csv, ~20 s

Round 39's copy39.cu runs the 64x64 tile's copy alone on every SM, exactly k = 2..7 blocks each, S = 1..4 groups a
block, with and without a barrier a k-step (3 traced launches each, ``../round39/raw``). Here, for each configuration:
``ratio``, the mean block time of the favoured SMs over the others' (median of the launches). The favoured SMs are each
device's fastest in its saturated runs (S = 4 at its largest k, 5 or 4, both barrier settings; 24 on run 39b's device, 12 on run
``first``'s: validation/h200/round38). ``groups``: copy groups outstanding on an SM, k x S (a block holds S groups at
its commit and waits for its oldest; with nothing else to do it is nearly always waiting). ``gain``: (1 / ratio - 1)
over (share - 1), share = 1.41 the machine file's saturated favour (round 35), clipped to [0, 1].

The machine file's ``l2_favoured_ramp`` is the gain of run 39b's S = 1 rows with a barrier (the GEMM's k-loop has
one): one group a block, so k groups an SM. The other rows are held out: ``ramp_ratio`` is what the ramp predicts
for them at their ``groups``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "round39"))
from h200_io import write_rows  # noqa: E402
import copy39  # noqa: E402

SHARE = 1.41  # machines/h200.yaml l2_favoured_share (round 35)
FAVOURED = {"39b": 24, "first": 12}


def per_sm(b: list) -> np.ndarray:
    """Each SM's mean block time over the launch's median SM."""
    a = np.array(b, dtype=np.int64)
    dur = (a[:, 3] - a[:, 2]).astype(float)
    m = np.array([dur[a[:, 1] == s].mean() for s in range(copy39.SMS)])
    return m / np.median(m)


def table() -> list[dict]:
    out = []
    for tag, archive in copy39.RUNS:
        blocks = {}
        for ln in copy39.lines(archive):
            f = ln.split(",")
            if f[0] == "block" and f[1] != "S":
                blocks.setdefault(tuple(int(x) for x in f[1:5]), []).append([int(x) for x in f[5:]])
        kmax = max(key[2] for key in blocks if key[0] == 4)
        ref = np.median([per_sm(blocks[(4, bar, kmax, r)]) for bar in (0, 1) for r in (1, 2, 3)], axis=0)
        fav = np.zeros(copy39.SMS, bool)
        fav[np.argsort(ref)[:FAVOURED[tag]]] = True
        for S, bar, k in sorted({key[:3] for key in blocks}):
            r = [per_sm(blocks[(S, bar, k, rep)]) for rep in (1, 2, 3)]
            ratio = float(np.median([x[fav].mean() / x[~fav].mean() for x in r]))
            gain = min(max((1 / ratio - 1) / (SHARE - 1), 0.0), 1.0)
            out.append(dict(run=tag, S=S, barrier=bar, k=k, groups=S * k, ratio=round(ratio, 3), gain=round(gain, 3)))
    return out


def ramp(rows: list[dict]) -> list[tuple[int, float]]:
    """The fitted points: run 39b, S = 1, barrier -- (groups, gain), gains made non-decreasing."""
    pts = sorted((r["groups"], r["gain"]) for r in rows if r["run"] == "39b" and r["S"] == 1 and r["barrier"] == 1)
    g = np.maximum.accumulate([p[1] for p in pts])
    return [(p[0], round(float(x), 2)) for p, x in zip(pts, g)]


def main() -> None:
    rows = table()
    pts = ramp(rows)
    xs, fs = zip(*pts)
    for r in rows:
        r["ramp_ratio"] = round(1 / (1 + (SHARE - 1) * float(np.interp(r["groups"], xs, fs))), 3)
        r["fit"] = int(r["run"] == "39b" and r["S"] == 1 and r["barrier"] == 1)
    write_rows(HERE / "ramp41.csv", rows)
    print("l2_favoured_ramp:", [list(p) for p in pts])
    for run in ("39b", "first"):
        held = [r for r in rows if r["run"] == run and not r["fit"]]
        err = np.array([r["ramp_ratio"] - r["ratio"] for r in held])
        print(f"run {run}: {len(held)} held-out configurations, ratio error median {np.median(err):+.3f}, "
              f"rms {np.sqrt(np.mean(err ** 2)):.3f}, worst {err[np.argmax(abs(err))]:+.3f}")
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
