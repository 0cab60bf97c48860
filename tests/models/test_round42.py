"""Round 42 (validation/h200/round42): the WMMA and mma.sync k-steps recorded on the H200 -- the tables are what the
raw archives give, and the README's claims hold on them."""
import statistics

from reference.rounds import H200, script, table

ROUND42 = H200 / "round42"


def test_tables_are_what_the_archives_give(tmp_path):
    mod = script(ROUND42, "process42")
    steps, checks, times = mod.tables()
    for fresh, name in ((steps, "steps42.csv"), (checks, "checks42.csv"), (times, "times42.csv")):
        mod.write_csv(tmp_path / name, fresh)  # as the script writes them
        assert (tmp_path / name).read_text() == (ROUND42 / name).read_text()
    assert len(steps) == len(checks) == 96 and len(times) == 48
    assert all(c["nan"] == 0 and c["rel_err"] < 1e-5 for c in checks)
    # every recorded kernel has its copies and its MMAs between the clock reads meant for them
    for c in checks:
        cuts = [tuple(map(int, x.split("/"))) for x in c["sass_intervals"].split()]
        copy, mma = (cuts[0], cuts[2]) if c["stages"] == 1 else (cuts[1], cuts[2])
        assert copy[0] == 14 and mma[1] > 0 and mma[2] > 0 and sum(x[2] for x in cuts) == mma[2]


def _cycles(rows, key):
    return {(r["api"], r["kernel"], int(r["stages"])): float(r[key]) * float(r["sm_mhz"]) for r in rows}


def test_the_clock_reads_take_the_wmma_gain_away():
    plain = _cycles([r for r in table(ROUND42, "times42.csv") if r["copy"] == "1"], "time_ms")
    rec = [r for r in table(ROUND42, "checks42.csv") if r["M"] == "4096"]
    ratio = {}
    for r in rec:
        k = (r["api"], r["kernel"], int(r["stages"]))
        ratio.setdefault(k, []).append(float(r["recorded_ms"]) * float(r["sm_mhz"]) / plain[k])
    w = "mma_128x128_w2x2"
    for S in (2, 3, 4):
        assert min(ratio[("wmma", w, S)]) > 1.08
        assert max(ratio[("mma", w, S)]) < 1.06
    # the plain builds repeat round 28's WMMA / mma.sync ratio on this tile
    gain = {S: plain[("mma", w, S)] / plain[("wmma", w, S)] for S in (1, 2, 3, 4)}
    assert 1.06 < gain[3] < 1.09 and 1.15 < gain[4] < 1.19 and gain[2] < 1.03


def test_recorded_steps_alike_and_the_model_on_the_recorded_kernel():
    st = table(ROUND42, "steps42.csv")

    def med(api, S, col="step_clk"):
        return statistics.median(float(r[col]) for r in st
                                 if (r["api"], r["kernel"], r["M"], r["stages"]) == (api, "mma_128x128_w2x2", "4096", str(S)))
    assert 0.95 < med("wmma", 3) / med("mma", 3) < 0.97 and 1.02 < med("wmma", 4) / med("mma", 4) < 1.04
    cmp = {(r["api"], r["kernel"], int(r["stages"]), int(r["M"])): float(r["step_ratio"]) for r in table(ROUND42, "compare42.csv")}
    for M in (4096, 8192):
        for S in (3, 4):
            assert abs(cmp[("wmma", "mma_128x128_w2x2", S, M)] - 1) < 0.015
    assert all(0.89 < v < 1.09 for (api, k, S, M), v in cmp.items() if "128x128" in k and S >= 2)


def test_regions_of_the_plain_builds():
    rows = {(r["api"], int(r["stages"]), r["region"]): r for r in table(ROUND42, "regions42.csv")
            if r["kernel"] == "mma_128x128_w2x2"}

    def rel(S, region):
        return float(rows[("wmma", S, region)]["kcycles"]) / float(rows[("mma", S, region)]["kcycles"])
    assert rel(3, "copy") < 0.90 < rel(3, "compute") and rel(4, "copy") < 0.85 and rel(4, "compute") < 0.88
    for S in (3, 4):
        w, m = rows[("wmma", S, "copy")], rows[("mma", S, "copy")]
        assert float(w["long_sb"]) < float(m["long_sb"]) / 2 and float(w["short_sb"]) < float(m["short_sb"]) / 1.9
    # shares of one launch add up to at most the whole
    for api in ("wmma", "mma"):
        assert 0.9 < sum(float(rows[(api, 4, g)]["share"]) for g in ("wait_barrier", "copy", "compute")) <= 1.0
