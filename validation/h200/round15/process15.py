"""Round 15: block columns at almost-whole numbers a wave -> drift15.csv, model15.csv.

    python validation/h200/round15/process15.py [--pack traces15.tar.gz]   # ~5 min (the model's curves, cached); --pack: first store the device's traces as raw/traces15.npz

Per launch: clock, check, span, the partners' median start offset wave by wave (round 14's ``per_wave``) summarised by
tenth and over the launch; ncu's DRAM bytes of one more launch per size. Per size, gemmsim's own bytes (``model_gb``: lockstep
where ``column_drift_offsets`` holds the block columns in step, else its drifting run), the memory model lockstep, block columns 0.2 of a block apart (drifted), each
traced launch's own offsets put through the model's bytes-against-offset curve ("given the drift"), and round 14's
drift law applied as if the wave held a whole number of columns (``ceil(C)`` groups).
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
import tarfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "round5"), str(HERE.parent / "round12"), str(HERE.parent / "round14")]
import drift_law14 as dl  # noqa: E402
import process12 as p12  # noqa: E402

ROUND = "15"
NPZ = HERE / "raw" / "traces15.npz"
SIZES = (5600, 5632, 5696, 5760, 5888, 6144)
LAUNCH_SIZES = (5600, 5696, 5760, 5888, 5632, 6144)  # run_round15.sh's order
LAUNCHES_PER_SIZE = 2
GRID = (0.0, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.3)
CURVES = HERE / "curves15.json"


def ncu() -> dict:
    out = {}
    with tarfile.open(HERE / "raw" / f"ncu{ROUND}.tar.gz") as t:
        for m in t.getmembers():
            g = re.match(rf"ncu{ROUND}_(\d+)\.csv", m.name)
            if g:
                lines = t.extractfile(m).read().decode().splitlines()
                start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
                rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
                out[int(g[1])] = float(dict(zip(rows[0], rows[-1]))["dram__bytes_read.sum"].replace(",", ""))
    return out


def curves() -> dict:
    if CURVES.exists():
        return {int(k): v for k, v in json.loads(CURVES.read_text()).items()}
    out = {}
    for N in SIZES:
        out[N] = dl.model_curve(N, GRID)
        print(N, [round(b / 1e9, 2) for b in out[N]], flush=True)
    CURVES.write_text(json.dumps(out))
    return out


def model_own(N: int, curve) -> float:
    """What gemmsim itself gives (``simulate_gpu`` -> ``simulate_memory_drifting``): the lockstep run where
    ``column_drift_offsets`` holds the columns in step, else its eight parts of the launch at their middle wave's
    offset, each read off the bytes-against-offset curve (linear between grid points) instead of simulated."""
    import gemmsim.models.gpu_memory as gm
    import model_measured_schedule as mms

    m, spec, occ, L, l1 = mms.setup("naive", N, "column")
    off = gm.column_drift_offsets(m, spec, L, occ.blocks_per_sm)
    if off is None:
        return float(curve[0])
    mids = (np.arange(8) + 0.5) * len(off) / 8
    return float(np.mean(np.interp(np.interp(mids, np.arange(len(off)) + 0.5, off), GRID, curve)))


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--pack":
        p12.pack(argv[1:], NPZ)
    tr = p12.load12((NPZ,))
    lines = [ln for ln in (HERE / "raw" / f"launches{ROUND}.txt").read_text().splitlines() if ln.startswith("launch,")]
    keys = [f"{n}_column{t}" for n in LAUNCH_SIZES for t in ("", "_2")[:LAUNCHES_PER_SIZE]]
    assert len(lines) == len(keys)
    nc, cv = ncu(), curves()
    from gemmsim.machine import load_machine

    drift = load_machine("h200").column_drift
    rows, model = [], []
    offs: dict = {}
    for key, ln in zip(keys, lines):
        kv = dict(x.split("=", 1) for x in ln.split(",") if "=" in x)
        N = int(key.split("_")[0])
        assert int(ln.split(",")[1]) == N
        smid, start, end = tr[key]
        off = dl.per_wave(start, end, N)
        offs.setdefault(N, []).append(off)
        nw = len(off)
        tenth = [float(np.nanmedian(off[i * nw // 10:(i + 1) * nw // 10])) for i in range(10)]
        rows.append(dict(N=N, launch=2 if key.endswith("_2") else 1, blocks_per_column=N // 16,
                         columns_per_wave=round(1056 / (N // 16), 3), sm_mhz=int(kv["sm_mhz"]), max_rel_err=kv["max_rel_err"],
                         span_ms=float(kv["span_ms"]), offset_mean=round(float(np.nanmean(off)), 3),
                         **{f"offset_tenth{i + 1}": round(x, 3) for i, x in enumerate(tenth)}))
    for N in SIZES:
        T = N // 16
        C = 1056 / T
        given = [dl.launch_bytes_grid(GRID, np.where(np.isnan(o), np.nanmedian(o), o), cv[N]) for o in offs[N]]
        rate = drift.per_wave * (T / drift.reference_tiles) ** drift.exponent
        waves = -(-T * T // 1056)
        law = np.minimum(1 / np.ceil(C), rate * (np.arange(waves) + 0.5))
        meas = nc[N]
        own = model_own(N, cv[N])
        model.append(dict(N=N, columns_per_wave=round(C, 3), ncu_gb=round(meas / 1e9, 2),
                          model_gb=round(own / 1e9, 2), ratio_model=round(own / meas, 3),
                          model_lockstep_gb=round(cv[N][0] / 1e9, 2), ratio_lockstep=round(cv[N][0] / meas, 3),
                          model_drifted_gb=round(cv[N][GRID.index(0.2)] / 1e9, 2),
                          model_given_drift_gb=";".join(f"{g / 1e9:.2f}" for g in given),
                          model_law_whole_gb=round(dl.launch_bytes_grid(GRID, law, cv[N]) / 1e9, 2)))
    for name, rs in ((f"drift{ROUND}.csv", rows), (f"model{ROUND}.csv", model)):
        with (HERE / name).open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rs[0]))
            w.writeheader()
            w.writerows(rs)
    for r in rows:
        print(f"{r['N']} ({r['columns_per_wave']}) launch {r['launch']}: mean offset {r['offset_mean']:.3f}, tenths "
              + " ".join(f"{r[f'offset_tenth{i}']:.3f}" for i in range(1, 11)))
    for r in model:
        print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
