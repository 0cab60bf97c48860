"""Round 5 raw archives -> CSVs (issue 11).

    python validation/h200/round5/process5.py

partition_map.csv: per SM, the fraction of the chain's lines that were slow (> 400 cycles, far-partition hits) when
the SM walked the chain right after reference SM 0 (and SM 131) had walked it, its partition (0 = the reference
SMs' own) and its cold (DRAM) median latency. order_wave_spread5.csv: as round3/order_wave_spread.csv, from the
block-start traces at N = 3072 and 6144 (row, column) and 3072 and 4096 (grouped; order.cu with order5.patch). dispatch_partition.csv: the partition of the SM each of a launch's first
blocks started on (first appearance of each SM in pid order), per traced launch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
RAW = HERE / "raw"
SLOW = 400  # cycles: near L2 hits take 256-330, far hits 480-590 (phase 1 latencies)


def partition_map() -> pd.DataFrame:
    d = pd.read_csv(RAW / "partition_probe.csv.gz")
    warm = d[d.phase == 1]
    frac = warm.assign(slow=warm.cycles > SLOW).groupby(["ref_sm", "target_sm"]).slow.mean().unstack(0)
    cold = d[d.phase == 0].groupby("target_sm").cycles.median()
    out = pd.DataFrame({"sm": range(132)})
    out["slow_after_sm0"] = out.sm.map(frac[0]).round(4)
    out["slow_after_sm131"] = out.sm.map(frac[131]).round(4)
    both = out[["slow_after_sm0", "slow_after_sm131"]].mean(axis=1, skipna=True)
    out["partition"] = (both > 0.25).astype(int)
    out["cold_median_cycles"] = out.sm.map(cold)
    return out


def spreads(name: str) -> pd.DataFrame:
    d = pd.read_csv(RAW / name)
    n = int(d.N.iloc[0])
    rows = []
    for (k, o), g in d.groupby(["kernel", "order"]):
        g = g.sort_values("pid")
        wave = 1056 if k == "naive16" else 264
        dur = float(np.median(g.end_ns - g.start_ns))
        for w in range(len(g) // wave):
            x = g.start_ns.values[w * wave:(w + 1) * wave]
            rows.append([k, n, o, w + 1, wave, round(dur / 1e3, 1), round((np.percentile(x, 95) - np.percentile(x, 5)) / dur, 3)])
    return pd.DataFrame(rows, columns=["kernel", "N", "order", "wave", "blocks_per_wave", "median_block_us",
                                       "start_spread_p5_p95_over_block"])


def dispatch(part: np.ndarray) -> pd.DataFrame:
    rows = []
    for n in (3072, 6144):
        d = pd.read_csv(RAW / f"order_trace_{n}.csv.gz")
        for (k, o), g in d.groupby(["kernel", "order"]):
            seen: list[int] = []
            for s in g.sort_values("pid").smid:
                if int(s) not in seen:
                    seen.append(int(s))
                if len(seen) == 132:
                    break
            rows.append([k, n, o, " ".join(map(str, seen)), "".join(str(part[s]) for s in seen)])
    return pd.DataFrame(rows, columns=["kernel", "N", "order", "sm_first_use_order", "partition_sequence"])


def main() -> None:
    pm = partition_map()
    pm.to_csv(HERE / "partition_map.csv", index=False)
    traces = ["order_trace_3072.csv.gz", "order_trace_6144.csv.gz", "order_trace_grouped_3072.csv.gz",
              "order_trace_grouped_4096.csv.gz"]
    pd.concat([spreads(t) for t in traces]).to_csv(HERE / "order_wave_spread5.csv", index=False)
    dispatch(pm.partition.values).to_csv(HERE / "dispatch_partition.csv", index=False)
    print(pm.partition.value_counts().to_dict(), "SMs per partition")


if __name__ == "__main__":
    main()
