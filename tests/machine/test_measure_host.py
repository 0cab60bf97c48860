"""Host microbenchmarks on tiny sizes: they run, return plausible values, and the staircase rises with the working set."""

from __future__ import annotations

import platform

import pytest

from gemmsim.machine import machine_from_dict
from gemmsim.machine.detect import _set_path, apply_measured, detect_dict, machine_yaml, read_measured_comments
from gemmsim.machine.measure import (
    Measured,
    _cycle,
    chase_ns,
    clock_ghz,
    fma_rates,
    level_sizes,
    read_bytes_per_cycle,
    staircase_sizes,
)

X86 = platform.machine().lower() in ("x86_64", "amd64")


def test_chase_cycle_visits_every_line_once():
    import numpy as np

    nxt = _cycle(300, 8, np.random.default_rng(1), per_page=64)  # 300 lines -> 5 pages of 64
    seen, i = set(), 0
    for _ in range(320):
        assert i not in seen
        seen.add(i)
        i = int(nxt[i])
    assert i == 0 and len(seen) == 320 and all(s % 8 == 0 for s in seen)


@pytest.mark.skipif(not X86, reason="the clock benchmark is x86-64 inline assembly")
def test_clock_and_fma_are_plausible():
    ghz = clock_ghz(200_000, repeats=5)
    assert 0.5 < ghz < 7.0
    f = fma_rates(ghz, steps=100_000)
    assert 2.0 <= f["fma_latency_cycles"] <= 12.0  # every FMA unit of the last 15 years: 3 to 6 cycles
    assert 0.5 <= f["fma_per_cycle"] <= 4.5
    assert f["fma_per_cycle"] > 1.0 / f["fma_latency_cycles"]  # independent chains overlap


def test_l1_is_faster_than_a_large_working_set():
    """A dependent load from a 16 KiB set (L1 on every CPU) beats one from 64 MiB (beyond most L2s and many L3s)."""
    small = min(chase_ns(16 << 10, 20_000) for _ in range(3))
    large = min(chase_ns(64 << 20, 20_000) for _ in range(2))
    assert 0.1 < small < 20 and large > 2 * small


def test_streaming_reads_are_plausible():
    bw = read_bytes_per_cycle(16 << 10, 3.0, total=2_000_000)
    assert 0.5 < bw < 1000


def test_sizes_used_for_each_level():
    assert level_sizes([32 << 10, 1 << 20, 32 << 20], 1 << 30) == [16 << 10, 128 << 10, 4 << 20, 1 << 30]
    # a level reported far larger than the one above: just past the level above (4x), never less than 2x
    assert level_sizes([48 << 10, 2 << 20, 480 << 20], 1 << 30)[2] == 8 << 20
    s = staircase_sizes(4096, 1 << 20, 2)
    assert s[0] == 4096 and s[-1] == 1 << 20 and all(b > a for a, b in zip(s, s[1:])) and len(s) == 17


def _fake_measured() -> Measured:
    m = Measured(clock_ghz=3.5, seconds=1.0)
    m.fields = {"clock_ghz": 3.5, "fma_units": 2, "fma_latency_cycles": 4, "caches[0].latency_cycles": 5.0,
                "caches[0].bandwidth_bytes_per_cycle": 64.0, "dram.latency_ns": 100.0, "dram.bandwidth_gbps": 12.5,
                "miss_parallelism": 20}
    m.methods = {k: "test" for k in m.fields}
    m.staircase = [(4096, 1.4), (1 << 20, 4.0), (1 << 28, 100.0)]
    m.bandwidth = [(16384, 64.0, 30.0), (1 << 28, 3.0, 1.5)]
    return m


def test_measured_fields_replace_estimates():
    d = apply_measured(detect_dict(), _fake_measured())
    m = d.pop("_measured")
    machine = machine_from_dict(d)
    assert machine.clock_ghz == 3.5 and machine.caches[0].latency_cycles == 5.0 and machine.dram.bandwidth_gbps == 12.5
    assert machine.fma_latency_cycles == 4 and machine.miss_parallelism == 20
    for f in m.fields:
        assert f not in machine.estimated
        assert any(f in s and "measured" in s for s in machine.sources)
    assert "tlbs[1].miss_penalty_cycles" in machine.estimated  # not measured: stays an estimate
    text = machine_yaml(machine, m)
    back = read_measured_comments(text)
    assert back["staircase"] == [(4096, 1.4), (1 << 20, 4.0), (1 << 28, 100.0)] and back["clock_ghz"] == 3.5
    assert back["bandwidth"][1] == (1 << 28, 3.0, 1.5)


def test_set_path():
    d = {"a": [{"b": 1}, {"b": 2}], "c": {"d": 3}}
    _set_path(d, "a[1].b", 9)
    _set_path(d, "c.d", 4)
    assert d == {"a": [{"b": 1}, {"b": 9}], "c": {"d": 4}}


@pytest.mark.skipif(not X86, reason="the clock benchmark is x86-64 inline assembly")
def test_detect_measure_quick_gives_a_valid_machine():
    d = detect_dict(measure=True, quick=True)
    m = d.pop("_measured")
    machine = machine_from_dict(d)
    assert "caches[0].latency_cycles" not in machine.estimated
    assert 0.5 < machine.clock_ghz < 7.0 and machine.caches[0].latency_cycles > 0
    ns = [v for _, v in m.staircase]
    assert ns[-1] > ns[0]  # the largest working set is slower than the smallest
