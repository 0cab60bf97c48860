"""C = A @ B summed the way a kernel really sums, in exactly emulated arithmetic (gemmsim.numerics.arith).

A GEMM's result depends on three choices besides the input values (seed 000 sections 6.2 and 12.1):

* the accumulator format (fp64, fp32, fp16, bf16) and the format C is stored in;
* FMA (``fl(a*b + s)``, one rounding) or a multiply then an add (``fl(fl(a*b) + s)``, two roundings);
* the *summation order* of the K products of each element of C:

  ``sequential``  k = 0, 1, ..., K-1 into one accumulator. Every one of the six loop orders (ijk ... kji)
                  does this: they change the order in which *different* elements of C are visited, never the
                  order of the k terms of one element, so they give identical bits (``loop_order_gemm`` runs
                  them literally to show it).
  ``blocked``     a K-block of ``param`` (BK, BLIS's KC) is summed into a fresh register, then added to C.
  ``lanes``       ``param`` SIMD lanes (a vectorised dot product with ``omp simd reduction``): lane l sums
                  k = l, l + W, ...; the lanes are combined at the end by a halving tree (a horizontal add).
  ``splitk``      ``param`` contiguous chunks of K summed separately (split-K across threads or thread
                  blocks), then the partial sums added in chunk order.
  ``pairwise``    blocks of ``param`` products summed sequentially, then the block sums added by a balanced
                  binary tree (numpy's np.sum uses blocks of 8 with unrolling; recursion depth log2(K/param)).
  ``kahan``       compensated summation (Kahan), every operation in the accumulator format; the products are
                  rounded to the accumulator first (FMA does not apply).

Products are rounded to the accumulator format (mul + add) or not at all (FMA). With fp16 or bf16 inputs
and an fp32 accumulator the product is exact in fp32 already, so FMA and mul + add then give the same bits;
the lab shows it.

Cost: about 1e8 emulated multiply-adds per second per core, so a 1024^3 GEMM takes seconds
(bench/bench_numerics.py). Above ``FULL_LIMIT`` multiply-adds the lab computes a sample of rows of C
(``sample_rows``) instead of the whole matrix; the error statistics are then over those rows.
"""

from __future__ import annotations

import types

import numpy as np
from numba import njit, prange

from gemmsim.errors import ExperimentError
from gemmsim.numerics.arith import Format, add, fma, get_format, mul, round_to

#: Summation orders and the meaning of their parameter.
ORDERS = {
    "sequential": None,
    "blocked": "BK (K-block summed into a fresh accumulator, then added to C)",
    "lanes": "W (SIMD lanes; combined by a halving tree)",
    "splitk": "S (contiguous K chunks, partial sums added in order)",
    "pairwise": "b (sequential blocks of b products, then a binary tree)",
    "kahan": None,
}
_CODE = {name: i for i, name in enumerate(ORDERS)}
_DEFAULT_PARAM = {"sequential": 1, "blocked": 256, "lanes": 8, "splitk": 4, "pairwise": 1, "kahan": 1}

#: Above this many multiply-adds (M*N*K) the lab computes sampled rows of C, not all of it.
FULL_LIMIT = 1024**3
#: Rows of C computed when sampling.
SAMPLE_ROWS = 64

#: The six loop orders of seed 000 section 2.1.
LOOP_ORDERS = ("ijk", "ikj", "jik", "jki", "kij", "kji")


@njit(cache=True, inline="always")
def _step(a, b, s, use_fma, p, emin, maxv):
    if use_fma:
        return fma(a, b, s, p, emin, maxv)
    return add(mul(a, b, p, emin, maxv), s, p, emin, maxv)


@njit(cache=True, inline="always")
def _seq(arow, bcol, k0, k1, stride, use_fma, p, emin, maxv):
    s = 0.0
    for k in range(k0, k1, stride):
        s = _step(arow[k], bcol[k], s, use_fma, p, emin, maxv)
    return s


@njit(cache=True, inline="always")
def _seq4(arow, b0, b1, b2, b3, k0, k1, use_fma, p, emin, maxv):
    """Four independent sequential sums at once: the rounding chain of one sum is latency-bound, four
    interleaved chains keep the core busy (about 3x faster than one at a time)."""
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    for k in range(k0, k1):
        a = arow[k]
        s0 = _step(a, b0[k], s0, use_fma, p, emin, maxv)
        s1 = _step(a, b1[k], s1, use_fma, p, emin, maxv)
        s2 = _step(a, b2[k], s2, use_fma, p, emin, maxv)
        s3 = _step(a, b3[k], s3, use_fma, p, emin, maxv)
    return s0, s1, s2, s3


@njit(cache=True)
def _dot4(arow, BT, j, order, param, use_fma, p, emin, maxv, out):
    """Orders 0 (sequential), 1 (blocked) and 3 (split-K) for columns j..j+3, results in out[0:4]."""
    K = arow.shape[0]
    if order == 0:
        step = K
    elif order == 1:
        step = param
    else:
        step = (K + param - 1) // param
    c0 = 0.0
    c1 = 0.0
    c2 = 0.0
    c3 = 0.0
    for k0 in range(0, K, step):
        t0, t1, t2, t3 = _seq4(arow, BT[j], BT[j + 1], BT[j + 2], BT[j + 3], k0, min(k0 + step, K), use_fma, p, emin, maxv)
        if order == 0:
            c0, c1, c2, c3 = t0, t1, t2, t3
        else:
            c0 = add(c0, t0, p, emin, maxv)
            c1 = add(c1, t1, p, emin, maxv)
            c2 = add(c2, t2, p, emin, maxv)
            c3 = add(c3, t3, p, emin, maxv)
    out[0] = c0
    out[1] = c1
    out[2] = c2
    out[3] = c3


@njit(cache=True, inline="always")
def _tree(buf, n, p, emin, maxv):
    """Balanced halving tree over buf[0:n] (pairs (l, l + half)), in place; returns the root."""
    while n > 1:
        half = n // 2
        odd = n - 2 * half
        for l in range(half):
            buf[l] = add(buf[l], buf[l + half + odd], p, emin, maxv)
        n = half + odd
    return buf[0] if n == 1 else 0.0


@njit(cache=True)
def _dot(arow, bcol, order, param, use_fma, p, emin, maxv, scratch):
    K = arow.shape[0]
    if order == 0:  # sequential
        return _seq(arow, bcol, 0, K, 1, use_fma, p, emin, maxv)
    if order == 1:  # blocked
        c = 0.0
        for k0 in range(0, K, param):
            t = _seq(arow, bcol, k0, min(k0 + param, K), 1, use_fma, p, emin, maxv)
            c = add(c, t, p, emin, maxv)
        return c
    if order == 2:  # lanes: lane l holds k = l, l + W, ...; the W chains are independent, so step them together
        W = min(param, K)
        for l in range(W):
            scratch[l] = 0.0
        for k0 in range(0, K, W):
            for l in range(min(W, K - k0)):
                scratch[l] = _step(arow[k0 + l], bcol[k0 + l], scratch[l], use_fma, p, emin, maxv)
        return _tree(scratch, W, p, emin, maxv)
    if order == 3:  # split-K
        chunk = (K + param - 1) // param
        c = 0.0
        for k0 in range(0, K, chunk):
            t = _seq(arow, bcol, k0, min(k0 + chunk, K), 1, use_fma, p, emin, maxv)
            c = add(c, t, p, emin, maxv)
        return c
    if order == 4:  # pairwise
        n = 0
        for k0 in range(0, K, param):
            scratch[n] = _seq(arow, bcol, k0, min(k0 + param, K), 1, use_fma, p, emin, maxv)
            n += 1
        return _tree(scratch, n, p, emin, maxv)
    # Kahan
    s = 0.0
    c = 0.0
    for k in range(K):
        y = add(mul(arow[k], bcol[k], p, emin, maxv), -c, p, emin, maxv)
        t = add(s, y, p, emin, maxv)
        c = add(add(t, -s, p, emin, maxv), -y, p, emin, maxv)
        s = t
    return s


def _gemm_body(A, BT, rows, order, param, use_fma, p, emin, maxv, po, emino, maxvo):
    n_rows = rows.shape[0]
    N = BT.shape[0]
    K = A.shape[1]
    C = np.empty((n_rows, N))
    for r in prange(n_rows):
        scratch = np.empty(K + 4)
        arow = A[rows[r]]
        j = 0
        if order == 0 or order == 1 or order == 3:
            while j + 4 <= N:
                _dot4(arow, BT, j, order, param, use_fma, p, emin, maxv, scratch)
                for t in range(4):
                    C[r, j + t] = round_to(scratch[t], po, emino, maxvo)
                j += 4
        while j < N:
            s = _dot(arow, BT[j], order, param, use_fma, p, emin, maxv, scratch)
            C[r, j] = round_to(s, po, emino, maxvo)
            j += 1
    return C


def _clone(f, name: str):
    """A copy of f under another name: numba names its cache files after the function, and the serial and parallel
    compilations of one body must not share (and overwrite) one cache entry."""
    g = types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__)
    g.__qualname__ = name
    return g


_gemm_par = njit(cache=True, parallel=True)(_clone(_gemm_body, "_gemm_par"))
_gemm_ser = njit(cache=True)(_clone(_gemm_body, "_gemm_ser"))
#: Below this many multiply-adds one thread is faster than starting the parallel team.
PARALLEL_MIN = 1 << 22


def _fmt(f: str | Format, what: str) -> Format:
    return f if isinstance(f, Format) else get_format(f, what=what)


def check_config(order: str, param: int | None, acc: str | Format, use_fma: bool, in_fmt: str | None = None) -> int:
    """Validate an (order, parameter, accumulator, FMA) choice; returns the parameter with its default filled in."""
    if order not in ORDERS:
        raise ExperimentError(f"unknown summation order {order!r} (known: {', '.join(ORDERS)})")
    accf = _fmt(acc, "accumulator")
    if accf.name not in ("fp64", "fp32", "fp16", "bf16"):
        raise ExperimentError(f"accumulator {accf.name!r} is not supported (use fp64, fp32, fp16 or bf16)")
    if use_fma and accf.p >= 53 and in_fmt == "fp64":
        raise ExperimentError("FMA with fp64 inputs is not emulated (their product is not exact in float64)")
    param = _DEFAULT_PARAM[order] if param is None else int(param)
    if param < 1:
        raise ExperimentError(f"order {order!r}: parameter must be >= 1, got {param}")
    return param


def gemm(
    A: np.ndarray,
    B: np.ndarray,
    *,
    acc: str | Format = "fp32",
    out: str | Format | None = None,
    order: str = "sequential",
    param: int | None = None,
    use_fma: bool = True,
    rows: np.ndarray | None = None,
) -> np.ndarray:
    """C = A @ B in emulated arithmetic. A (M x K) and B (K x N) must already hold values of their storage format
    (gemmsim.numerics.arith.quantize). ``out`` is C's format (default: the accumulator's). ``rows`` computes
    only those rows of C (the result has len(rows) rows). With an fp64 accumulator the products of fp32-or-narrower
    inputs are exact, so FMA and mul + add coincide; fp64 *inputs* are multiplied with one float64 rounding (no
    emulated fp64 FMA)."""
    A = np.ascontiguousarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ExperimentError(f"shapes do not multiply: A {A.shape}, B {B.shape}")
    accf = _fmt(acc, "accumulator")
    outf = accf if out is None else _fmt(out, "output dtype")
    param = check_config(order, param, accf, use_fma)
    rows = np.arange(A.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
    BT = np.ascontiguousarray(B.T)
    kern = _gemm_par if len(rows) * BT.shape[0] * A.shape[1] >= PARALLEL_MIN else _gemm_ser
    return kern(A, BT, rows, _CODE[order], param, bool(use_fma), *accf.code(), *outf.code())


def sample_rows(M: int, N: int, K: int, seed: int = 0, limit: int = FULL_LIMIT, n: int = SAMPLE_ROWS) -> np.ndarray:
    """All rows when M*N*K <= limit, else n rows drawn without replacement (sorted)."""
    if M * N * K <= limit or M <= n:
        return np.arange(M)
    return np.sort(np.random.default_rng(seed).choice(M, size=n, replace=False))


@njit(cache=True)
def _loop_gemm(A, B, perm, use_fma, p, emin, maxv):
    M, K = A.shape
    N = B.shape[1]
    C = np.zeros((M, N))
    ext = (M, N, K)  # sizes of i, j, k
    idx = np.zeros(3, np.int64)
    for x in range(ext[perm[0]]):
        idx[perm[0]] = x
        for y in range(ext[perm[1]]):
            idx[perm[1]] = y
            for z in range(ext[perm[2]]):
                idx[perm[2]] = z
                i, j, k = idx[0], idx[1], idx[2]
                C[i, j] = _step(A[i, k], B[k, j], C[i, j], use_fma, p, emin, maxv)
    return C


def loop_order_gemm(A: np.ndarray, B: np.ndarray, loop_order: str, *, acc: str = "fp32", use_fma: bool = True) -> np.ndarray:
    """The literal triple loop in one of the six orders, C[i,j] updated in place (seed 000 section 2.1)."""
    if sorted(loop_order) != ["i", "j", "k"]:
        raise ExperimentError(f"loop order must be a permutation of 'ijk', got {loop_order!r}")
    accf = _fmt(acc, "accumulator")
    perm = np.array(["ijk".index(c) for c in loop_order], dtype=np.int64)
    return _loop_gemm(np.ascontiguousarray(A, np.float64), np.ascontiguousarray(B, np.float64), perm, bool(use_fma), *accf.code())


def rounding_depth(order: str, K: int, param: int | None = None) -> int:
    """Largest number of roundings on the path of one product into the sum (the n of Higham's gamma_n bound):
    K for sequential summation, about log2 K for pairwise (Higham, section 4.2)."""
    param = _DEFAULT_PARAM[order] if param is None else param
    clog = lambda n: int(np.ceil(np.log2(max(n, 1))))  # noqa: E731
    if order == "sequential":
        return K
    if order == "kahan":  # product rounding + Kahan's 2u + O(K u^2) (Higham, section 4.3)
        return 3
    if order == "blocked":
        return min(param, K) + -(-K // param)
    if order == "lanes":
        W = min(param, K)
        return -(-K // W) + clog(W)
    if order == "splitk":
        chunk = -(-K // param)
        return chunk + -(-K // chunk)
    if order == "pairwise":
        return min(param, K) + clog(-(-K // param))
    raise ExperimentError(f"unknown summation order {order!r}")
