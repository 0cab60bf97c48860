"""Round 41 (validation/h200/round41): the L2's favour grows with the copies outstanding on an SM -- the machine file's
ramp against round 39's copy-only benchmark, and the README's claims against favour41.csv and ends41.csv."""
import numpy as np
import pytest
from reference.rounds import H200, script, table

from gemmsim.machine import load_machine

ROUND41 = H200 / "round41"


def test_the_machine_ramp_is_the_copy_benchmarks():
    r = script(ROUND41, "ramp41")
    rows = r.table()
    stored = table(ROUND41, "ramp41.csv")
    assert [(x["run"], int(x["S"]), int(x["k"]), float(x["ratio"])) for x in stored] == \
        [(x["run"], x["S"], x["k"], x["ratio"]) for x in rows]
    pts = r.ramp(rows)
    ramp = load_machine("h200").l2_favoured_ramp
    assert [tuple(p) for p in ramp] == [tuple(map(float, p)) for p in pts[: len(ramp)]]
    assert pts[len(ramp):] == [(7, 1.0)]  # the file stops at the first full point
    # the fitted rows: no favour at 2-3 groups an SM, all of it from 6
    fitted = {int(x["k"]): float(x["ratio"]) for x in stored if x["fit"] == "1"}
    assert fitted[2] > 0.99 and fitted[3] > 0.99 and fitted[4] < 0.9 and fitted[6] < 0.71
    # held out: the S = 2..4 and no-barrier rows of both devices, predicted at k x S groups
    for run in ("39b", "first"):
        err = np.array([float(x["ramp_ratio"]) - float(x["ratio"]) for x in stored if x["run"] == run and x["fit"] == "0"])
        assert len(err) in (38, 30) and np.sqrt(np.mean(err ** 2)) < 0.04


def test_the_favour_at_load_against_the_traces():
    rows = {(r["api"], int(r["stages"])): r for r in table(ROUND41, "favour41.csv")}
    assert len(rows) == 8
    w1, m1 = rows[("wmma", 1)], rows[("mma", 1)]
    assert float(w1["groups"]) < 4 < float(m1["groups"]) < 5
    assert float(w1["now"]) > 0.95 > float(w1["before"])  # the H200 favours no SM at WMMA S = 1
    traced = [float(m1[f"traced_{d}"]) for d in ("30", "35b", "38b")]
    assert abs(float(m1["now"]) - np.median(traced)) < 0.01 < abs(float(m1["before"]) - np.median(traced))
    for (api, S), r in rows.items():
        if S >= 2:  # nine or more groups: the whole share, as before
            assert float(r["groups"]) > 9 and r["now"] == r["before"] and float(r["share"]) == 1.41


def _fit(rows, v):
    x = np.array([float(r[v]) for r in rows])
    y = np.array([float(r["measured"]) for r in rows])
    return np.corrcoef(x, y)[0, 1], np.mean(abs(x - y))


def test_ends41_claims():
    rows = table(ROUND41, "ends41.csv")
    assert len(rows) == 60
    claims = {  # the README's table: (source, api) -> before, now (correlation, mean error)
        (None, None): ((0.77, 0.016), (0.84, 0.014)),
        ("34", None): ((0.76, 0.016), (0.83, 0.014)),
        ("40b", None): ((0.65, 0.018), (0.76, 0.014)),
        (None, "wmma"): ((0.65, 0.020), (0.81, 0.015)),
        (None, "mma"): ((0.90, 0.012), (0.87, 0.013)),
    }
    for (src, api), pair in claims.items():
        sel = [r for r in rows if (src is None or r["source"] == src) and (api is None or r["api"] == api)]
        for v, (c, e) in zip(("before", "now"), pair):
            got_c, got_e = _fit(sel, v)
            assert got_c == pytest.approx(c, abs=0.005) and got_e == pytest.approx(e, abs=0.0005), (src, api, v)
    # only S = 1 moves; WMMA S = 1's late band at N = 3968..4096 now comes out
    for r in rows:
        if r["stages"] != "1":
            assert r["now"] == r["before"]
    w1 = {r["N"]: r for r in rows if r["api"] == "wmma" and r["stages"] == "1"}
    for n in ("3968", "4032", "4096"):
        assert float(w1[n]["now"]) > 1.085 and float(w1[n]["now"]) - float(w1[n]["before"]) > 0.02


def test_favour41b_rows_are_what_the_archive_gives():
    fresh = script(ROUND41, "process41b").rows()
    stored = table(ROUND41, "favour41b.csv")
    assert len(fresh) == len(stored) == 40
    for f, s in zip(fresh, stored):
        assert {k: str(v) for k, v in f.items()} == s
    assert all(float(r["rel_err"]) < 1e-5 for r in stored) and {r["favoured"] for r in stored} == {"24"}


def test_41b_the_gemm_favour_fades_with_the_blocks_per_sm_as_the_ramp_says():
    rows = table(ROUND41, "favour41b.csv")
    s1 = [r for r in rows if r["stages"] == "1"]
    assert len(s1) == 10
    now = [abs(float(r["model_now"]) - float(r["ratio"])) for r in s1]
    whole = [abs(float(r["model_before"]) - float(r["ratio"])) for r in s1]
    assert max(now) < 0.02 and np.mean(now) < 0.005 and np.mean(whole) > 0.05  # README: 0.004 / 0.017 and 0.056
    h = {(r["api"], int(r["stages"]), int(r["blocks_per_sm"])): float(r["ratio"]) for r in rows}
    assert h[("mma", 1, 5)] > 0.99 and h[("wmma", 1, 5)] > 0.99 and 0.95 < h[("mma", 1, 6)] < 0.98  # predictions 5
    assert h[("mma", 2, 2)] > 0.99 and h[("mma", 2, 3)] > 0.99 and h[("wmma", 2, 2)] > 0.99  # prediction 6
    # where the ramp misses (README): S = 2 at k = 4 not favoured on the H200; WMMA S = 3 at k = 3 favoured
    m = {(r["api"], int(r["stages"]), int(r["blocks_per_sm"])): float(r["model_now"]) for r in rows}
    assert h[("mma", 2, 4)] > 0.99 > 0.96 > m[("mma", 2, 4)]
    assert h[("wmma", 3, 3)] < 0.91 and m[("wmma", 3, 3)] == 1.0
