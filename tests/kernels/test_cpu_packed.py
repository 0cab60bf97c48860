"""Packed Goto/BLIS kernels: the trace against hand counts and a plain-Python reference of the five loops,
edge and spill traffic, bytes per level in the seed's order, and the host kernels' numerics."""

from __future__ import annotations

import numpy as np
import pytest

from gemmsim.run.host import run_host
from gemmsim.kernels.cpu_packed import KERNELS, buffers, resolve
from gemmsim.machine import load_machine
from gemmsim.trace import ACCESS, Layout, LayoutSpec, concat


@pytest.fixture(scope="module")
def haswell():
    return load_machine("haswell")


@pytest.fixture(scope="module")
def neon():
    return load_machine("neoverse_n1")


def trace(kernel, M, N, K, machine=None, dtype="fp32", spec=None, chunk=1 << 18, **params):
    k = KERNELS[kernel]
    lay = Layout.build(M, N, K, dtype, spec)
    return concat(k.trace(lay, k.params(**params), machine, chunk=chunk)), lay


# ---------------------------------------------------------------------------------------------------------
# A plain-Python reference: the five loops written out directly (no resumable state, no chunks).


def reference(lay: Layout, kernel: str, machine, **params) -> np.ndarray:
    """The same stream as the kernel's, built access by access from the loop nest of the module docstring."""
    k = KERNELS[kernel]
    p = k.params(**params)
    r = resolve(lay, p, machine, k.simd)
    s = lay.elem
    M, N, K = lay.M, lay.N, lay.K
    assert lay.c_cs == s, "reference covers row-major C"
    buf = buffers(lay, r)
    vl = r.lanes
    pad = r.edge == "pad"
    out = []

    def run(base, count, stride, width, w, core):
        if stride == s and width > 1:
            for v in range(0, count, width):
                out.append((base + v * s, min(width, count - v) * s, w, core))
        else:
            for e in range(count):
                out.append((base + e * stride, s, w, core))

    T = r.threads
    streams = []
    for t in range(T):
        out = []
        # Thread t's part, from the split's definition (module docstring): its rows and columns of C, which B and
        # A micro-panels it packs (first, step), which B micro-panels it computes with, and its buffers.
        if r.split == "m":
            P = -(-M // r.MR)
            m0, m1, n0, n1 = min(M, t * P // T * r.MR), min(M, (t + 1) * P // T * r.MR), 0, N
            bshare, ashare, jshare = (t, T), (0, 1), (0, 1)
            ap, bp = buf["A"][t], buf["B"][0]
        elif r.split == "n":
            P = -(-N // r.NR)
            m0, m1, n0, n1 = 0, M, min(N, t * P // T * r.NR), min(N, (t + 1) * P // T * r.NR)
            bshare, ashare, jshare = (0, 1), (0, 1), (0, 1)
            ap, bp = buf["A"][t], buf["B"][t]
        else:
            m0, m1, n0, n1 = 0, M, 0, N
            bshare, ashare, jshare = (t, T), (t, T), (t, T)
            ap, bp = buf["A"][0], buf["B"][0]
        stack = buf["stack"][t]
        for jc in range(n0, n1, r.NC):
            nc = min(r.NC, n1 - jc)
            for pc in range(0, K, r.KC):
                kc = min(r.KC, K - pc)
                for q in range(bshare[0], -(-nc // r.NR), bshare[1]):
                    w = min(r.NR, nc - q * r.NR)
                    for pp in range(kc):
                        run(lay.b(pc + pp, jc + q * r.NR), w, lay.b_cs, vl, 0, t)
                        run(bp + (q * kc + pp) * r.NR * s, r.NR if pad else w, s, vl, 1, t)
                for ic in range(m0, m1, r.MC):
                    mc = min(r.MC, m1 - ic)
                    for q in range(ashare[0], -(-mc // r.MR), ashare[1]):
                        h = min(r.MR, mc - q * r.MR)
                        for pp in range(kc):
                            run(lay.a(ic + q * r.MR, pc + pp), h, lay.a_rs, vl, 0, t)
                            run(ap + (q * kc + pp) * r.MR * s, r.MR if pad else h, s, vl, 1, t)
                    for jr in range(jshare[0], -(-nc // r.NR), jshare[1]):
                        w = min(r.NR, nc - jr * r.NR)
                        for ir in range(-(-mc // r.MR)):
                            h = min(r.MR, mc - ir * r.MR)
                            scalar = vl == 1 or (r.edge == "scalar" and (h, w) != (r.MR, r.NR))
                            ew = 1 if scalar else vl
                            rows, cols = (r.MR, r.NR) if pad else (h, w)
                            i0, j0 = ic + ir * r.MR, jc + jr * r.NR
                            for i in range(h):
                                run(lay.c(i0 + i, j0), w, s, ew, 0, t)
                            for kk in range(kc):
                                run(ap + (ir * kc + kk) * r.MR * s, rows, s, vl if (r.a_by_lane and not scalar) else 1, 0, t)
                                run(bp + (jr * kc + kk) * r.NR * s, cols, s, ew, 0, t)
                                if vl == 1 or not scalar:
                                    for x in range(r.shape.spilled):
                                        out.append((stack + x * vl * s, vl * s, 0, t))
                                        out.append((stack + x * vl * s, vl * s, 1, t))
                            for i in range(h):
                                run(lay.c(i0 + i, j0), w, s, ew, 1, t)
        streams.append(out)
    recs = [a for st in streams for a in st]
    arr = np.empty(len(recs), dtype=ACCESS)
    if recs:
        arr["addr"], arr["size"], arr["is_write"], arr["core"] = map(np.array, zip(*recs))
    return arr


def same_records(a: np.ndarray, b: np.ndarray) -> bool:
    return len(a) == len(b) and all(np.array_equal(a[f], b[f]) for f in ("addr", "size", "is_write", "core"))


# ---------------------------------------------------------------------------------------------------------
# Hand counts.


def test_packed_scalar_hand_count():
    # M=N=K=4, 2x2 scalar tiles, one block: B pack 16 loads + 16 stores, A pack 16 + 16; four tiles each load and
    # store their 4 C elements once and load 2 + 2 packed elements per k step (4 steps).
    t, _ = trace("packed", 4, 4, 4, MR=2, NR=2, KC=4, MC=4, NC=4)
    loads, stores = int((t["is_write"] == 0).sum()), int((t["is_write"] == 1).sum())
    assert (loads, stores) == (16 + 16 + 4 * (4 + 4 * 4), 16 + 16 + 4 * 4)
    assert set(t["size"]) == {4}


def test_packed_micro_hand_count(haswell):
    # One 6x16 fp32 tile, K=4: B pack 4 rows x (2 vector loads + 2 vector stores); A pack 4 x (6 element loads +
    # one 24-byte store); C tile 6 rows x 2 vectors in and out; per k step 6 broadcasts + 2 vectors.
    t, lay = trace("packed_micro", 6, 16, 4, haswell, MR=6, NR=16, KC=4, MC=6, NC=16)
    loads, stores = t[t["is_write"] == 0], t[t["is_write"] == 1]
    assert (len(loads), len(stores)) == (8 + 24 + 12 + 4 * 8 + 0, 8 + 4 + 12)
    assert int(loads["size"].sum()) == 4 * 64 + 24 * 4 + 6 * 64 + 4 * (24 + 64)
    c = t[(t["addr"] >= lay.c_base) & (t["addr"] < lay.end)]
    assert len(c) == 24 and set(c["size"]) == {32}  # the C tile: loaded once, stored once, whole vectors
    assert (t["addr"] >= lay.end).sum() == 8 + 4 + 4 * 8  # packed-buffer stores and microkernel loads after C


def test_packed_buffers_live_beyond_c(haswell):
    t, lay = trace("packed_micro", 40, 40, 40, haswell)
    r = resolve(lay, KERNELS["packed_micro"].params(), haswell, True)
    b = buffers(lay, r)
    assert b["B"][0] >= lay.end and b["B"][0] % 4096 == 0 and b["A"][0] > b["B"][0]
    stores = t[t["is_write"] == 1]
    to_abc = stores[stores["addr"] < lay.end]
    assert np.all(to_abc["addr"] >= lay.c_base)  # the kernel only writes C and its own buffers
    assert t["addr"].max() < b["end"]


# ---------------------------------------------------------------------------------------------------------
# The streaming generator equals the plain reference, across strategies, layouts, chunk sizes.


@pytest.mark.parametrize(
    "kernel,shape,params",
    [
        ("packed", (13, 11, 9), dict(MR=3, NR=2, KC=4, MC=7, NC=5)),
        ("packed_micro", (13, 21, 9), dict(MR=6, NR=16, KC=4, MC=12, NC=32, edge="pad")),
        ("packed_micro", (13, 21, 9), dict(MR=6, NR=16, KC=4, MC=12, NC=32, edge="masked")),
        ("packed_micro", (13, 21, 9), dict(MR=6, NR=16, KC=4, MC=12, NC=32, edge="scalar")),
        ("packed_micro", (13, 21, 9), dict(MR=6, NR=16, KC=4, MC=12, NC=32, edge="special")),
        ("packed_micro", (16, 40, 7), dict(MR=8, NR=24, KC=5, MC=16, NC=24)),  # spills
        ("packed_micro", (20, 20, 20), dict(threads=3, MC=8, KC=8, NC=16)),
        ("packed_micro", (20, 40, 20), dict(threads=3, split="n", MC=8, KC=8, NC=16)),
        ("packed_micro", (20, 50, 20), dict(threads=3, split="jr", MC=8, KC=8, NC=40, edge="masked")),
        ("gemm", (30, 30, 30), {}),
    ],
)
def test_stream_equals_reference(haswell, kernel, shape, params):
    M, N, K = shape
    lay = Layout.build(M, N, K, "fp32")
    want = reference(lay, kernel, haswell, **params)
    k = KERNELS[kernel]
    got = concat(k.trace(lay, k.params(**params), haswell, chunk=300))  # small chunks: many resumptions
    if params.get("threads", 1) > 1:
        # Interleaved streams: each core's own accesses, in order, are its reference stream.
        for c in range(params["threads"]):
            assert same_records(got[got["core"] == c], want[want["core"] == c])
        assert len(got) == len(want)
    else:
        assert same_records(got, want)


def test_neon_loads_a_as_vectors(neon):
    lay = Layout.build(12, 8, 3, "fp32")
    want = reference(lay, "packed_micro", neon, KC=3, MC=12, NC=8)
    got, _ = trace("packed_micro", 12, 8, 3, neon, KC=3, MC=12, NC=8)
    assert same_records(got, want)
    r = resolve(lay, KERNELS["packed_micro"].params(), neon, True)
    assert (r.MR, r.NR, r.a_by_lane) == (12, 8, True)
    # Per k step: 3 vectors of A (12 fp32 in 128-bit registers) and 2 of B.
    k_loads = got[(got["addr"] >= lay.end) & (got["is_write"] == 0)]
    assert len(k_loads) == 3 * (3 + 2) and set(k_loads["size"]) == {16}


def test_column_major_runs_the_transposed_problem(haswell):
    spec = LayoutSpec(order="col")
    t, lay = trace("packed_micro", 10, 7, 5, haswell, spec=spec)
    c = t[(t["addr"] >= lay.c_base) & (t["addr"] < lay.end)]
    # C^T is 7 x 10 row-major: its tile rows are runs along M, contiguous in column-major C.
    assert set(c["size"]) <= {32, 8} and int(c["size"].sum()) == 2 * 10 * 7 * 4


# ---------------------------------------------------------------------------------------------------------
# Edges and spills.


def test_pad_reads_ghost_elements_masked_does_not(haswell):
    p = dict(MR=6, NR=16, KC=8, MC=24, NC=32)
    pad, lay = trace("packed_micro", 20, 20, 8, haswell, edge="pad", **p)
    mask, _ = trace("packed_micro", 20, 20, 8, haswell, edge="masked", **p)
    packed = lambda t: t[t["addr"] >= lay.end]  # noqa: E731
    # 20 rows -> 4 A micro-panels (24 rows), 20 columns -> 2 B micro-panels (32 columns): with padding the
    # microkernel loads 24 x 32 x 8 x ... bytes; masked loads only the real 20 x 20 part of each k step.
    pad_bytes = int(packed(pad)[packed(pad)["is_write"] == 0]["size"].sum())
    mask_bytes = int(packed(mask)[packed(mask)["is_write"] == 0]["size"].sum())
    tiles_rows = [6, 6, 6, 2]
    tiles_cols = [16, 4]
    mask_want = sum(8 * 4 * (h + w) for h in tiles_rows for w in tiles_cols)
    pad_want = 4 * 2 * 8 * 4 * (6 + 16)
    assert (pad_bytes, mask_bytes) == (pad_want, mask_want)
    # C is never padded: the same C bytes in both.
    in_c = lambda t: int(t[(t["addr"] >= lay.c_base) & (t["addr"] < lay.end)]["size"].sum())  # noqa: E731
    assert in_c(pad) == in_c(mask) == 2 * 20 * 20 * 4


def test_scalar_tail_uses_element_accesses(haswell):
    t, lay = trace("packed_micro", 8, 20, 4, haswell, edge="scalar", MR=6, NR=16, KC=4, MC=8, NC=32)
    c = t[(t["addr"] >= lay.c_base) & (t["addr"] < lay.end)]
    full = 6 * 2 * 2  # one full 6x16 tile: 6 rows x 2 vectors, in and out
    assert (c["size"] == 32).sum() == full
    assert (c["size"] == 4).sum() == 2 * (8 * 20 - 6 * 16)  # every other element of C, one by one


def test_spills_show_as_stack_traffic(haswell):
    lay = Layout.build(8, 24, 10, "fp32")
    p = KERNELS["packed_micro"].params(MR=8, NR=24, KC=10, MC=8, NC=24)
    r = resolve(lay, p, haswell, True)
    # 8 x 3 accumulators + 3 for B + 1 broadcast = 28 registers of 16.
    assert (r.shape.registers_used, r.shape.spilled) == (28, 12)
    t = concat(KERNELS["packed_micro"].trace(lay, p, haswell))
    stack = buffers(lay, r)["stack"][0]
    sp = t[(t["addr"] >= stack) & (t["addr"] < stack + 4096)]
    assert len(sp) == 2 * 12 * 10 and (sp["is_write"] == 1).sum() == 12 * 10
    fits, _ = trace("packed_micro", 8, 24, 10, haswell, MR=6, NR=16, KC=10, MC=8, NC=24)
    assert not np.any((fits["addr"] >= stack) & (fits["addr"] < stack + 4096))


def test_extra_columns(haswell):
    k = KERNELS["gemm"]
    lay = Layout.build(1000, 1000, 1000, "fp32")
    row = k.extra(lay, k.params(), haswell)
    assert (row["mr"], row["nr"], row["registers_used"], row["registers_available"], row["registers_spilled"]) == (6, 16, 15, 16, 0)
    assert row["accumulators_per_register"] == 8
    # 1000 = 166*6 + 4 rows and 62*16 + 8 columns: 1 - 996*992/10^6 of C in partial tiles.
    assert row["edge_partial_fraction"] == pytest.approx(1 - 996 * 992 / 1e6)
    assert row["ghost_flops"] == 2 * 1000 * (167 * 6 * 63 * 16 - 1000 * 1000)
    assert row["B_r_bytes"] == row["kc"] * 16 * 4 and row["B_r_frac_L1"] == row["B_r_bytes"] / 32768
    blk = k.extra(lay, KERNELS["packed_micro"].params(MC=64, NC=64, KC=64), haswell)
    assert blk["edge_partial_fraction_blocks"] == pytest.approx(0.0784)
    assert blk["edge_ratio_scalar_blocks"] == pytest.approx(1.5488)


# ---------------------------------------------------------------------------------------------------------
# Bytes per level in the seed's order (seed 000 sections 2, 4, 5, 4.1).


def test_l1_traffic_falls_naive_blocked_packed_micro(haswell):
    from gemmsim.sim.cpu import simulate_cpu

    # N = 256 fp32 on Haswell: rows 1 KiB apart, the stride that makes unpacked tiles conflict in L1 (seed 000
    # section 5: blocking "still reads panels in their original layout"); packing removes it.
    traffic = {k: simulate_cpu(haswell, k, 256, 256, 256, "fp32")["L1_traffic_bytes"] for k in ("ijk", "blocked", "packed", "packed_micro")}
    assert traffic["ijk"] > traffic["blocked"] > traffic["packed"] > traffic["packed_micro"]


# ---------------------------------------------------------------------------------------------------------
# Host kernels.


@pytest.mark.parametrize(
    "kernel,dtype,params",
    [
        ("packed", "fp64", dict(MR=4, NR=3, KC=16, MC=12, NC=20)),
        ("packed_micro", "fp32", dict(MR=6, NR=16, KC=32, MC=24, NC=48)),
        ("packed_micro", "int8", dict(MR=6, NR=16, KC=32, MC=24, NC=48)),
        ("packed_micro", "fp32", dict(MR=6, NR=16, KC=32, MC=24, NC=48, threads=2)),
    ],
)
def test_host_is_numerically_correct(kernel, dtype, params):
    res = run_host(kernel, 53, 47, 61, dtype, params, warmup=0, repeats=1)
    assert res.ok, (res.max_rel_err, res.tolerance)
