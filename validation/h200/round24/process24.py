"""Round 24 (issue 11): raw/ -> home24.csv, asym24.csv, asym24c.csv, drift24.csv.

    python validation/h200/round24/process24.py          # ~1 min (six gemmsim runs of the tiled kernel, cached in
                                                         # asym_model24.json; the naive runs are grid24.json's)

* ``home24.csv``: the home L2 partition of every probed 4 KiB chunk (``raw/home24.npz``: SM 2's load latencies after
  SM 0 walked the chunks, in the order ``home24.cu`` probed them -- chunk c at byte c * 4096 + (c % 32) * 128, line l
  at l * 128): per probe set, the loads far (> 400 cycles), the chunks whose 32 lines agree, the within-page address
  bits whose flip flips the home, and how many 2 MiB pages one parity of those bits (and a constant per page) fits
  (the first probe of every 32 MiB left out: it also pays a TLB miss, 452-575 cycles where the chunk is near).
* ``asym24.csv``: ncu's counters of the tiled kernel per N, placement (round 24b: ``rand1``-``rand8``), order and
  repeat, with gemmsim's bytes and the row / column ratio of each.
* ``asym24c.csv``: round 24c, the naive kernel's bytes per N, placement and order (ncu), with gemmsim's (its default
  layout, round 3's runs) and the column / row ratio.
* ``drift24.csv``: per naive launch, traced and profiled together: the partners' mean offset, ncu's bytes of that
  same launch, the memory model given that launch's offsets (``round15/process15.py: given_pairs``) and gemmsim's own.
"""

from __future__ import annotations

import csv
import json
import re
import sys
import tarfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
sys.path[:0] = [str(H200.parents[1]), str(H200), str(H200 / "round5"), str(H200 / "round12"), str(H200 / "round14"),
                str(H200 / "round15"), str(H200 / "round19")]
import drift_law14 as dl  # noqa: E402
import model_grid19 as mg  # noqa: E402
import process12 as p12  # noqa: E402
import process15 as p15  # noqa: E402
from h200_io import number, raw_rows, write_rows  # noqa: E402

FAR_CYCLES = 400  # near hits 272-396 cycles (the control), far hits 420-770
PAGE_CHUNKS = 512  # 2 MiB pages of 4 KiB chunks
TLB_CHUNKS = 8192  # 32 MiB


def home() -> list[dict]:
    z = np.load(HERE / "raw" / "home24.npz")
    rows = []
    for key in z.files:
        far = (z[key] > FAR_CYCLES).astype(np.int64)
        row = dict(probe=key, loads=len(far), far_fraction=round(float(far.mean()), 5), chunks_uniform="")
        if "line" in key:
            per = far.reshape(-1, 32).sum(1)
            row["chunks_uniform"] = f"{int(((per == 0) | (per == 32)).sum())} of {len(per)}"
            far = far[::32]  # one line a chunk from here on
        c = np.arange(len(far))
        pages = len(far) // PAGE_CHUNKS
        flips = {}
        for b in range(9):  # address bits 12..20: chunk c against chunk c ^ (1 << b) of the same page
            flips[b + 12] = float(np.mean(far != far[c ^ (1 << b)]))
        mask = [b for b, f in flips.items() if f > 0.5]
        par = np.zeros(len(far), np.int64)
        for b in mask:
            par ^= (c >> (b - 12)) & 1
        keep = np.ones(len(far), bool)
        keep[::TLB_CHUNKS] = False  # the first probe of every 32 MiB also pays a TLB miss: near ones read 452-575
        fit = []
        for p in range(pages):
            s = slice(p * PAGE_CHUNKS, (p + 1) * PAGE_CHUNKS)
            agree = (par[s] == far[s])[keep[s]]
            fit.append(max(agree.mean(), 1 - agree.mean()))
        row.update(home_flip_bits=" ".join(map(str, mask)),
                   flip_rate_per_bit=" ".join(f"{b}:{f:.3f}" for b, f in flips.items()),
                   pages=pages, pages_fit_exactly=int(sum(f == 1.0 for f in fit)), worst_page_fit=round(float(min(fit)), 4))
        rows.append(row)
    write_rows(HERE / "home24.csv", rows)
    return rows


def ncu_rows(tar: str, pattern: str) -> dict:
    out = {}
    with tarfile.open(HERE / "raw" / tar) as t:
        for m in t.getmembers():
            g = re.fullmatch(pattern, m.name)
            if g:
                out[g.groups()] = raw_rows(t.extractfile(m).read().decode())[-1]
    return out


def gemmsim_tiled(N: int, layout: str, order: str, cache: dict) -> float | None:
    """gemmsim's DRAM bytes of the tiled kernel: ``sep`` as its default layout (A, B, C one after another), ``pad``
    with ``layout: {pad: 32}``; ``swap`` (B before A) and the random placements it cannot place, so None."""
    if layout == "swap" or layout.startswith("rand"):
        return None
    key = f"{N}_{layout}_{order}"
    if key not in cache:
        from gemmsim.machine import load_machine
        from gemmsim.sim.gpu import simulate_gpu

        lay = {"pad": 32} if layout == "pad" else None
        cache[key] = float(simulate_gpu(load_machine("h200"), "tiled_smem", M=N, N=N, K=N, dtype="fp32", raster=order,
                                        layout=lay)["dram_bytes_read"])
        (HERE / "asym_model24.json").write_text(json.dumps(cache, indent=0, sort_keys=True))
    return cache[key]


def asym() -> list[dict]:
    path = HERE / "asym_model24.json"
    cache = json.loads(path.read_text()) if path.exists() else {}
    nc, launches = {}, {}
    for tar in ("ncu_asym24.tar.gz", "ncu_asym24b.tar.gz"):  # 24b: the random placements
        nc.update(ncu_rows(tar, r"asym_(\d+)_(\w+?)_(row|column)_(\d)\.csv"))
        for ln in tarfile.open(HERE / "raw" / tar).extractfile("launches.txt").read().decode().splitlines():
            if ln.startswith("launch,"):
                f = ln.split(",")
                launches.setdefault((f[1], f[3], f[2]), []).append(dict(x.split("=", 1) for x in f if "=" in x))
    rows = []
    for (n, lay, order, rep), r in sorted(nc.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][3], kv[0][2] != "row")):
        N = int(n)
        sec = lambda m: number(r[m]) * 32 / 1e9  # noqa: E731
        lk = launches[(n, lay, order)][int(rep) - 1]
        model = gemmsim_tiled(N, lay, order, cache)
        rows.append(dict(N=N, placement=lay, order=order, repeat=int(rep), sm_mhz=int(lk["sm_mhz"]),
                         max_rel_err=lk["max_rel_err"], a_addr=lk["A"], b_addr=lk["B"], c_addr=lk["C"],
                         dram_gb=round(number(r["dram__bytes_read.sum"]) / 1e9, 4),
                         l2_hit_pct=round(number(r["lts__t_sector_hit_rate.pct"]), 2),
                         l1_to_l2_read_miss_gb=round(sec("lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"), 4),
                         fabric_gb=round(sec("lts__t_sectors_srcunit_ltcfabric.sum"), 4),
                         fabric_miss_gb=round(sec("lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum"), 4),
                         gemmsim_gb="" if model is None else round(model / 1e9, 4)))
    by = {(r["N"], r["placement"], r["repeat"], r["order"]): r for r in rows}
    for r in rows:
        row, col = by[(r["N"], r["placement"], r["repeat"], "row")], by[(r["N"], r["placement"], r["repeat"], "column")]
        r["row_over_column"] = round(row["dram_gb"] / col["dram_gb"], 3)
        r["gemmsim_row_over_column"] = "" if row["gemmsim_gb"] == "" else round(row["gemmsim_gb"] / col["gemmsim_gb"], 3)
    write_rows(HERE / "asym24.csv", rows)
    return rows


def naive_placement() -> list[dict]:
    """Round 24c: the naive kernel's DRAM bytes by N, placement and order (ncu), beside gemmsim's (its default layout,
    ../round3/model_order.csv) and the column / row ratio of each placement."""
    nc = ncu_rows("ncu_asym24c.tar.gz", r"asym_(\d+)_(\w+?)_(row|column)_1\.csv")
    launches = {}
    for ln in tarfile.open(HERE / "raw" / "ncu_asym24c.tar.gz").extractfile("launches.txt").read().decode().splitlines():
        if ln.startswith("launch,"):
            f = ln.split(",")
            launches[(f[1], f[3].removesuffix("_naive"), f[2])] = dict(x.split("=", 1) for x in f if "=" in x)
    model = {(int(r["N"]), r["order"]): float(r["model_dram_bytes_read"])
             for r in csv.DictReader((H200 / "round3" / "model_order.csv").open()) if r["kernel"] == "naive"}
    rows = []
    for (n, lay, order), r in sorted(nc.items(), key=lambda kv: (-int(kv[0][0]), kv[0][1], kv[0][2] != "row")):
        lk = launches[(n, lay, order)]
        rows.append(dict(N=int(n), placement=lay, order=order, sm_mhz=int(lk["sm_mhz"]), max_rel_err=lk["max_rel_err"],
                         a_addr=lk["A"], b_addr=lk["B"], c_addr=lk["C"],
                         dram_gb=round(number(r["dram__bytes_read.sum"]) / 1e9, 4),
                         l2_hit_pct=round(number(r["lts__t_sector_hit_rate.pct"]), 2),
                         gemmsim_gb=round(model[(int(n), order)] / 1e9, 4)))
    by = {(r["N"], r["placement"], r["order"]): r["dram_gb"] for r in rows}
    for r in rows:
        r["column_over_row"] = round(by[(r["N"], r["placement"], "column")] / by[(r["N"], r["placement"], "row")], 3)
    write_rows(HERE / "asym24c.csv", rows)
    return rows


#: The naive launches of run_round24.sh, in the order it ran them ("N launch").
ORDER24 = ("4288 1", "4224 1", "4288 2", "4352 1", "4416 1", "4288 3", "4224 2", "4352 2", "4416 2", "4288 4")


def drift(folder: Path = HERE, tag: str = "24", order: tuple = ORDER24) -> list[dict]:
    """Per naive launch traced and profiled together (round 24; round 26 calls it with its own folder): the partners'
    mean offset, ncu's bytes of that same launch, the memory model given the launch's offsets and gemmsim's own ->
    ``folder/drift{tag}.csv``. ``order``: the launches as the round's script ran them."""
    tr = p12.load12((folder / "raw" / f"traces{tag}.npz",))
    nc = {}
    with tarfile.open(folder / "raw" / f"ncu{tag}.tar.gz") as t:
        for m in t.getmembers():
            g = re.fullmatch(rf"ncu{tag}_(\d+)_(\d)\.csv", m.name)
            if g:
                nc[g.groups()] = raw_rows(t.extractfile(m).read().decode())[-1]
    grid = json.loads((folder / f"grid{tag}.json").read_text())
    lines = [ln for ln in (folder / "raw" / f"launches{tag}.txt").read_text().splitlines() if ln.startswith("launch,")]
    assert len(lines) == len(order)
    rows = []
    for spec, ln in zip(order, lines):
        n, k = spec.split()
        N = int(n)
        assert int(ln.split(",")[1]) == N
        kv = dict(x.split("=", 1) for x in ln.split(",") if "=" in x)
        smid, start, end = tr[f"{n}_column_{k}"]
        runs = grid[n]
        given = p15.given_pairs(dl.pairs(start, end, N), runs)
        meas = number(nc[(n, k)]["dram__bytes_read.sum"])
        own = mg.model_bytes(grid, N)
        off = dl.per_wave(start, end, N, np.mean)
        nw = len(off)
        rows.append(dict(N=N, launch=int(k), columns_per_wave=round(1056 / (N // 16), 3), sm_mhz=int(kv["sm_mhz"]),
                         max_rel_err=kv["max_rel_err"], span_ms=float(kv["span_ms"]),
                         offset_pair_mean=round(float(np.nanmean(off)), 3),
                         offset_pair_tenths=" ".join(f"{np.nanmean(off[i * nw // 10:(i + 1) * nw // 10]):.3f}"
                                                     for i in range(10)),
                         ncu_gb=round(meas / 1e9, 3), given_pairs_gb=round(given / 1e9, 3),
                         given_over_ncu=round(given / meas, 3), lockstep_gb=round(runs[repr(0.0)] / 1e9, 3),
                         gemmsim_gb=round(own / 1e9, 3), gemmsim_over_ncu=round(own / meas, 3)))
    rows.sort(key=lambda r: (r["N"], r["launch"]))
    write_rows(folder / f"drift{tag}.csv", rows)
    return rows


def main() -> int:
    for table in (home(), asym(), naive_placement(), drift()):
        for r in table:
            print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
