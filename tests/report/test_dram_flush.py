"""The final flush: lines still dirty at the end are written to DRAM once, in DRAM bytes, timing and intensity."""

import numpy as np
import pytest

from gemmsim.machine import load_machine
from gemmsim.models.hierarchy import Hierarchy
from gemmsim.sim.cpu import flush_lines, simulate_cpu
from reference.chunks import chunk_of
from reference.ref_cache import LOAD, STORE, RefCache, run_chain


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_flush_counts_each_dirty_line_once_like_the_reference(seed):
    # a random mix of loads and stores over 64 lines through L1 (4 sets x 2 ways) and L2 (8 x 4): a line can be
    # dirty in both levels (written back to L2, re-read and written again in L1) and must be flushed once
    rng = np.random.default_rng(seed)
    acc = [(int(rng.integers(0, 64)) * 64 + 4 * int(rng.integers(0, 16)), 4, STORE if rng.random() < 0.4 else LOAD, 0) for _ in range(3000)]
    h = Hierarchy.from_specs(["4:2:64", "8:4:64"])
    h.feed(chunk_of(acc))
    ref = [RefCache(4, 2, 64), RefCache(8, 4, 64)]
    run_chain(ref, acc)
    union = set().union(*(lv.dirty[0] for lv in ref))
    both = ref[0].dirty[0] & ref[1].dirty[0]
    got, exact = flush_lines(h, h.counters())
    assert exact and got == len(union)
    assert sum(len(lv.dirty[0]) for lv in ref) > got or not both  # the sum of dirty_at_end would double count


@pytest.mark.parametrize("kernel", ["ijk", "ikj", "jki", "blocked"])
def test_dram_bytes_reach_the_compulsory_traffic_when_everything_fits(kernel):
    # N = 64 fp32 on Haswell: A, B, C (48 KiB) fit the 256 KiB L2, so DRAM sees each line of A, B, C read once and
    # each line of C written once by the flush: 4 N^2 s bytes, intensity 2N^3 / that = N / 8 FLOP/B
    n, s = 64, 4
    r = simulate_cpu(load_machine("haswell"), kernel, n, n, n)
    assert r["dram_bytes"] == 4 * n * n * s
    assert r["dram_flush_bytes"] == n * n * s
    assert r["intensity_flop_per_byte"] == pytest.approx(2 * n**3 / (4 * n * n * s))


def test_loop_order_intensity_at_256_is_at_most_the_compulsory_bound():
    # the case: without the flush ikj at N = 256 reported 786 kB, below reading A, B, C and writing C once
    n, s = 256, 4
    r = simulate_cpu(load_machine("haswell"), "ikj", n, n, n)
    compulsory = 4 * n * n * s
    assert r["dram_bytes"] >= compulsory
    assert r["intensity_flop_per_byte"] <= 2 * n**3 / compulsory
    # the flush is in the DRAM roof of the timing model: DRAM bytes over the bandwidth
    bw = load_machine("haswell").dram.bandwidth_gbps * 1e9
    assert r["t_dram_s"] == pytest.approx(r["dram_bytes"] / bw)
