"""Pointer chase and the latency pyramid: the trace by hand, the staircase against the machine file's latencies."""

import numpy as np
import pytest

from gemmsim.errors import KernelError
from gemmsim.kernels.pyramid import chase_order, chase_trace
from gemmsim.machine import load_machine
from gemmsim.sim.pyramid import ChaseParams, simulate_chase
from gemmsim.trace import concat


def test_chase_order_and_trace():
    o = chase_order(100, seed=3)
    assert o[0] == 0 and sorted(o) == list(range(100))
    assert np.array_equal(o, chase_order(100, seed=3)) and not np.array_equal(o, chase_order(100, seed=4))
    t = concat(chase_trace(1024, 64, 3, chunk=5))  # 16 lines, three passes, small chunks
    assert len(t) == 48 and (t["size"] == 8).all() and not t["is_write"].any()
    assert np.array_equal(t["addr"][:16], t["addr"][16:32]) and set(t["addr"][:16] // 64) == set(range(16))
    with pytest.raises(KernelError):
        chase_order(0)


def test_staircase_matches_the_machine_latencies():
    m = load_machine("haswell")  # L1 32 KiB (4 cycles), L2 256 KiB (12), L3 40 MiB (36), DRAM 80 ns
    l1 = simulate_chase(m, ChaseParams(working_set="16KiB"))
    assert l1["served_by"] == "L1" and l1["avg_latency_cycles"] == 4.0
    l2 = simulate_chase(m, ChaseParams(working_set="128KiB"))
    assert l2["served_by"] == "L2" and l2["avg_latency_cycles"] == 12.0  # 32 pages: inside the 64-entry DTLB
    big = simulate_chase(m, ChaseParams(working_set="128MiB", passes=1))
    # a cycle three times the L3 under LRU: every load misses everywhere and waits 80 ns x 3 GHz-ish of DRAM
    assert big["served_by"] == "DRAM"
    assert big["avg_cache_latency_cycles"] == pytest.approx(m.dram.latency_ns * m.clock_ghz, rel=1e-9)
    assert big["avg_tlb_cycles"] > 0
    assert l1["avg_latency_cycles"] < l2["avg_latency_cycles"] < big["avg_latency_cycles"]


def test_measured_staircase_beside_the_model(tmp_path):
    from gemmsim.errors import MachineFileError
    from gemmsim.sim.pyramid import measured_columns

    f = tmp_path / "m.yaml"
    f.write_text("# latency staircase (working set bytes, ns per dependent load):\n#   staircase: 4096 2.0\n#   staircase: 16384 8.0\n"
                 "sources:\n- 'caches[0].latency_cycles = 8 by pointer chase over 4096 B (random cycle of lines)'\n")
    # 8192 B is half-way between 4096 and 16384 in log2: log-log interpolation gives sqrt(2 * 8) = 4 ns
    c = measured_columns(str(f), 8192, 6.0)
    assert c["measured_latency_ns"] == pytest.approx(4.0) and c["model_over_measured"] == pytest.approx(1.5)
    assert c["fit_point"] is False and measured_columns(str(f), 4096, 2.0)["fit_point"] is True
    assert measured_columns(str(f), 1 << 20, 8.0)["measured_latency_ns"] == 8.0  # beyond the last point: its value
    (tmp_path / "none.yaml").write_text("kind: cpu\n")
    with pytest.raises(MachineFileError):
        measured_columns(str(tmp_path / "none.yaml"), 4096, 1.0)
    with pytest.raises(MachineFileError):
        measured_columns(str(tmp_path / "missing.yaml"), 4096, 1.0)
