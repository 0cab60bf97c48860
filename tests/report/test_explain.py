"""explain: the access-by-access walk of a tiny case, and the per-element miss map.

Checked against simulate_cpu on the same case (the totals), against a naive dict-and-list LRU written here
(every step's hit/miss, eviction and set contents, on the toy machine's fully associative cache), and against
the Layout's own address formulas (the element of an address).
"""

import json

import numpy as np
import pytest

from gemmsim.cli.main import main
from gemmsim.errors import GemmsimError, KernelError
from gemmsim.report.explain import MAX_SHOWN, element_of, explain_case, line_label, miss_map
from gemmsim.kernels.cpu import cpu_trace
from gemmsim.machine import load_machine, machine_from_dict
from gemmsim.sim.cpu import simulate_cpu
from gemmsim.trace import Layout, LayoutSpec, concat

TOY = load_machine("toy")


def naive_lru(addrs, is_write, line_bytes, lines):
    """A fully associative write-back LRU cache of ``lines`` lines, one access at a time (the seed lab by hand).

    Returns per access: (hit, evicted line or None, evicted dirty, contents most recent first as (line, dirty))."""
    order: list[int] = []  # least recent first
    dirty: dict[int, bool] = {}
    out = []
    for a, w in zip(addrs, is_write):
        ln = int(a) // line_bytes
        hit = ln in order
        ev, ev_dirty = None, False
        if hit:
            order.remove(ln)
        elif len(order) == lines:
            ev = order.pop(0)
            ev_dirty = dirty.pop(ev)
        order.append(ln)
        dirty[ln] = dirty.get(ln, False) or bool(w)
        out.append((hit, ev, ev_dirty, [(x, dirty[x]) for x in reversed(order)]))
    return out


@pytest.mark.parametrize("kernel", ["ikj", "ijk"])
def test_totals_equal_simulate_cpu_on_the_seed_lab(kernel):
    e = explain_case(TOY, kernel, 8)
    row = simulate_cpu(TOY, kernel, 8, 8, 8, "fp32")
    (l1,) = e.totals()["levels"]
    assert (l1["accesses"], l1["hits"], l1["misses"]) == (row["L1_accesses"], row["L1_hits"], row["L1_misses"])
    assert l1["writebacks"] == row["L1_writebacks"] and l1["evictions"] == row["L1_evictions"]
    assert e.totals()["memory"]["line_reads"] == row["memory_line_reads"]


def test_ikj_on_the_seed_lab_by_hand():
    # tests/test_seed_lab.py works it out: per row i, A's row (2 lines), C's row (2), B's 8 rows (16 lines): 20 misses.
    (l1,) = explain_case(TOY, "ikj", 8, limit=0).totals()["levels"]
    assert (l1["accesses"], l1["hits"]) == (1600, 1440)


@pytest.mark.parametrize("kernel,promotion", [("ijk", "hoisted"), ("ikj", "hoisted"), ("jki", "none")])
def test_every_step_matches_a_naive_lru(kernel, promotion):
    e = explain_case(TOY, kernel, 8, params={"promotion": promotion}, limit=0)
    t = concat(cpu_trace(kernel, 8, 8, 8, promotion=promotion))
    ref = naive_lru(t["addr"], t["is_write"], 16, 8)
    assert len(e.steps) == len(t) == e.total_accesses
    for s, (hit, ev, ev_dirty, contents) in zip(e.steps, ref):
        assert s.outcome == ("hit" if hit else "miss")
        assert [(a // 16, d) for a, _, d in s.evicted] == ([(ev, ev_dirty)] if ev is not None else [])
        assert [(a // 16, d) for a, _, d in s.set_after[0]] == contents
    assert sum(s.misses for s in e.steps) == e.totals()["levels"][0]["misses"]


def test_walk_labels_elements_and_lines():
    e = explain_case(TOY, "ikj", 8, limit=3)
    assert [s.element for s in e.steps] == ["A[0][0]", "B[0][0]", "C[0][0]"]
    assert [s.op for s in e.steps] == ["R", "R", "R"]
    assert [lab for _, lab, _ in e.steps[2].set_after[0]] == ["C[0][0..3]", "B[0][0..3]", "A[0][0..3]"]
    assert e.steps[0].served_by == "DRAM"
    text = e.render()
    assert "A[0][0]" in text and "shown 3 of 1600" in text and "1440 hits" in text


def test_multi_level_machine_names_the_level_that_served_a_miss():
    # the toy L1 with a 4x larger, 2-way L2 behind it, so that some L1 misses hit in L2
    d = TOY.model_dump(mode="json")
    d["caches"].append({**d["caches"][0], "name": "L2", "size": 512, "ways": 2, "latency_cycles": 4})
    hw = machine_from_dict(d)
    e = explain_case(hw, "jki", 8, limit=0)
    row = simulate_cpu(hw, "jki", 8, 8, 8, "fp32")
    tot = {lv["name"]: lv for lv in e.totals()["levels"]}
    assert tot["L1"]["misses"] == row["L1_misses"] and tot["L2"]["misses"] == row["L2_misses"]
    served = [s.served_by for s in e.steps if s.misses]
    assert len(served) == row["L1_misses"]
    assert served.count("L2") == row["L2_load_hits"] > 0  # each L2 load hit served one L1 miss; write-backs are L2 stores


@pytest.mark.parametrize("order,pad", [("row", 0), ("col", 0), ("row", 3), ("col", 2)])
def test_element_of_inverts_the_layout(order, pad):
    lay = Layout.build(5, 7, 3, "fp64", LayoutSpec(order=order, pad=pad))
    for m, rows, cols, f in (("A", 5, 3, lay.a), ("B", 3, 7, lay.b), ("C", 5, 7, lay.c)):
        for r in range(rows):
            for c in range(cols):
                assert element_of(lay, f(r, c)) == (m, r, c)
    assert element_of(lay, lay.end + 8) is None


def test_line_label_spans():
    lay = Layout.build(8, 8, 8, "fp32")
    assert line_label(lay, lay.b(1, 4), 16) == "B[1][4..7]"
    lay6 = Layout.build(6, 6, 6, "fp32")  # 6 elements a row: a 16-byte line can straddle two rows
    assert line_label(lay6, lay6.a(0, 4), 16) == "A[0][4]..A[1][1]"


def test_json_output_is_one_object(capsys):
    assert main(["explain", "ikj", "--machine", "toy", "--N", "8", "--limit", "5", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["shown"] == 5 and d["total_accesses"] == 1600
    assert d["accesses"][0]["element"] == "A[0][0]" and d["accesses"][0]["l1"] == "miss"
    assert d["totals"]["levels"][0]["hits"] == 1440


def test_cli_text_and_params(capsys):
    assert main(["explain", "ijk", "--N", "4", "--param", "promotion=none", "--limit", "0"]) == 0
    out = capsys.readouterr().out
    assert "promotion=none" in out and "4 * 4 * 4" not in out
    assert f"{4 * 4 ** 3} accesses" in out  # none: load C, A, B and store C per innermost iteration


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["explain", "ijk", "--machine", "haswell", "--N", "512"], "accesses"),
        (["explain", "ijk", "--N", "32", "--limit", "0"], "at most"),
        (["explain", "ijk", "--machine", "a100"], "gpu"),
        (["explain", "nosuch"], "unknown CPU kernel"),
        (["explain", "ijk", "--param", "promotion=sometimes"], "promotion"),
    ],
)
def test_bad_cases_are_one_clear_message(capsys, argv, needle):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and err.count("gemmsim: error") == 1


def test_large_case_refused_before_any_work():
    with pytest.raises(GemmsimError, match="explain walks tiny cases"):
        explain_case("haswell", "ijk", 512)
    with pytest.raises(KernelError):
        explain_case(TOY, "ijk", 8, params={"BM": 4})
    assert MAX_SHOWN >= 10_000


def test_miss_map_matches_a_naive_lru_element_by_element():
    t = concat(cpu_trace("ijk", 8, 8, 8))
    ref = naive_lru(t["addr"], t["is_write"], 16, 8)
    lay = Layout.build(8, 8, 8, "fp32")
    want = {"A": np.zeros((8, 8), int), "B": np.zeros((8, 8), int), "C": np.zeros((8, 8), int)}
    for a, (hit, *_) in zip(t["addr"], ref):
        if not hit:
            m, r, c = element_of(lay, int(a))
            want[m][r, c] += 1
    mm = miss_map(TOY, "ijk", 8)
    for m in "ABC":
        np.testing.assert_array_equal(getattr(mm, m), want[m])


@pytest.mark.parametrize("machine,kernel,n,params", [("haswell", "jki", 48, {}), ("neoverse_n1", "blocked", 40, {"BM": 8, "BN": 16, "BK": 8})])
def test_miss_map_sums_to_the_l1_misses(machine, kernel, n, params):
    m = load_machine(machine)
    mm = miss_map(m, kernel, n, params=params)
    row = simulate_cpu(m, kernel, n, n, n, "fp32", **params)
    assert sum(mm.by_matrix().values()) == mm.total == row["L1_misses"]
    assert mm.other == 0
