"""Round 38 (issue 12), offline: is the S order of the 64x64 tile at M = N = K = 4096 the H200's, or one device's?

    python validation/h200/round38/devices38.py     # -> devices38.csv, ~2 s

Six rounds timed the same binaries' 64x64 launches at 4096 (mma.sync and WMMA, S = 1..4, 20 launches each, the clock of
every launch recorded), on whatever H200 the session was lent. Four of those devices were traced block by block: rounds
30 and 34 found 24 SMs that the L2 favours under saturation, round 35b 12 and round 38b 24 (both in one call with round
35's copy benchmark, which found the same SMs; round 38b reran round 35b's script, so its archive's folder is raw35b).
Per configuration: the median of time x clock (SM cycles) over its launches and their p5-p95 spread over the median;
per round and API, each S's cycles over S = 1's and the pairs that round 3's rule separates (medians further apart
than the larger spread). Round 3 kept only each configuration's median launch (mma_pipeline.csv), so no spread there.
"""
from __future__ import annotations

import csv
import io
import sys
import tarfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
sys.path.insert(0, str(H200))
from h200_io import write_rows  # noqa: E402

TILE = "mma_64x64_w2x2"
# (round, archive, member pattern with {api}, favoured SMs traced on that device: None where not traced)
ARCHIVES = (("30", "round30/raw/round30.tar.gz", "raw30/launches_{api}_4096.csv", 24),
            ("34", "round34/raw/round34.tar.gz", "raw34/launches_{api}_4096.csv", 24),
            ("35b", "round35/raw/round35b.tar.gz", "raw35b/launches_{api}_4096.csv", 12),
            ("38b", "round38/raw/round38.tar.gz", "raw35b/launches_{api}_4096.csv", 24))


def _cycles(rows, api: str) -> dict:
    out: dict = {}
    for r in rows:
        if r["kernel"] == TILE and r.get("copy", "1") == "1" and int(r["M"]) == 4096 and int(r.get("N", 4096)) == 4096 \
                and r.get("api", api) == api:
            out.setdefault(int(r["stages"]), []).append(float(r["time_ms"]) * float(r["sm_mhz"]) * 1e3)
    return out


def sources() -> list[tuple[str, str, int | None, dict]]:
    """(round, api, favoured SMs traced or None, S -> SM cycles of each launch)."""
    out = []
    with (H200 / "round3" / "mma_pipeline.csv").open() as f:
        out.append(("3", "mma", None, _cycles(list(csv.DictReader(f)), "mma")))
    with (H200 / "round28" / "launches28.csv").open() as f:
        rows = list(csv.DictReader(f))
    for api in ("mma", "wmma"):
        out.append(("28", api, None, _cycles(rows, api)))
    for tag, path, member, fav in ARCHIVES:
        with tarfile.open(H200 / path) as tar:
            for api in ("mma", "wmma"):
                rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(member.format(api=api)))))
                out.append((tag, api, fav, _cycles(rows, api)))
    return out


def main() -> None:
    rows = []
    for tag, api, fav, cyc in sources():
        med = {S: float(np.median(v)) for S, v in cyc.items()}
        spread = {S: float((np.percentile(v, 95) - np.percentile(v, 5)) / np.median(v)) if len(v) > 1 else 0.0
                  for S, v in cyc.items()}
        separated = []
        for a in range(1, 5):
            for b in range(a + 1, 5):
                d = (med[a] - med[b]) / ((med[a] + med[b]) / 2)
                if abs(d) > max(spread[a], spread[b]):
                    separated.append(f"{a}{'>' if d > 0 else '<'}{b}")
        order = "".join(str(S) for S in sorted(med, key=med.get))
        rows.append(dict(round=tag, api=api, favoured_sms=fav if fav else "", launches=sum(len(v) for v in cyc.values()),
                         **{f"s{S}_over_s1": round(med[S] / med[1], 4) for S in (2, 3, 4)},
                         **{f"spread_s{S}": round(spread[S], 4) for S in (1, 2, 3, 4)},
                         fastest_to_slowest=order, separated=" ".join(separated)))
    write_rows(HERE / "devices38.csv", rows)
    for r in rows:
        print(f"round {r['round']:3} {r['api']:4} fav {str(r['favoured_sms']):2}: S/S1 {r['s2_over_s1']:.3f} {r['s3_over_s1']:.3f} "
              f"{r['s4_over_s1']:.3f}  order {r['fastest_to_slowest']}  separated (cycles a > b: a slower) {r['separated']}")


if __name__ == "__main__":
    main()
