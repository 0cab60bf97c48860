"""Reference products and error metrics for emulated GEMMs.

The reference is the exact product of the *stored* inputs (what the arithmetic was asked to compute), obtained
with error-free transformations in float64: each product a*b is split exactly into p + e (TwoProduct, Dekker's
splitting), and all 2K terms are summed with a cascade of TwoSums (Ogita, Rump and Oishi, "Accurate sum and dot
product", SIAM J. Sci. Comput. 26(6), 2005, algorithm Dot2). The result is as accurate as if computed in twice
float64's precision and then rounded: its error is at most u64 |x^T y| + gamma_K(u64)^2 |x|^T |y|, about 1e-29
|x|^T |y| for K ~ 1e4, far below any fp32 error. The tests check it against exact rationals (fractions.Fraction).

Errors are reported in units of Higham's bound (Accuracy and Stability of Numerical Algorithms, 2nd ed.,
section 3.5): a computed inner product of length K satisfies |fl(x^T y) - x^T y| <= gamma_K |x|^T |y| with
gamma_n = n u / (1 - n u), so for C = AB, |C_hat - C| <= gamma_K |A| |B| elementwise (u of the accumulator).
``bound_ratio`` <= 1 must always hold; how far below 1 it lies tells how pessimistic the worst case is
(random signs give errors ~ sqrt(K) u rather than K u).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

_SPLIT = 134217729.0  # 2^27 + 1, Dekker's splitter for float64


@njit(cache=True, inline="always")
def _two_prod(a, b):
    p = a * b
    c = _SPLIT * a
    ah = c - (c - a)
    al = a - ah
    c = _SPLIT * b
    bh = c - (c - b)
    bl = b - bh
    e = al * bl - (((p - ah * bh) - al * bh) - ah * bl)
    return p, e


@njit(cache=True, inline="always")
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@njit(cache=True)
def _dot2(x, y):
    p, s = _two_prod(x[0], y[0])
    for k in range(1, x.shape[0]):
        h, r = _two_prod(x[k], y[k])
        p, q = _two_sum(p, h)
        s += q + r
    return p + s


@njit(cache=True, parallel=True)
def _ref_gemm(A, BT, rows):
    N = BT.shape[0]
    C = np.empty((rows.shape[0], N))
    for r in prange(rows.shape[0]):
        for j in range(N):
            C[r, j] = _dot2(A[rows[r]], BT[j])
    return C


def reference(A: np.ndarray, B: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """A @ B as accurately as float64 can hold it (Dot2; see the module docstring)."""
    A = np.ascontiguousarray(A, dtype=np.float64)
    rows = np.arange(A.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
    return _ref_gemm(A, np.ascontiguousarray(np.asarray(B, np.float64).T), rows)


def gamma(n: int | float, u: float) -> float:
    """Higham's gamma_n = n u / (1 - n u) (infinite once n u >= 1)."""
    nu = n * u
    return nu / (1.0 - nu) if nu < 1.0 else math.inf


def abs_product(A: np.ndarray, B: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """|A| |B| (the scale of the componentwise bound), in float64 (its own rounding error is irrelevant here)."""
    A = np.abs(np.asarray(A, np.float64))
    if rows is not None:
        A = A[rows]
    return A @ np.abs(np.asarray(B, np.float64))


def metrics(C: np.ndarray, R: np.ndarray, G: np.ndarray, u: float, depth: int) -> dict:
    """Error of C against the reference R; G = |A||B|, u the accumulator's unit roundoff, depth the n of gamma_n.

    Returns max/mean relative error (over elements with R != 0), max/mean error in units of u |A||B|, the ratio
    to Higham's bound gamma_depth |A||B| (max over elements), and the count of non-finite results.
    """
    C = np.asarray(C, np.float64)
    finite = np.isfinite(C)
    err = np.abs(C - R)
    nz = (R != 0) & finite
    rel = err[nz] / np.abs(R[nz])
    gpos = (G > 0) & finite
    in_u = err[gpos] / (u * G[gpos])
    g = gamma(depth, u)
    return {
        "max_rel": float(rel.max()) if rel.size else 0.0,
        "mean_rel": float(rel.mean()) if rel.size else 0.0,
        "max_err_u": float(in_u.max()) if in_u.size else 0.0,
        "mean_err_u": float(in_u.mean()) if in_u.size else 0.0,
        "bound_ratio": float((err[gpos] / (g * G[gpos])).max()) if in_u.size and math.isfinite(g) else math.nan,
        "nonfinite": int((~finite).sum()),
        "elements": int(C.size),
    }


def differing_fraction(C1: np.ndarray, C2: np.ndarray) -> float:
    """Fraction of elements whose bits differ (NaNs compare equal to NaNs)."""
    same = (C1 == C2) | (np.isnan(C1) & np.isnan(C2))
    return float(1.0 - same.mean())


def ulp_distance(C1: np.ndarray, C2: np.ndarray, fmt_u: float) -> np.ndarray:
    """|C1 - C2| in units of the format's ulp at C2 (2u times the power of two at or below |C2|)."""
    mag = np.abs(C2)
    with np.errstate(divide="ignore"):
        ulp = np.where(mag > 0, 2 * fmt_u * np.exp2(np.floor(np.log2(np.where(mag > 0, mag, 1.0)))), np.nan)
    return np.abs(C1 - C2) / ulp
