"""Rounds 15-21: block columns near whole numbers a wave -> roundR/driftR.csv, roundR/modelR.csv.

    python validation/h200/round15/process15.py [R] [--pack TAR ...]   # R = 15 (default), 16, ..., 21
      # rounds 15-18: ~4-10 min the first time (the model's curves, then cached in roundR/curvesR.json);
      # from round 19 on the model's runs come first: python validation/h200/round19/model_grid19.py roundR/gridR.json N ...
      # --pack: first store the device's trace archive(s) as roundR/raw/tracesR.npz (lossless)

Per launch: clock, check, span, the partners' median start offset wave by wave (round 14's ``per_wave``) summarised by
tenth and over the launch, and the mean of the partners' offsets (``offset_pair_mean``); ncu's DRAM bytes of one more
launch per size. Per size, gemmsim's own bytes (``model_gb``: ``simulate_memory_drifting``, the weighted mean of the
memory model's runs stored by round19/model_grid19.py) and mean offset, the memory model lockstep, block columns 0.2
of a block apart (drifted), each traced launch's own offsets put through the model's bytes-against-offset curve
(wave medians: "given the drift"; every partner: "given the pairs"), and round 14's drift law applied as if the
wave held a whole number of columns (``ceil(C)`` groups).
"""

from __future__ import annotations

import json
import re
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

H200 = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(H200), str(H200 / "round5"), str(H200 / "round12"), str(H200 / "round14"), str(H200 / "round19")]
import drift_law14 as dl  # noqa: E402
import process12 as p12  # noqa: E402
from h200_io import number, raw_rows, write_rows  # noqa: E402


@dataclass(frozen=True)
class Round:
    number: int
    sizes: tuple  # the sizes, in the order the tables list them
    launch_sizes: tuple  # the order run_roundR.sh launched them
    launches_per_size: int
    grid: tuple  # offsets (block times) the model's bytes-against-offset curve is simulated at

    @property
    def dir(self) -> Path:
        return H200 / f"round{self.number}"

    @property
    def npz(self) -> Path:
        return self.dir / "raw" / f"traces{self.number}.npz"


ROUNDS = {r.number: r for r in (
    Round(15, (5600, 5632, 5696, 5760, 5888, 6144), (5600, 5696, 5760, 5888, 5632, 6144), 2,
          (0.0, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.3)),
    Round(16, (8384, 8576, 8896, 9392), (8384, 8576, 8896, 9392), 2, (0.0, 0.05, 0.1, 0.2)),
    Round(17, (5824, 6016, 6400, 8320, 9088, 9984), (5824, 6016, 6400, 8320, 9088, 9984), 1, (0.0, 0.05, 0.1, 0.2, 0.3)),
    Round(18, (5952, 6080, 6272, 10240, 10752), (5952, 6080, 6272, 10240, 10752), 1, (0.0, 0.05, 0.1, 0.2)),
    Round(19, (4288, 4352, 6208, 6528, 7680, 9728), (4288, 4352, 6208, 6528, 7680, 9728), 1,
          (0.0, 0.025, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2)),
    Round(20, (4288, 4416, 5248, 7936, 11264), (4288, 4416, 5248, 7936, 11264), 2,
          (0.0, 0.025, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2)),
    Round(21, (11136, 11392), (11136, 11392), 1, (0.0, 0.025, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2)),
)}


def model_runs(rnd: Round) -> dict:
    """The memory model's runs at ``simulate_memory_drifting``'s offsets for the round's sizes (round19/model_grid19.py:
    roundR/gridR.json; rounds 15-18 share round19/grid15_18.json, seeded with their curves' points, the same runs)."""
    path = H200 / "round19" / "grid15_18.json" if rnd.number <= 18 else rnd.dir / f"grid{rnd.number}.json"
    return json.loads(path.read_text())


def ncu(rnd: Round) -> dict:
    """{N: DRAM bytes read} of the ncu launch of each size."""
    out = {}
    with tarfile.open(rnd.dir / "raw" / f"ncu{rnd.number}.tar.gz") as t:
        for m in t.getmembers():
            g = re.match(rf"ncu{rnd.number}_(\d+)\.csv", m.name)
            if g:
                out[int(g[1])] = number(raw_rows(t.extractfile(m).read().decode())[-1]["dram__bytes_read.sum"])
    return out


def curves(rnd: Round) -> dict:
    """{N: the model's DRAM bytes at each offset of the round's grid}: from round 19 on, from the stored runs."""
    if rnd.number >= 19:
        runs = model_runs(rnd)
        return {N: [runs[str(N)][repr(float(d))] for d in rnd.grid] for N in rnd.sizes}
    path = rnd.dir / f"curves{rnd.number}.json"
    if path.exists():
        return {int(k): v for k, v in json.loads(path.read_text()).items()}
    out = {}
    for N in rnd.sizes:
        out[N] = dl.model_curve(N, rnd.grid)
        print(N, [round(b / 1e9, 2) for b in out[N]], flush=True)
    path.write_text(json.dumps(out))
    return out


def model_own(N: int, rnd: Round) -> float:
    """What gemmsim itself gives (``simulate_gpu`` -> ``simulate_memory_drifting``): the weighted mean of the memory
    model's runs at the offsets ``column_drift_weights`` gives for ``column_drift_offsets``' waves."""
    import model_grid19 as mg

    return mg.model_bytes(model_runs(rnd), N)


def model_offset_mean(N: int) -> float:
    """gemmsim's mean partner offset over the launch (``column_drift_offsets``; 0 where the columns cannot drift)."""
    import gemmsim.models.gpu_memory as gm
    import model_measured_schedule as mms

    m, spec, occ, L, _ = mms.setup("naive", N, "column")
    off = gm.column_drift_offsets(m, spec, L, occ.blocks_per_sm)
    return 0.0 if off is None else float(off.mean())


def given_pairs(pairs: tuple, runs: dict) -> float:
    """A traced launch's bytes given its partner offsets: each partner's offset through the model's runs (linear
    between their offsets, at most the largest), averaged over each wave's partners, then over the waves."""
    xs = sorted(float(k) for k in runs)
    ys = [runs[repr(x)] for x in xs]
    off, wave = pairs
    b = np.interp(off, xs, ys)
    n = np.bincount(wave)
    keep = n > 0
    return float(np.mean(np.bincount(wave, b)[keep] / n[keep]))


def main(argv: list[str]) -> int:
    rnd = ROUNDS[int(argv.pop(0))] if argv and argv[0].isdigit() else ROUNDS[15]
    if argv and argv[0] == "--pack":
        p12.pack(argv[1:], rnd.npz)
    tr = p12.load12((rnd.npz,))
    text = (rnd.dir / "raw" / f"launches{rnd.number}.txt").read_text()
    lines = [ln for ln in text.splitlines() if ln.startswith("launch,")]
    keys = [f"{n}_column{t}" for n in rnd.launch_sizes for t in ("", "_2")[:rnd.launches_per_size]]
    assert len(lines) == len(keys)
    nc, cv = ncu(rnd), curves(rnd)
    from gemmsim.machine import load_machine

    drift = load_machine("h200").column_drift
    rows, model = [], []
    offs: dict = {}
    pair_offs: dict = {}
    runs = model_runs(rnd)
    for key, ln in zip(keys, lines):
        kv = dict(x.split("=", 1) for x in ln.split(",") if "=" in x)
        N = int(key.split("_")[0])
        assert int(ln.split(",")[1]) == N
        smid, start, end = tr[key]
        off = dl.per_wave(start, end, N)
        offs.setdefault(N, []).append(off)
        pair_offs.setdefault(N, []).append(dl.pairs(start, end, N))
        nw = len(off)
        tenth = [float(np.nanmedian(off[i * nw // 10:(i + 1) * nw // 10])) for i in range(10)]
        rows.append(dict(N=N, launch=2 if key.endswith("_2") else 1, blocks_per_column=N // 16,
                         columns_per_wave=round(1056 / (N // 16), 3), sm_mhz=int(kv["sm_mhz"]), max_rel_err=kv["max_rel_err"],
                         span_ms=float(kv["span_ms"]), offset_mean=round(float(np.nanmean(off)), 3),
                         **{f"offset_tenth{i + 1}": round(x, 3) for i, x in enumerate(tenth)},
                         offset_pair_mean=round(float(np.nanmean(dl.per_wave(start, end, N, np.mean))), 3)))
    for N in rnd.sizes:
        T = N // 16
        C = 1056 / T
        given = [dl.launch_bytes_grid(rnd.grid, np.where(np.isnan(o), np.nanmedian(o), o), cv[N]) for o in offs[N]]
        rate = drift.per_wave * (T / drift.reference_tiles) ** drift.exponent
        waves = -(-T * T // 1056)
        law = np.minimum(1 / np.ceil(C), rate * (np.arange(waves) + 0.5))
        meas = nc[N]
        own = model_own(N, rnd)
        model.append(dict(N=N, columns_per_wave=round(C, 3), ncu_gb=round(meas / 1e9, 2),
                          model_gb=round(own / 1e9, 2), ratio_model=round(own / meas, 3),
                          model_lockstep_gb=round(cv[N][0] / 1e9, 2), ratio_lockstep=round(cv[N][0] / meas, 3),
                          model_drifted_gb=round(cv[N][rnd.grid.index(0.2)] / 1e9, 2),
                          model_given_drift_gb=";".join(f"{g / 1e9:.2f}" for g in given),
                          model_law_whole_gb=round(dl.launch_bytes_grid(rnd.grid, law, cv[N]) / 1e9, 2),
                          model_offset_mean=round(model_offset_mean(N), 3),
                          model_given_pairs_gb=";".join(f"{given_pairs(p, runs[str(N)]) / 1e9:.2f}" for p in pair_offs[N])))
    write_rows(rnd.dir / f"drift{rnd.number}.csv", rows)
    write_rows(rnd.dir / f"model{rnd.number}.csv", model)
    for r in rows:
        print(f"{r['N']} ({r['columns_per_wave']}) launch {r['launch']}: mean offset {r['offset_mean']:.3f}, tenths "
              + " ".join(f"{r[f'offset_tenth{i}']:.3f}" for i in range(1, 11)))
    for r in model:
        print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
