"""Round 38 (validation/h200/round38): the 64x64 tile's S order at 4096 on six devices, a favoured SM's gain
by S, the L2 lookups per sector by S, and round 31's drift fit with S in the form -- the stored tables against their
sources and the README's claims."""
import numpy as np
import pytest
from reference.rounds import H200, script, table

from gemmsim.models import tc_schedule as tcs

ROUND38 = H200 / "round38"


def test_the_device_table_is_what_the_timings_give():
    s = script(ROUND38, "devices38")
    stored = {(r["round"], r["api"]): r for r in table(ROUND38, "devices38.csv")}
    assert len(stored) == 11
    for tag, api, fav, cyc in s.sources():
        r = stored[(tag, api)]
        assert sum(len(v) for v in cyc.values()) == int(r["launches"])
        med = {S: float(np.median(v)) for S, v in cyc.items()}
        for S in (2, 3, 4):
            assert med[S] / med[1] == pytest.approx(float(r[f"s{S}_over_s1"]), abs=1e-4)


def test_wmma_orders_alike_everywhere_and_mma_differs_on_the_12_sm_device():
    rows = {(r["round"], r["api"]): r for r in table(ROUND38, "devices38.csv")}
    for tag in ("28", "30", "34", "35b", "38b"):
        assert rows[(tag, "wmma")]["fastest_to_slowest"] == "3421"
    for tag in ("3", "28", "30", "34", "38b"):  # S = 1 slowest by 5-9 %
        r = rows[(tag, "mma")]
        assert r["fastest_to_slowest"].endswith("1")
        assert max(float(r[f"s{S}_over_s1"]) for S in (2, 3, 4)) < 0.96
    r = rows[("35b", "mma")]
    assert r["favoured_sms"] == "12" and float(r["s2_over_s1"]) > 1.02 and float(r["s4_over_s1"]) < 0.97
    assert "1>4" in r["separated"].split() and "1>2" not in r["separated"].split()
    assert {rows[(t, "mma")]["favoured_sms"] for t in ("30", "34", "38b")} == {"24"}


def test_a_favoured_sm_gains_least_where_its_blocks_wait_for_each_copy():
    rows = {(r["api"], int(r["stages"])): r for r in table(ROUND38, "favoured38.csv")}
    assert len(rows) == 8
    for api in ("mma", "wmma"):
        m = {S: float(rows[(api, S)]["model_ratio"]) for S in (1, 2, 3, 4)}
        assert min(m[1], m[2]) > max(m[3], m[4])  # S = 1, 2 gain less than S = 3, 4
        assert all(0.75 < v < 0.9 for v in m.values())
    for dev in ("30", "35b", "38b"):  # the traces: mma.sync S = 1 gains least; WMMA S = 1 has no favoured SM at all
        t = {S: float(rows[("mma", S)][f"traced_{dev}_ratio"]) for S in (1, 2, 3, 4)}
        assert t[1] > max(t[2], t[3], t[4])
        assert rows[("wmma", 1)][f"traced_{dev}_fast_sms"] == "0"


def test_24_favoured_sms_put_mma_s1_last_and_no_variant_orders_every_pair():
    rows = {(r["api"], int(r["favoured_sms"]), r["share"]): r for r in table(ROUND38, "dispatch38.csv")}
    assert len(rows) == 8
    ratio = {k: [float(r[f"s{S}_over_s1"]) for S in (2, 3, 4)] for k, r in rows.items()}
    assert max(ratio[("mma", 24, "file")]) < 0.98  # S = 1 slowest, as on the 24-SM devices
    assert ratio[("mma", 12, "file")][2] > 1.0  # today's model: S = 4 slower than S = 1
    for fav in (12, 24):
        for share in ("file", "at_load"):
            mma, wmma = ratio[("mma", fav, share)], ratio[("wmma", fav, share)]
            # measured on the ranking target (round 28): S = 1 slowest in both; WMMA's S = 2 slower than S = 3 and 4
            right = max(mma) < 1 and max(wmma) < 1 and wmma[0] > max(wmma[1], wmma[2])
            assert not right, (fav, share)


def test_the_models_lookups_rise_with_s_where_ncus_do_not():
    s = script(ROUND38, "lookups38")
    ncu = s.ncu_ratio()
    rows = {int(r["stages"]): r for r in table(ROUND38, "lookups38.csv")}
    for S in (1, 2, 3, 4):
        assert ncu[S] == pytest.approx(float(rows[S]["ncu_tag_over_sectors"]), abs=1e-4)
    assert float(rows[4]["model_over_s1"]) > 1.01
    assert all(abs(float(rows[S]["ncu_over_s1"]) - 1) < 0.005 for S in (2, 3, 4))
    assert rows[2]["model_lookups_per_sector"] == rows[3]["model_lookups_per_sector"]  # same blocks per SM


def test_drift_with_s_in_the_form_fits_the_fit_set_but_not_the_held_out_launches():
    s = script(ROUND38, "drift38")
    stored = {r["form"]: r for r in table(ROUND38, "drift38.csv")}
    L = s.launches()
    drifting = [x for x in L if not x["held"]]
    fit_set = [x for x in drifting if x["fit"]]
    held_out = [x for x in drifting if not x["fit"]]
    for name, a in s.FORMS.items():
        k = s.fit(a, fit_set)
        assert k == pytest.approx(float(stored[name]["k"]), abs=1e-4)
        assert s.rms(a, k, held_out) == pytest.approx(float(stored[name]["rms_held_out"]), abs=1e-3)
    assert float(stored["blocks"]["k"]) == pytest.approx(tcs.DRIFT_PER_WAVE, abs=1e-4)  # round 31's rate
    assert float(stored["blocks x S"]["rms_fit_set"]) < float(stored["blocks"]["rms_fit_set"])
    assert float(stored["blocks x S"]["rms_held_out"]) > float(stored["blocks"]["rms_held_out"])


def test_both_pace_corrections_order_the_pairs_only_in_the_mean():
    rows = {(r["api"], int(r["prologue_as_wait"]), int(r["eq_l2"])): r for r in table(ROUND38, "pace38.csv")}
    assert len(rows) == 8

    def right(p: int, e: int, kind: str) -> bool:  # round 28's separated pairs: S = 1 slowest; WMMA's S = 2 next
        mma = [float(rows[("mma", p, e)][f"{kind}_s{S}_over_s1"]) for S in (2, 3, 4)]
        wmma = [float(rows[("wmma", p, e)][f"{kind}_s{S}_over_s1"]) for S in (2, 3, 4)]
        return max(mma) < 1 and max(wmma) < 1 and wmma[0] > max(wmma[1], wmma[2])

    assert right(1, 1, "mean") and not right(1, 1, "one")
    assert not any(right(p, e, k) for p, e in ((0, 0), (0, 1), (1, 0)) for k in ("one", "mean"))


def test_round_38b_found_24_favoured_sms_and_the_24_sm_order():
    s = script(ROUND38, "fast38")
    got = s.rows()
    stored = table(ROUND38, "fast38.csv")
    assert [(r["launch"], str(r["fast_sms"]), f"{r['fast_over_other']:g}") for r in got] == \
        [(r["launch"], r["fast_sms"], f"{float(r['fast_over_other']):g}") for r in stored]
    copies = [r for r in stored if r["launch"].startswith("copy") and r["launch"] != "copy all SMs k=2 S=1"]
    assert {r["fast_sms"] for r in copies} == {"24"} and all(0.69 < float(r["fast_over_other"]) < 0.73 for r in copies)
    wmma1 = next(r for r in stored if r["launch"] == "wmma mma_64x64_w2x2 S=1 4096")
    assert wmma1["fast_sms"] == "0"
