"""The Strassen/Winograd trace generators: structure of the trace, counts, and a run through the CPU simulator."""

import numpy as np
import pytest

from gemmsim.kernels.cpu_packed import KERNELS as PACKED
from gemmsim.kernels.cpu_packed import PackedParams
from gemmsim.kernels.cpu_strassen import KERNELS, StrassenParams, counts, levels
from gemmsim.machine import load_machine
from gemmsim.numerics.strassen import flop_counts
from gemmsim.sim.cpu import CPU_KERNELS, simulate_cpu
from gemmsim.trace import Layout, concat


@pytest.fixture(scope="module")
def haswell():
    return load_machine("haswell")


def test_registered():
    assert "strassen" in CPU_KERNELS and "winograd" in CPU_KERNELS


def test_above_cutoff_is_packed_micro(haswell):
    lay = Layout.build(48, 48, 48)
    got = concat(KERNELS["strassen"].trace(lay, StrassenParams(cutoff=64), haswell))
    want = concat(PACKED["packed_micro"].trace(lay, PackedParams(), haswell))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("variant,adds", [("strassen", 18), ("winograd", 15)])
def test_one_level_trace(haswell, variant, adds):
    n, elem = 64, 4
    lay = Layout.build(n, n, n)
    tr = concat(KERNELS[variant].trace(lay, StrassenParams(cutoff=32), haswell))
    h = n // 2
    c = counts(n, n, n, 32, variant)
    assert c["levels"] == 1 and c["adds"] == adds * h * h and c["fmas"] == 7 * h**3
    # the closed form agrees with the numerics module's count of the same algorithm
    assert c["adds"] + 7 * h * h * (h - 1) == flop_counts(n, 32, variant)["add"]
    # every access lies in A, B, C, the workspace or the packed buffers after it, and none is outside
    assert tr["addr"].min() >= lay.a_base
    ws = (4 + 4 + 7 if variant == "winograd" else 3) * h * h * elem
    # C is written wholly; A and B are only read
    a_rng = (lay.a_base, lay.b_base)
    b_rng = (lay.b_base, lay.c_base)
    in_ab = ((tr["addr"] >= a_rng[0]) & (tr["addr"] < b_rng[1]))
    assert not np.any(tr["is_write"][in_ab])
    in_c = (tr["addr"] >= lay.c_base) & (tr["addr"] < lay.end)
    written = np.unique((tr["addr"][in_c & (tr["is_write"] == 1)] - lay.c_base) // elem)
    assert written.size == n * n // 8  # one 32-byte vector store covers 8 fp32 elements
    in_ws = (tr["addr"] >= lay.end) & (tr["addr"] < lay.end + ws + 4096 * 16)
    assert np.any(in_ws & (tr["is_write"] == 1))


def test_levels():
    assert levels(1024, 1024, 1024, 128) == 3
    assert levels(1024, 96, 1024, 16) == 3  # 96 -> 48 -> 24 -> 12: the smallest dimension limits the depth
    assert levels(100, 100, 100, 1) == 2  # 100 -> 50 -> 25 (odd)


def test_simulated_with_fewer_compute_flops(haswell):
    classic = simulate_cpu(haswell, "packed_micro", 128, 128, 128)
    fast = simulate_cpu(haswell, "strassen", 128, 128, 128, cutoff=64)
    assert fast["strassen_levels"] == 1
    assert fast["compute_flops"] == 2 * (7 * 64**3 + 18 * 64 * 64)
    assert fast["flops"] == classic["flops"] == 2 * 128**3  # rates stay per 2MNK
    # the trace: 7 base products of 64^3 plus 18 additions (3 vector accesses per 8 elements) and 4 copies (2)
    base = concat(PACKED["packed_micro"].trace(Layout.build(64, 64, 64), PackedParams(), haswell)).size
    vectors = 64 * 64 // 8
    n_acc = concat(KERNELS["strassen"].trace(Layout.build(128, 128, 128), StrassenParams(cutoff=64), haswell)).size
    assert n_acc == 7 * base + 18 * 3 * vectors + 4 * 2 * vectors
    assert fast["L1_loads"] + fast["L1_stores"] >= n_acc  # (an access across a line boundary counts twice)
    assert fast["strassen_add_bytes"] == (18 * 3 + 4 * 2) * 64 * 64 * 4
