"""CPU timing model: each roof worked by hand from counters on the Haswell machine file."""

import pytest

from gemmsim.machine import load_machine
from gemmsim.timing.cpu import cpu_time


def _level(name, loads, stores, load_misses, store_misses, writebacks=0):
    return {
        "name": name, "loads": loads, "stores": stores, "load_hits": loads - load_misses, "load_misses": load_misses,
        "store_hits": stores - store_misses, "store_misses": store_misses, "writebacks": writebacks, "evictions": 0, "dirty_at_end": 0,
    }


def _counters(l1_misses, l2_misses, l3_misses, l1_loads=2_000_000, l1_stores=1_000_000, tlb_misses=0):
    return {
        "levels": [
            _level("L1", l1_loads, l1_stores, l1_misses, 0),
            _level("L2", l1_misses, 0, l2_misses, 0),
            _level("L3", l2_misses, 0, l3_misses, 0),
        ],
        "memory": {"line_reads": l3_misses, "line_writes": 0},
        "tlbs": [{"name": "DTLB", "accesses": l1_loads + l1_stores, "hits": 0, "misses": tlb_misses}, {"name": "STLB", "accesses": tlb_misses, "hits": 0, "misses": 0}],
    }


HZ = 3.0e9


def test_compute_bound_scalar_and_simd():
    m = load_machine("haswell")
    flops = 2 * 256**3
    c = _counters(0, 0, 0, l1_loads=10, l1_stores=0)
    scalar = cpu_time(m, c, flops, "fp32", simd=False)
    assert scalar.bound == "compute"
    assert scalar.time_s == pytest.approx(flops / (2 * 1 * 2 * HZ))  # 2 FMA units x 1 lane x 2 FLOP
    simd = cpu_time(m, c, flops, "fp32", simd=True)
    assert simd.time_s == pytest.approx(flops / (2 * 8 * 2 * HZ))  # 96 GFLOP/s
    assert cpu_time(m, c, flops, "fp32", simd=True, threads=16).time_s == pytest.approx(flops / 1536e9)


def test_issue_roof_counts_load_and_store_ports():
    m = load_machine("haswell")
    t = cpu_time(m, _counters(0, 0, 0, l1_loads=6_000_000, l1_stores=5_000_000), 1.0, "fp32")
    assert t.bound == "issue"
    assert t.time_s == pytest.approx(5_000_000 / 1 / HZ)  # 1 store per cycle beats 6M loads / 2 ports


def test_transfer_roofs_use_line_bytes_over_the_lower_levels_bandwidth():
    m = load_machine("haswell")
    t = cpu_time(m, _counters(1_000_000, 1_000_000, 1_000_000, l1_loads=1, l1_stores=0), 1.0, "fp32")
    assert t.roofs["L2"] == pytest.approx(1_000_000 * 64 / (64 * HZ))
    assert t.roofs["L3"] == pytest.approx(1_000_000 * 64 / (32 * HZ))
    assert t.roofs["dram"] == pytest.approx(1_000_000 * 64 / 68e9)
    # latency: each L1 miss waits 12 cycles (L2), each L2 miss 36 (L3), each L3 miss 80 ns; 10 in flight
    lat = (1_000_000 * 12 + 1_000_000 * 36 + 1_000_000 * 80 * 3.0) / 10 / HZ
    assert t.roofs["latency"] == pytest.approx(lat)
    assert t.bound == "latency" and t.time_s == pytest.approx(lat)
    assert t.time_ecm_s == pytest.approx(max(t.roofs["compute"], t.roofs["issue"]) + t.roofs["L2"] + t.roofs["L3"] + t.roofs["dram"])


def test_tlb_misses_add_their_penalty_in_full():
    m = load_machine("haswell")
    base = cpu_time(m, _counters(0, 0, 0, l1_loads=1, l1_stores=0), 1.0, "fp32").roofs["latency"]
    t = cpu_time(m, _counters(0, 0, 0, l1_loads=1, l1_stores=0, tlb_misses=1000), 1.0, "fp32")
    assert t.roofs["latency"] - base == pytest.approx(1000 * 8 / HZ)


def test_compute_slowdown_multiplies_the_compute_roof():
    m = load_machine("haswell")
    c = _counters(0, 0, 0, l1_loads=10, l1_stores=0)
    base = cpu_time(m, c, 1e9, "fp32", simd=True).roofs["compute"]
    assert cpu_time(m, c, 1e9, "fp32", simd=True, compute_slowdown=1.55).roofs["compute"] == pytest.approx(1.55 * base)


def test_threads_take_the_busiest_core_and_pay_for_invalidations():
    m = load_machine("haswell")
    c = _counters(0, 0, 0, l1_loads=3_000_000, l1_stores=0)
    l1 = c["levels"][0]
    l1["per_core"] = [
        {**{k: l1[k] for k in ("loads", "stores", "load_misses", "store_misses", "writebacks")}, "loads": 2_000_000, "invalidations": 1000},
        {**{k: l1[k] for k in ("loads", "stores", "load_misses", "store_misses", "writebacks")}, "loads": 1_000_000, "invalidations": 0},
    ]
    l1["stores"] = 0
    for pc in l1["per_core"]:
        pc["stores"] = 0
    t = cpu_time(m, c, 1.0, "fp32", threads=2)
    assert t.roofs["issue"] == pytest.approx(2_000_000 / 2 / HZ)  # the busier core's loads over its 2 load ports
    # core 0's 1000 invalidated copies are fetched again from the shared L3 (36 cycles), 10 in flight
    assert t.roofs["latency"] == pytest.approx(1000 * 36 / 10 / HZ)
