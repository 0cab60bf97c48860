"""Round 11: how two co-resident blocks sit, from sit11.cu's clock marks -> sit11.csv.

    python validation/h200/round11/process11.py

Per launch (`launch_row`): with one block per SM, its step, X phase and Y phase; with two, the older block's step and
X phase, the younger's step while the older runs, the younger's duration over the older's (1: they share the SM
evenly; up to 2: the younger waits for the older), and how they sit: gemmsim's own `block_arrangement` (the measure
round 10b applied to the GEMM) -- "together" (a block's step starts within 0.15 of a step of the other's) and
"alternating" (within 0.15 of half a step after it); an even spread gives 0.3 / 0.3. Three launches per configuration
are reported one by one, so their spread shows.
"""

from __future__ import annotations

import csv
import io
import statistics
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
from gemmsim.models.sm_pipeline import block_arrangement  # noqa: E402

FIRST, LAST = 16, 56
MODES = {1: "integer adds", 2: "L2 chase", 3: "cp.async 16 KiB"}


def read_marks(raw: Path = HERE / "raw") -> dict[int, list[tuple[int, int, list[int]]]]:
    """launch -> [(block, SM, absolute marks t0(it0), t1(it0), t0(it1) ...)]."""
    out = {}
    with tarfile.open(raw / "marks.tar.gz") as tf:
        for m in tf.getmembers():
            launch = int(m.name.split("_")[1].split(".")[0])
            rows = []
            for line in io.TextIOWrapper(tf.extractfile(m)):
                v = [int(x) for x in line.split(",")]
                base = v[2]
                rows.append((v[0], v[1], [base] + [base + d for d in v[3:]]))
            out[launch] = rows
    return out


def launch_row(rows: list, bps: int) -> dict:
    """One launch: the medians over blocks (one per SM) or over SMs (two per SM) of what its marks show.

    One block per SM: its step, X phase (iteration start to after X's barrier) and Y phase (the rest), medians over
    iterations FIRST..LAST-1. Two blocks per SM: the older (the earlier start; pid on a tie) and the younger. The
    older's step and X phase as above; the younger's step while the older still runs; the younger's whole duration
    over the older's; and how they sit (`block_arrangement` over both blocks' iteration starts)."""

    def times(r):
        return [r[2]] + [r[2] + d for d in r[3:]] if len(r) > 3 else []

    def step_x(t):
        return (statistics.median(t[2 * i + 2] - t[2 * i] for i in range(FIRST, LAST)),
                statistics.median(t[2 * i + 1] - t[2 * i] for i in range(FIRST, LAST)))

    if bps == 1:
        sx = [step_x(t) for _, _, t in rows]
        step, x = statistics.median(s for s, _ in sx), statistics.median(x for _, x in sx)
        return dict(step_clk=step, x_clk=x, y_clk=step - x)
    by_sm = {}
    for b, sm, t in rows:
        by_sm.setdefault(sm, []).append((t[0], b, t))
    old, young, ratio, tog, alt = [], [], [], [], []
    for pair in by_sm.values():
        if len(pair) != 2:
            continue
        (_, _, to), (_, _, ty) = sorted(pair)
        s, x = step_x(to)
        old.append((s, x))
        ys = [ty[2 * i + 2] - ty[2 * i] for i in range(len(ty) // 2 - 1) if ty[2 * i + 2] < to[-1]]
        if ys:
            young.append(statistics.median(ys))
        ratio.append((ty[-1] - ty[0]) / (to[-1] - to[0]))
        marks = [(k, i, 0, t[2 * i]) for k, t in enumerate((to, ty)) for i in range(len(t) // 2)]
        a = block_arrangement(marks, FIRST, LAST)
        tog.append(a.get("together", 0.0))
        alt.append(a.get("alternating", 0.0))
    step, x = statistics.median(s for s, _ in old), statistics.median(x for _, x in old)
    return dict(step_clk=step, x_clk=x, y_clk=step - x, younger_step_clk=statistics.median(young),
                younger_over_older=statistics.median(ratio), together=statistics.mean(tog),
                alternating=statistics.mean(alt), sms=len(ratio))


def rows() -> list[dict]:
    """sit11.csv's rows, from raw/launches.csv and raw/marks.tar.gz."""
    marks = read_marks()
    out = []
    with open(HERE / "raw" / "launches.csv") as f:
        for L in csv.DictReader(f):
            i, bps = int(L["launch"]), int(L["blocks_per_sm"])
            r = launch_row(marks[i], bps)
            out.append(dict(launch=i, mode=int(L["mode"]), x_phase=MODES[int(L["mode"])] if int(L["nx"]) or L["mode"] == "3" else "none",
                            nx=int(L["nx"]), ny=int(L["ny"]), blocks_per_sm=bps, rep=int(L["rep"]), sm_mhz=int(L["sm_mhz"]),
                            check_ok=int(L["check_ok"]), step_clk=round(r["step_clk"]), x_clk=round(r["x_clk"]),
                            y_clk=round(r["y_clk"]), younger_step_clk=round(r.get("younger_step_clk", -1)),
                            younger_over_older=round(r.get("younger_over_older", -1), 3),
                            together=round(r.get("together", -1), 3), alternating=round(r.get("alternating", -1), 3)))
    return out


def main() -> None:
    out = rows()
    with open(HERE / "sit11.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(out[0]))
        w.writeheader()
        w.writerows(out)
    for r in out:
        print(r)


if __name__ == "__main__":
    main()
