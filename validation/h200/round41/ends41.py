"""Round 41 (issue 12), offline: the model with the L2's favour growing with the load (``l2_favoured_ramp``) against
data the ramp was not built from -- round 38's traced favour and the launch ends of rounds 34 and 40b.

    python validation/h200/round41/ends41.py   # ~5 min on 2 cores (captures in /tmp/capture36) -> favour41.csv, ends41.csv

* ``favour41.csv``: for the 64x64 tile at M = N = K = 4096, both APIs, S = 1..4 -- the copy groups outstanding on an SM
  (``sm_pipeline.copy_groups_outstanding``), the share a favoured SM draws there, and its step over the others'
  (``favoured_step_ratio``) before (the whole share, round 38's mechanism) and now, beside the traces' (favoured38.csv:
  rounds 30, 35b and 38b; 1.0 where no SM is favoured).
* ``ends41.csv``: each launch's end over its steady pace, the model's one realisation as it ships, before this round
  (``l2_favoured_ramp`` None: round 40's model, checked against the stored column) and now, beside the H200's: round
  34's 40 launches (``../round40/oracle40.csv``) and round 40b's 20 new S <= 2 launches (``../round40/model40b.csv``).
"""
from __future__ import annotations

import csv
import pickle
import sys
from multiprocessing import get_context
from pathlib import Path

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
for d in ("", "round36"):
    sys.path.insert(0, str(H200 / d))
from h200_io import agreement, write_rows  # noqa: E402
import dispatch36  # noqa: E402


def stored() -> list[dict]:
    """The launches with the H200's end and round 40's model: (source, api, S, N, measured, round 40's model)."""
    out = []
    with (H200 / "round40" / "oracle40.csv").open() as f:
        out += [dict(source="34", api=r["api"], stages=int(r["stages"]), N=int(r["N"]), measured=float(r["measured"]),
                     round40=float(r["model"])) for r in csv.DictReader(f)]
    with (H200 / "round40" / "model40b.csv").open() as f:
        out += [dict(source="40b", api=r["api"], stages=int(r["stages"]), N=int(r["N"]), measured=float(r["measured"]),
                     round40=float(r["now"])) for r in csv.DictReader(f)]
    return out


def ends(row: dict) -> dict:
    from gemmsim.machine import load_machine
    from gemmsim.models import sm_pipeline as sp
    from gemmsim.models import tc_schedule as tcs

    h = load_machine("h200")
    c = pickle.loads((dispatch36.CACHE / f"{row['api']}_{row['stages']}_{row['N']}.pkl").read_bytes())
    cost, grid, sms, bps = c["cost"], c["grid"], c["sms"], c["bps"]
    pace = grid * sp.pipeline_time(cost, bps).cycles / (sms * bps)
    spread = tcs.work_spread(bool(c["holds"]), bps)
    run = {label: sp.grid_cycles(cost, grid, sms, bps, h.l2_favoured_sms, h.l2_favoured_share, spread,
                                 h.sm_even_copy_groups, ramp).cycles / pace
           for label, ramp in (("before", None), ("now", h.l2_favoured_ramp))}
    if abs(run["before"] - row["round40"]) > 2e-4:
        raise SystemExit(f"{row}: before {run['before']:.4f} is not round 40's stored model")
    return dict(row, groups=round(sp.copy_groups_outstanding(cost, bps), 2),
                before=round(run["before"], 4), now=round(run["now"], 4))


def favour(key: tuple) -> dict:
    from gemmsim.machine import load_machine
    from gemmsim.models import sm_pipeline as sp

    h = load_machine("h200")
    c = pickle.loads((dispatch36.CACHE / ("%s_%d_4096.pkl" % key)).read_bytes())
    cost, bps = c["cost"], c["bps"]
    share = sp.favoured_share_at_load(cost, bps, h.l2_favoured_share, h.l2_favoured_ramp)
    return dict(api=key[0], stages=key[1], blocks_per_sm=bps, groups=round(sp.copy_groups_outstanding(cost, bps), 2),
                share=round(share, 3), before=round(sp.favoured_step_ratio(cost, bps, h.l2_favoured_share), 3),
                now=round(sp.favoured_step_ratio(cost, bps, share), 3))


def fit(rows: list[dict], col: str) -> str:
    return agreement([r[col] for r in rows], [r["measured"] for r in rows])


def main() -> None:
    with (H200 / "round38" / "favoured38.csv").open() as f:
        traced = {(r["api"], int(r["stages"])): r for r in csv.DictReader(f)}
    todo = stored()
    with get_context("spawn").Pool(2) as pool:
        fav = pool.map(favour, sorted(traced), chunksize=1)
        rows = pool.map(ends, todo, chunksize=1)
    for r in fav:
        t = traced[(r["api"], r["stages"])]
        r.update({f"traced_{d}": float(t[f"traced_{d}_ratio"]) for d in ("30", "35b", "38b")})
        print(f"{r['api']:4} S={r['stages']}: {r['groups']:5.2f} groups, share {r['share']:.3f}; favoured step over "
              f"the others' before {r['before']:.3f}, now {r['now']:.3f}, traced {r['traced_30']:.3f} / "
              f"{r['traced_35b']:.3f} / {r['traced_38b']:.3f}")
    write_rows(HERE / "favour41.csv", fav)
    write_rows(HERE / "ends41.csv", rows)
    for src in ("34", "40b", None):
        sel = [r for r in rows if src is None or r["source"] == src]
        for api in ("mma", "wmma", None):
            s = [r for r in sel if api is None or r["api"] == api]
            print(f"round {src or 'all'} {api or 'both'} ({len(s)}): before {fit(s, 'before')}; now {fit(s, 'now')}")
    for r in rows:
        if abs(r["now"] - r["before"]) > 0.002:
            print(f"  {r['source']:3} {r['api']:4} S={r['stages']} N={r['N']}: measured {r['measured']:.3f}  "
                  f"before {r['before']:.3f}  now {r['now']:.3f}")


if __name__ == "__main__":
    main()
