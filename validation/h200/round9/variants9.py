"""Round 9's S-sweep variants (../round3/MODEL_TC.md, round 9; summary in variants9.csv), reproducible:

    python validation/h200/round9/variants9.py MODE      # ~2-3 min each; prints the summary line, the ranking, each row

The model at each launch's own clock (as model_vs_measured_tc.py's stages part, without its sustained-clock twin), with
the machine file's round-9 fields switched per MODE and, for the diagnostics, the memory model's traffic replaced by
ncu's counts on the GEMMs themselves (round 8's raw/ncu_mma_*.csv.gz: DRAM bytes and tag lookups per request of each
launch -- a decomposition of the error, never the model). MODE is a '+'-joined list of:
  none      round 8's model (the round-9 fields null)
  look      the ceiling as a lookup rate (async_copy_l2_lookups_per_request_padded_rows = 1.036)
  port      the port at the SM's path (async_copy_bytes_per_clk_padded_rows, PORT = 27.0 or port=26.5) + Little's law
  ncudram   diagnostic: ncu's DRAM bytes (the load latency from ncu's misses)
  nculook   diagnostic: ncu's lookups per request in place of the memory model's lookups per sector
  chiphit   diagnostic: the latency from the memory model's chip hit rate
e.g. `look+port` is the committed model; `look+port+ncudram+nculook` the last diagnostic row.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "round3"))
import model_vs_measured_tc as T  # noqa: E402

import gemmsim.sim.gpu as G  # noqa: E402
from gemmsim.machine import load_machine  # noqa: E402
from gemmsim.sim.gpu import simulate_gpu  # noqa: E402

TILES = {"mma_128x128_w2x4": "128x128_w8", "mma_64x64_w2x2": "64x64_w4", "mma_128x128_w2x2": "128x128_w4"}


def ncu_traffic() -> dict:
    """(tile, S, size) -> (DRAM bytes read, L2 tag lookups per read request) of round 3's GEMMs (round 8's ncu pages)."""
    out = {}
    names = ["128x128_w8"] * 4 + ["64x64_w4"] * 4 + ["128x128_w4"] * 4  # mma_pipe's variant order
    for size in (4096, 8192):
        with gzip.open(HERE.parent / "round8" / "raw" / f"ncu_mma_{size}.csv.gz", "rt") as f:
            rows = list(csv.reader(io.StringIO(f.read())))
        h = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
        hdr = rows[h]
        for i, d in enumerate(d for d in rows[h + 1:] if d and d[0]):
            g = lambda m: float(d[hdr.index(m)].replace(",", ""))  # noqa: E731
            out[(names[i], i % 4 + 1, size)] = (g("dram__bytes_read.sum"),
                                                g("lts__t_tag_requests.sum") / g("lts__t_requests_srcunit_tex_op_read.sum"))
    return out


def run(mode: str) -> list[dict]:
    parts = set(mode.split("+"))
    port = next((float(p.split("=")[1]) for p in parts if p.startswith("port=")), 27.0)
    h = load_machine("h200").model_copy(update={
        "async_copy_l2_lookups_per_request_padded_rows": 1.036 if "look" in parts else None,
        "async_copy_bytes_per_clk_padded_rows": port if any(p.startswith("port") for p in parts) else None})
    traffic = ncu_traffic() if parts & {"ncudram", "nculook"} else {}
    cur = {}
    orig = G.simulate_memory

    class Res:
        def __init__(self, c):
            self.counters = c

    def patched(m, spec, layout, *a, **k):
        c = dict(orig(m, spec, layout, *a, **k).counters)
        if "chiphit" in parts:
            c["l2_hit_rate"] = c["l2_chip_hit_rate"]
        if traffic:
            dram, per = traffic[cur["key"]]
            if "ncudram" in parts:
                c["dram_bytes_read"] = dram
                c["l2_hit_rate"] = 1 - dram / (c["l2_sectors_read"] * 32)
            if "nculook" in parts:
                c["l2_lookups"] = per * c["l2_sectors_read"]
        return Res(c)

    G.simulate_memory = patched
    try:
        launch = T.launch_overhead_s(T.HERE)
        executed, traces, ctraces = T.executed_counts(), T.fragment_traces(), T.copy_traces()
        out = []
        for r in T.read(T.HERE / "mma_pipeline.csv"):
            name = r["kernel"]
            wm, wn = T.WARP_GRID[name]
            BM, BN, BK, S = (int(r[k]) for k in ("BM", "BN", "BK", "stages"))
            M, N, K = (int(r[k]) for k in ("M", "N", "K"))
            cur["key"] = (TILES[name], S, M)
            compute, copy = executed[(name, S)]
            params = dict(BM=BM, BN=BN, BK=BK, WM=BM // wm, WN=BN // wn, stages=S, regs=int(r["regs"]), pad=8,
                          warp_instructions_per_step=compute, warp_copy_instructions_per_step=copy, max_blocks=264,
                          fragment_trace=traces.get((name, 1, S)), copy_trace=ctraces.get((name, S)))
            mhz = float(r["sm_mhz"])
            at = simulate_gpu(T.machine_at(h, mhz), "tensorcore", M=M, N=N, K=K, dtype="fp16", **params)
            row = dict(kernel=name, stages=S, M=M, sm_mhz=mhz, measured_tflops=float(r["tflops"]),
                       model_tflops=2.0 * M * N * K / (at["time_s"] + launch) / 1e12, at=at)
            row["ratio"] = row["model_tflops"] / row["measured_tflops"]
            out.append(row)
        return out
    finally:
        G.simulate_memory = orig


def summary(rows: list[dict], label: str) -> None:
    errs = [r["ratio"] - 1 for r in rows]
    groups = {}
    for r in rows:
        groups.setdefault((r["kernel"], r["M"]), []).append(r)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ok = T.rank_with_ties(groups, T.tie_threshold(T.HERE), T.round4_launches())
    print(f"{label}: within 10 %: {sum(abs(e) <= 0.10 for e in errs)} of {len(rows)}, median "
          f"{statistics.median(abs(e) for e in errs):.1%}, worst {max(errs, key=abs):+.1%}; ranking {ok} of {len(groups)}")
    print("\n".join(buf.getvalue().strip().splitlines()[1:]))
    for r in sorted(rows, key=lambda r: (r["kernel"], r["M"], r["stages"])):
        a = r["at"]
        print(f"  {r['kernel'][4:]:14s} {r['M']} S={r['stages']} {r['ratio']:.3f} step {a.get('pipe_step_clk', 0):6.0f} "
              f"latency {a.get('pipe_latency_clk', 0):5.0f} queue {a.get('pipe_queue_wait_clk', 0):5.0f} "
              f"copy wait {a.get('pipe_copy_wait_clk', 0):5.0f} rho_l2 {a.get('pipe_rho_l2', 0):.2f}")


if __name__ == "__main__":
    m = sys.argv[1] if len(sys.argv) > 1 else "look+port"
    summary(run(m), m)
