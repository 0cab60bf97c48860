"""Round 35 (issue 12), offline: does an unequal share of the L2 among SMs explain how round 34's launches end?

    python validation/h200/round35/drain35.py     # ~5 min; prints the correlations, writes nothing

A fluid model of one launch, not gemmsim's: 132 SMs, ``bps`` slots each, all filled at the start (breadth-first);
a block's work is 1 +- ``cv`` (normal); while C blocks run, a block on SM s progresses at speed[s] x min(1 / tlat,
C_full / C): the chip's L2 rate shared by the running blocks, no faster than a block alone (``tlat``: its time alone
over its time in a full launch). A finished block's slot takes the next block at once, SMs in id order. Output: the
launch's length over its steady pace (all slots full), against round 34's span_over_steady (20 launches per API).

Three variants:
* all SMs alike;
* round 34's 24 traced fast SMs faster by the ratio traced in round 30's launches of each configuration (mma.sync S = 1
  0.87 ... WMMA S = 1 0.97) -- an explanation, the ratios coming from GEMM traces of the same binaries;
* the same SMs faster by round 35's copy benchmark ratio (0.70, no GEMM), for every configuration.
tlat 0.6 at S = 1 (round 34's tail blocks alone: 0.56-0.68 of a median block), 0.45 at S >= 2; cv 0.03. These are
guesses of this sketch, not measured inputs.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from h200_io import agreement  # noqa: E402

SMS = 132
FAST34 = [10, 11, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 58, 59, 78, 79, 80, 81, 82, 83, 84, 85, 126, 127]
TRACED = {("mma", 1): 0.87, ("mma", 2): 0.80, ("mma", 3): 0.70, ("mma", 4): 0.73,  # round 30, 4096 and 8192
          ("wmma", 1): 0.97, ("wmma", 2): 0.76, ("wmma", 3): 0.71, ("wmma", 4): 0.74}
COPY = 0.70  # round 35, copy benchmark, all SMs, k = 5


def launch(nblocks: int, bps: int, speed: np.ndarray, tlat: float, cv: float, seed: int) -> float:
    rng = np.random.default_rng(seed)
    full = SMS * bps
    work = 1 + cv * rng.standard_normal(nblocks)
    free = np.full(SMS, bps)
    nxt, t = 0, 0.0
    rem, on = [], []
    for _ in range(bps):
        for s in range(SMS):
            if nxt < nblocks:
                rem.append(work[nxt]); on.append(s); free[s] -= 1; nxt += 1
    rem, on = np.array(rem), np.array(on)
    while len(rem):
        rate = speed[on] * min(1.0 / tlat, full / len(rem))
        dt = np.min(rem / rate)
        t += dt
        rem = rem - rate * dt
        done = rem <= 1e-9
        for s in on[done]:
            free[s] += 1
        rem, on = rem[~done], on[~done]
        add_r, add_s = [], []
        while nxt < nblocks and free.any():
            for s in range(SMS):
                if free[s] > 0 and nxt < nblocks:
                    add_r.append(work[nxt]); add_s.append(s); free[s] -= 1; nxt += 1
        if add_r:
            rem, on = np.concatenate([rem, add_r]), np.concatenate([on, np.array(add_s, dtype=int)])
    return t / (nblocks / (speed.sum() * bps))


def main() -> None:
    meas = {}
    with (HERE.parent / "round34" / "compare34.csv").open() as f:
        for r in csv.DictReader(f):
            meas[(r["api"], int(r["stages"]), int(r["N"]))] = (float(r["span_over_steady"]), int(r["blocks_per_sm"]))
    for label, ratio in (("all SMs alike", None), ("traced ratio per configuration", TRACED), ("copy benchmark ratio", COPY)):
        xs, ys = [], []
        for (api, S, N), (m, bps) in sorted(meas.items()):
            speed = np.ones(SMS)
            if ratio is not None:
                speed[FAST34] = 1 / (ratio[(api, S)] if isinstance(ratio, dict) else ratio)
            tl = 0.6 if S == 1 else 0.45
            xs.append(np.mean([launch(N, bps, speed, tl, 0.03, s) for s in range(4)]))
            ys.append(m)
        xs, ys = np.array(xs), np.array(ys)
        print(f"{label:32s} against round 34: {agreement(xs, ys)}")


if __name__ == "__main__":
    main()
