"""CPU trace generators: closed forms, a naive reference straight from issue 2's text, and valgrind lackey traces."""

from __future__ import annotations

import gzip
import itertools
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from gemmsim.errors import KernelError
from gemmsim.kernels.cpu import KERNELS, ORDERS, access_count, cpu_trace
from gemmsim.trace import ACCESS, CHUNK, Layout, LayoutSpec, concat
from gemmsim.traceio import read_trace

LACKEY = Path(__file__).resolve().parent.parent / "data" / "lackey"


# ---------------------------------------------------------------------------------------------------------
# Naive reference: the definitions written as plain Python loops, one access at a time.


def naive_trace(lay: Layout, tiles, tile_order: str, inner_order: str, promotion: str) -> list[tuple[int, int]]:
    """[(address, is_write)] of the (blocked) nest, written from the issue's words with no shared code."""
    dims = {"i": lay.M, "j": lay.N, "k": lay.K}
    step = dict(zip("ijk", tiles))
    out: list[tuple[int, int]] = []

    def A(x):
        return (lay.a(x["i"], x["k"]), 0)

    def B(x):
        return (lay.b(x["k"], x["j"]), 0)

    def CL(x):
        return (lay.c(x["i"], x["j"]), 0)

    def CS(x):
        return (lay.c(x["i"], x["j"]), 1)

    t0, t1, t2 = tile_order
    o0, o1, o2 = inner_order
    for s0 in range(0, dims[t0], step[t0]):
        for s1 in range(0, dims[t1], step[t1]):
            for s2 in range(0, dims[t2], step[t2]):
                start = {t0: s0, t1: s1, t2: s2}
                rng = {v: range(start[v], min(start[v] + step[v], dims[v])) for v in "ijk"}
                for x0 in rng[o0]:
                    for x1 in rng[o1]:
                        x = {o0: x0, o1: x1}
                        if promotion == "hoisted":
                            # the operand that does not depend on the innermost variable is loaded before its loop
                            x[o2] = None
                            out.append({"k": CL, "j": A, "i": B}[o2](x))
                        for x2 in rng[o2]:
                            x[o2] = x2
                            if promotion == "none":
                                out += [CL(x), A(x), B(x), CS(x)]
                            elif o2 == "k":
                                out += [A(x), B(x)]
                            elif o2 == "j":
                                out += [B(x), CL(x), CS(x)]
                            else:
                                out += [A(x), CL(x), CS(x)]
                        if promotion == "hoisted" and o2 == "k":
                            out.append(CS(x))
    return out


def as_pairs(chunk: np.ndarray) -> list[tuple[int, int]]:
    return list(zip(chunk["addr"].tolist(), chunk["is_write"].tolist()))


def full(kernel, M, N, K, **kw) -> np.ndarray:
    return concat(cpu_trace(kernel, M, N, K, **kw))


# ---------------------------------------------------------------------------------------------------------
# Closed forms and hand-worked cases.


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("promotion", ["hoisted", "none"])
def test_access_count_closed_form(order, promotion):
    M, N, K = 5, 7, 6
    expected = {
        "none": 4 * M * N * K,
        "k": M * N * (2 * K + 2),  # C loaded and stored once per (i, j); A and B per k
        "j": M * K * (3 * N + 1),  # A loaded once per (i, k); B, C, C-store per j
        "i": N * K * (3 * M + 1),  # B loaded once per (k, j); A, C, C-store per i
    }["none" if promotion == "none" else order[2]]
    t = full(order, M, N, K, promotion=promotion)
    assert access_count(order, M, N, K, promotion=promotion) == expected == len(t)
    stores = int(t["is_write"].sum())
    assert stores == (M * N if promotion == "hoisted" and order[2] == "k" else M * N * K)


def test_ijk_2x2x2_by_hand():
    # A at 0 (4 floats), B at 16, C at 32; hoisted ijk: C00 loaded, (A00 B00) (A01 B10), C00 stored, then C01 ...
    t = full("ijk", 2, 2, 2)
    a = lambda i, k: (0 + 4 * (2 * i + k), 0)  # noqa: E731
    b = lambda k, j: (16 + 4 * (2 * k + j), 0)  # noqa: E731
    cl = lambda i, j: (32 + 4 * (2 * i + j), 0)  # noqa: E731
    cs = lambda i, j: (32 + 4 * (2 * i + j), 1)  # noqa: E731
    assert as_pairs(t[:12]) == [
        cl(0, 0), a(0, 0), b(0, 0), a(0, 1), b(1, 0), cs(0, 0),
        cl(0, 1), a(0, 0), b(0, 1), a(0, 1), b(1, 1), cs(0, 1),
    ]  # fmt: skip
    assert (t["size"] == 4).all() and (t["core"] == 0).all()


def test_ikj_and_kji_2x2x2_by_hand():
    t = full("ikj", 2, 2, 2)  # A00 held; B00 C00 C00' B01 C01 C01'; A01 held; B10 C00 C00' ...
    assert as_pairs(t[:7]) == [(0, 0), (16, 0), (32, 0), (32, 1), (20, 0), (36, 0), (36, 1)]
    t = full("kji", 2, 2, 2)  # B00 held; A00 C00 C00' A10 C10 C10'; B01 held; A00 C01 ...
    assert as_pairs(t[:8]) == [(16, 0), (0, 0), (32, 0), (32, 1), (8, 0), (40, 0), (40, 1), (20, 0)]
    t = full("jki", 2, 2, 2, promotion="none", dtype="fp64")  # C00 A00 B00 C00' C10 A10 B00 C10' ...
    assert as_pairs(t[:8]) == [(64, 0), (0, 0), (32, 0), (64, 1), (80, 0), (16, 0), (32, 0), (80, 1)]
    assert (t["size"] == 8).all()


# ---------------------------------------------------------------------------------------------------------
# Against the naive reference, including layouts other than the default.

LAYOUTS = [None, {"order": "col"}, {"pad": 3, "align": 64, "base": 4096}]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("promotion", ["hoisted", "none"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_orders_equal_naive_reference(order, promotion, layout):
    M, N, K = 4, 5, 3
    lay = Layout.build(M, N, K, "fp16", LayoutSpec(**(layout or {})))
    got = full(order, M, N, K, dtype="fp16", layout=layout, promotion=promotion)
    assert as_pairs(got) == naive_trace(lay, (M, N, K), "ijk", order, promotion)
    assert (got["size"] == 2).all()


BLOCKED_CASES = [
    # (M, N, K, BM, BN, BK, tile_order, inner_order): edge tiles on every side, tiles bigger than the matrix, 1s
    (7, 5, 6, 3, 2, 4, "ijk", "ikj"),
    (7, 5, 6, 3, 2, 4, "kji", "ijk"),
    (5, 7, 6, 2, 3, 4, "jki", "kji"),
    (5, 7, 6, 4, 4, 4, "kij", "jik"),
    (6, 6, 6, 1, 6, 5, "jik", "kij"),
    (3, 4, 5, 8, 8, 8, "ikj", "jki"),
]


@pytest.mark.parametrize("case", BLOCKED_CASES)
@pytest.mark.parametrize("promotion", ["hoisted", "none"])
def test_blocked_equals_naive_reference_with_edges(case, promotion):
    M, N, K, BM, BN, BK, to, io = case
    params = dict(BM=BM, BN=BN, BK=BK, tile_order=to, inner_order=io, promotion=promotion)
    lay = Layout.build(M, N, K, "fp32")
    got = full("blocked", M, N, K, **params)
    assert as_pairs(got) == naive_trace(lay, (BM, BN, BK), to, io, promotion)
    assert access_count("blocked", M, N, K, **params) == len(got)


@pytest.mark.parametrize("inner", ORDERS)
@pytest.mark.parametrize("promotion", ["hoisted", "none"])
def test_blocked_with_whole_matrix_tiles_is_its_inner_order(inner, promotion):
    M = N = K = 6
    for tile_order in ("ijk", "kji"):
        b = full("blocked", M, N, K, BM=N, BN=N, BK=N, tile_order=tile_order, inner_order=inner, promotion=promotion)
        assert np.array_equal(b, full(inner, M, N, K, promotion=promotion))


def test_blocked_edge_tiles_cover_every_product_once():
    # promotion none: every innermost iteration is (C, A, B, C') -> the (i, j, k) triples are explicit
    M, N, K = 7, 5, 6
    t = full("blocked", M, N, K, BM=3, BN=2, BK=4, tile_order="jik", inner_order="kji", promotion="none")
    lay = Layout.build(M, N, K)
    g = t["addr"].astype(np.int64).reshape(-1, 4)
    i, k = divmod((g[:, 1] - lay.a_base) // 4, K)
    k2, j = divmod((g[:, 2] - lay.b_base) // 4, N)
    assert (k == k2).all()
    assert (g[:, 0] == lay.c_base + 4 * (i * N + j)).all() and (g[:, 3] == g[:, 0]).all()
    assert sorted(zip(i.tolist(), j.tolist(), k.tolist())) == list(itertools.product(range(M), range(N), range(K)))
    extra = KERNELS["blocked"].extra(lay, KERNELS["blocked"].params(BM=3, BN=2, BK=4), None)
    # full 3x2 tiles of C cover rows 0..5 and columns 0..3: 24 of 35 elements
    assert extra["edge_fraction_c"] == pytest.approx(1 - 24 / 35)
    assert extra["tile_working_set_bytes"] == 4 * (3 * 4 + 4 * 2 + 3 * 2)


def test_every_order_uses_the_same_products():
    M, N, K = 4, 3, 5
    lay = Layout.build(M, N, K)
    ref = None
    kernels = [(o, {}) for o in ORDERS] + [("blocked", dict(BM=3, BN=2, BK=2, tile_order="kij", inner_order="jki"))]
    for name, params in kernels:
        g = full(name, M, N, K, promotion="none", **params)["addr"].astype(np.int64).reshape(-1, 4)
        pairs = Counter(zip(((g[:, 1] - lay.a_base) // 4).tolist(), ((g[:, 2] - lay.b_base) // 4).tolist()))
        ref = ref or pairs
        assert pairs == ref
    assert sum(ref.values()) == M * N * K and max(ref.values()) == 1


@pytest.mark.parametrize("order", ORDERS)
def test_hoisted_element_histograms(order):
    # how often each element is touched with hoisted promotion, from the loop structure alone
    M, N, K = 3, 4, 5
    lay = Layout.build(M, N, K)
    t = full(order, M, N, K)
    counts = Counter(zip(t["addr"].tolist(), t["is_write"].tolist()))
    w = order[2]
    a_loads = {"k": N, "j": 1, "i": N}[w]
    b_loads = {"k": M, "j": M, "i": 1}[w]
    c_each = {"k": 1, "j": K, "i": K}[w]
    assert all(counts[(lay.a(i, k), 0)] == a_loads for i in range(M) for k in range(K))
    assert all(counts[(lay.b(k, j), 0)] == b_loads for k in range(K) for j in range(N))
    assert all(counts[(lay.c(i, j), 0)] == c_each == counts[(lay.c(i, j), 1)] for i in range(M) for j in range(N))


# ---------------------------------------------------------------------------------------------------------
# Streaming.


@pytest.mark.parametrize("kernel,params", [("ijk", {}), ("jki", {"promotion": "none"}), ("blocked", {"BM": 3, "BN": 5, "BK": 2})])
def test_chunk_boundaries_do_not_change_the_stream(kernel, params):
    small = list(cpu_trace(kernel, 9, 11, 7, chunk=7, **params))
    assert all(len(c) == 7 for c in small[:-1]) and 1 <= len(small[-1]) <= 7
    assert np.array_equal(concat(small), full(kernel, 9, 11, 7, **params))
    assert np.array_equal(concat(cpu_trace(kernel, 9, 11, 7, chunk=1, **params)), concat(small))


def test_large_trace_streams_in_bounded_chunks():
    it = cpu_trace("blocked", 1024, 1024, 1024)  # ~1.6e9 accesses: must not be materialised
    first = next(it)
    assert first.dtype == ACCESS and len(first) == CHUNK
    # default tiles 32 and inner order ikj: B, C, C' per element iteration, A once per (i, k) per column tile
    assert access_count("blocked", 1024, 1024, 1024) == 3 * 1024**3 + 1024 * 1024 * (1024 // 32)


def test_public_name_and_kernel_table():
    import gemmsim

    assert gemmsim.cpu_trace is cpu_trace
    assert set(KERNELS) == set(ORDERS) | {"blocked"}
    assert all(k.host is not None and not k.simd for k in KERNELS.values())


def test_bad_parameters_raise_kernel_error():
    with pytest.raises(KernelError, match="BM"):
        list(cpu_trace("blocked", 4, 4, 4, BM=0))
    with pytest.raises(KernelError, match="promotion"):
        list(cpu_trace("ijk", 4, 4, 4, promotion="registers"))
    with pytest.raises(KernelError, match="unknown"):
        cpu_trace("ijl", 4, 4, 4)
    with pytest.raises(KernelError, match="N must be"):
        cpu_trace("ijk", 4, 0, 4)
    with pytest.raises(KernelError, match="extra|permitted|Extra"):
        cpu_trace("ikj", 4, 4, 4, BM=4)


# ---------------------------------------------------------------------------------------------------------
# valgrind lackey: gcc -O0 is promotion "none", gcc -O1 is promotion "hoisted" (tests/data/lackey/).

_BANNER = re.compile(r"^==gemmsim== (.*)$")


def lackey_case(path: Path) -> tuple[dict, np.ndarray]:
    """The banner's fields and the trace, rebased from the C program's arrays to gemmsim's default layout."""
    with gzip.open(path, "rt") as f:
        fields = dict(kv.split("=", 1) for kv in _BANNER.match(f.readline()).group(1).split())
    t = concat(read_trace(path, "lackey"))
    M, N, K = int(fields["M"]), int(fields["N"]), int(fields["K"])
    lay = Layout.build(M, N, K, fields["dtype"])
    addr = t["addr"].astype(np.int64)
    out = np.full(len(t), -1, np.int64)
    for name, nbytes, base in (("A", lay.b_base - lay.a_base, lay.a_base), ("B", lay.c_base - lay.b_base, lay.b_base), ("C", lay.end - lay.c_base, lay.c_base)):
        src = int(fields[name], 16)
        inside = (addr >= src) & (addr < src + nbytes)
        out[inside] = addr[inside] - src + base
    assert (out >= 0).all()
    t["addr"] = out.astype(np.uint64)
    return fields, t


def check_lackey_file(path: Path) -> None:
    fields, t = lackey_case(path)
    M, N, K = int(fields["M"]), int(fields["N"]), int(fields["K"])
    params = {"promotion": fields["promotion"]}
    if fields["kernel"] == "blocked":
        params.update({k: fields[k] for k in ("tile_order", "inner_order")}, **{k: int(fields[k]) for k in ("BM", "BN", "BK")})
    g = full(fields["kernel"], M, N, K, dtype=fields["dtype"], **params)
    assert len(g) == len(t), f"{path.name}: {len(t)} accesses in lackey, {len(g)} generated"
    for field in ("addr", "size", "is_write"):
        assert np.array_equal(g[field], t[field]), f"{path.parent.name}/{path.name}: {field} differs"


STORED = sorted(LACKEY.glob("*/*.lackey.gz"))


def test_stored_lackey_traces_exist():
    # six orders + three blocked variants, x (O0, O1) x (5x7x6 fp32, 8x8x8 fp32, 5x7x6 fp64)
    assert len(STORED) == 9 * 6
    assert {p.parent.name.split("_")[0] for p in STORED} == {"O0", "O1"}


@pytest.mark.parametrize("path", STORED, ids=lambda p: f"{p.parent.name}/{p.name.split('.')[0]}")
def test_generated_traces_equal_stored_lackey_traces(path):
    check_lackey_file(path)


@pytest.mark.skipif(not (shutil.which("valgrind") and shutil.which("gcc")), reason="needs valgrind and gcc")
def test_lackey_traces_regenerated_live(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable}
    subprocess.run(["sh", str(LACKEY / "make_lackey.sh"), str(tmp_path)], check=True, capture_output=True, env=env, timeout=120)
    files = sorted(tmp_path.glob("*/*.lackey.gz"))
    assert [p.relative_to(tmp_path) for p in files] == [p.relative_to(LACKEY) for p in STORED]
    for p in files:
        check_lackey_file(p)
