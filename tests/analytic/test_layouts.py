"""Set conflicts of strided walks, alignment and transposed operands, checked by hand and by the cache model."""

import numpy as np
import pytest

from gemmsim.analytic.layouts import alignment_columns, column_walk_columns, set_histogram, sets_touched
from gemmsim.machine import load_machine
from gemmsim.run.experiment import Experiment, plan
from gemmsim.sim.cpu import simulate_cpu
from gemmsim.trace import Layout, LayoutSpec


def test_sets_touched_by_hand():
    # ldb = 512 floats = 2048 B = 32 lines of 64 B; a 64-set cache sees lines 0, 32, 64, ... -> sets {0, 32}
    assert sets_touched(0, 2048, 256, 64, 64) == 2
    # ldb = 528 floats = 2112 B = 33 lines: 33 is odd, so 64 consecutive rows visit all 64 sets
    assert sets_touched(0, 2112, 256, 64, 64) == 64
    assert sets_touched(0, 1024, 256, 64, 64) == 4  # 16 lines apart -> 64 / 16
    h = set_histogram(0, 2048, 256, 64, 64)
    assert h.sum() == 256 and h[0] == 128 and h[32] == 128 and np.count_nonzero(h) == 2


def test_column_walk_columns_on_haswell():
    m = load_machine("haswell")  # L1 32 KiB, 8 ways, 64 sets
    lay = Layout.build(16, 512, 256, "fp32")
    row = column_walk_columns(m, lay)
    assert row["ldb_elements"] == 512 and row["b_column_lines"] == 256
    assert row["b_column_sets_L1"] == 2 and row["b_column_capacity_lines_L1"] == 16
    padded = column_walk_columns(m, Layout.build(16, 512, 256, "fp32", LayoutSpec(pad=16)))
    assert padded["ldb_elements"] == 528 and padded["b_column_sets_L1"] == 64


def test_padding_fixes_the_conflicts_in_the_cache_model():
    # independent check: the LRU cache simulation. ijk walks a column of B (256 lines): with 16 lines of room every
    # B access misses (L1 hit rate ~ 1/2: the A loads hit); padded, the column stays and 15 of 16 B accesses hit
    m = load_machine("haswell")
    bad = simulate_cpu(m, "ijk", 8, 512, 256)
    good = simulate_cpu(m, "ijk", 8, 512, 256, layout={"pad": 16})
    assert bad["L1_hit_rate"] < 0.55
    assert good["L1_hit_rate"] > 0.95
    assert good["time_s"] < bad["time_s"]


def test_alignment_columns():
    a = alignment_columns(Layout.build(65, 65, 65, "fp16"))
    assert a["lda_elements"] == 65 and not a["rows_16B_aligned"] and not a["vector_load_16B_possible"]
    assert not a["ld_multiple_of_8"]
    b = alignment_columns(Layout.build(64, 64, 64, "fp16"))
    assert b["ld_multiple_of_8"] and b["ld_multiple_of_64"] and b["rows_16B_aligned"] and b["rows_sector_aligned"]
    # 72 fp16 = 144 B: a multiple of 16 B but not of a 32 B sector
    c = alignment_columns(Layout.build(72, 72, 72, "fp16"))
    assert c["rows_16B_aligned"] and not c["rows_sector_aligned"] and not c["ld_multiple_of_64"]


def test_transposed_operands_are_swapped_strides():
    M, N, K = 3, 5, 7
    lay = Layout.build(M, N, K, "fp32", LayoutSpec(trans_a=True, trans_b=True))
    # A stored K x M row-major: op(A)[i][k] = A_s[k][i] at a_base + (k*M + i)*4; B stored N x K: op(B)[k][j] at (j*K + k)*4
    assert lay.a(1, 2) == lay.a_base + (2 * M + 1) * 4
    assert lay.b(4, 3) == lay.b_base + (3 * K + 4) * 4
    assert lay.b_base == M * K * 4 and lay.c_base == lay.b_base + K * N * 4
    col = Layout.build(M, N, K, "fp32", LayoutSpec(order="col", trans_b=True))  # column-major B^T is row-major B's bytes
    assert (col.b_rs, col.b_cs) == (N * 4, 4)


def test_transposed_b_turns_the_column_walk_into_a_row_walk():
    # ijk reads B[k][j] with k innermost: a column walk when B is K x N, a contiguous walk when B is stored N x K
    m = load_machine("haswell")
    nn = simulate_cpu(m, "ijk", 8, 512, 256)
    nt = simulate_cpu(m, "ijk", 8, 512, 256, layout={"trans_b": True})
    assert nt["L1_hit_rate"] > 0.9 > nn["L1_hit_rate"]


def test_entry_layout_overrides_the_experiment_layout():
    exp = Experiment.model_validate({
        "schema_version": 1, "name": "t", "machines": ["toy"], "sizes": [8], "layout": {"align": 64},
        "kernels": ["ijk", {"name": "ijk", "label": "padded", "layout": {"pad": 4}}],
    })
    cases = plan(exp).cases
    assert [c.layout["pad"] for c in cases] == [0, 4]
    assert all(c.layout["align"] == 64 for c in cases)
    with pytest.raises(ValueError):
        Experiment.model_validate({"schema_version": 1, "name": "t", "machines": ["toy"], "sizes": [8],
                                   "kernels": [{"name": "ijk", "layout": {"pad": -1}}]})


def test_seed_tile_quantization_example_on_the_gpu_model():
    from gemmsim.sim.gpu import simulate_gpu

    # seed 000 section 4.2: M = N = 65 with 32 x 32 tiles -> 3 x 3 blocks of 1024 threads, 4,225 of 9,216 busy
    r = simulate_gpu("a100", "tiled_smem", M=65, N=65, K=65, dtype="fp32", TILE=32)
    assert (r["threads_launched"], r["tile_outputs_useful"], r["tile_outputs_padded"]) == (9216, 4225, 9216)
    assert r["tile_efficiency"] == pytest.approx(4225 / 9216)
    assert r["traffic_over_bound"] >= 1.0 and r["traffic_over_bound_sm"] >= 1.0
    # fp16 rows of 65 elements are 130 B: blocks are shifted by 64 B (half a line); this used to trip the L1 pass
    h = simulate_gpu("a100", "tiled_smem", M=65, N=65, K=65, dtype="fp16", TILE=32)
    assert not h["vector_load_16B_possible"] and h["dram_bytes"] >= 2 * 3 * 65 * 65


def test_gpu_transposed_operands():
    from gemmsim.sim.gpu import simulate_gpu

    # the tiled kernel reads A[row][k] across lanes: with A transposed, lanes are a whole row (1 KiB) apart, so each
    # 32-lane request touches 32 sectors for A instead of 4 (B unchanged: (32 + 4) / 2 = 18 on average at most)
    nn = simulate_gpu("a100", "tiled_smem", M=64, N=64, K=64, dtype="fp32")
    tn = simulate_gpu("a100", "tiled_smem", M=64, N=64, K=64, dtype="fp32", layout={"trans_a": True})
    assert nn["sectors_per_request"] == 4.0 and tn["sectors_per_request"] > 12
    # the tensor-core kernel copies 16-byte chunks along whichever dimension is contiguous: same bytes either way
    a = simulate_gpu("a100", "tensorcore", M=256, N=256, K=256, dtype="fp16")
    b = simulate_gpu("a100", "tensorcore", M=256, N=256, K=256, dtype="fp16", layout={"trans_a": True, "trans_b": True})
    assert a["dram_bytes"] == b["dram_bytes"] and a["global_sectors"] == b["global_sectors"]


def test_set_histogram_figure_reads_the_rows():
    from gemmsim.report.figures.layouts import set_histogram_figure

    m = load_machine("haswell")
    rows = []
    for pad in (0, 16):
        r = simulate_cpu(m, "ijk", 8, 512, 256, layout={"pad": pad})
        r.update(machine="haswell", kernel="ijk", label=f"ijk pad {pad}", M=8, N=512, K=256, dtype="fp32", layout_pad=pad)
        rows.append(r)
    d = set_histogram_figure(rows, {"haswell": m})
    assert d is not None and d.fig is not None
    assert "256 lines fall into 2 sets, 240 more than their ways hold" in d.reading  # 2 sets x 128 lines, 8 ways each
    assert "fall into 64 sets, 0 more" in d.reading
    assert set_histogram_figure(rows[:1], {"haswell": m}) is None  # no padded partner: no figure


def test_tile_quantization_figure_from_gpu_rows():
    from gemmsim.report.figures.layouts import tile_quantization_figure
    from gemmsim.sim.gpu import simulate_gpu

    rows = []
    for n in (64, 65, 96):
        r = simulate_gpu("a100", "tiled_smem", M=n, N=n, K=n, dtype="fp32", TILE=32)
        r.update(machine="a100", kernel="tiled_smem", label="tiled 32x32", M=n, N=n, K=n, p_TILE=32)
        rows.append(r)
    d = tile_quantization_figure(rows)
    assert d is not None and "launches 9,216 threads for 4,225 outputs (45.8% busy)" in d.reading
    assert "4 sectors per request with 16-byte aligned rows" in d.reading
    assert tile_quantization_figure(rows[:1]) is None


def test_tensorcore_copies_fall_back_to_the_row_alignment():
    from gemmsim.kernels.gpu import KERNELS, OP_A, OP_B, SPACE_GLOBAL
    from gemmsim.sim.gpu import simulate_gpu

    spec = KERNELS["tensorcore"].spec({}, "fp16")
    # fp16 rows of 64, 68, 66, 65 elements are 128, 136, 132, 130 bytes: 16-, 8-, 4-, 2-byte aligned
    for n, w in ((64, 16), (68, 8), (66, 4), (65, 2)):
        lay = Layout.build(n, n, n, "fp16")
        assert spec.copy_bytes(lay, OP_A) == w and spec.copy_bytes(lay, OP_B) == w
        tr = spec.block_trace(lay, 0, 0, spaces=[SPACE_GLOBAL])
        loads = tr.select((tr.is_write == 0) & (tr.operand == OP_A))
        assert set(loads.width.tolist()) == {w}
    a = simulate_gpu("a100", "tensorcore", M=1024, N=1024, K=1024, dtype="fp16")
    b = simulate_gpu("a100", "tensorcore", M=1025, N=1025, K=1025, dtype="fp16")
    assert b["global_requests"] > 5 * a["global_requests"] and b["sectors_per_request"] < a["sectors_per_request"]
