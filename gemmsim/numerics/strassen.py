"""Strassen's and Winograd's fast multiplication, in emulated arithmetic, with their operation counts.

One level splits A, B, C into 2 x 2 blocks and forms C from 7 block products instead of 8 (Strassen, "Gaussian
elimination is not optimal", Numer. Math. 13, 1969), paying 18 block additions; Winograd's variant needs 15
(Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., chapter 23, analyses both;
and Boyer, Dumas, Pernet and Zhou, "Memory efficient scheduling of Strassen-Winograd's matrix multiplication
algorithm", ISSAC 2009). Recursion stops at ``cutoff`` (the block then goes to the classical kernel), so
``levels`` = log2(n / cutoff) for n = cutoff 2^levels.

Error: Higham's Theorem 23.2 bounds Strassen's error normwise, ||C_hat - C|| <= [(n/n0)^log2(12) (n0^2 + 5 n0)
- 5 n] u ||A|| ||B|| + O(u^2) (max norm), against n^2 u ||A|| ||B|| for the classical algorithm in the same norm;
unlike the classical algorithm there is no componentwise bound |C_hat - C| <= c u |A||B|. The lab measures
both algorithms on the same inputs.
"""

from __future__ import annotations

import math

import numpy as np

from gemmsim.errors import ExperimentError
from gemmsim.numerics.arith import Format, add_array, get_format
from gemmsim.numerics.orders import gemm

ALGORITHMS = ("classical", "strassen", "winograd")
#: Block additions per level.
ADDITIONS = {"strassen": 18, "winograd": 15}


def _add(X, Y, fmt: Format):
    return add_array(X, Y, fmt)


def _sub(X, Y, fmt: Format):
    return add_array(X, -Y, fmt)


def _classical(A, B, fmt: Format, use_fma: bool):
    return gemm(A, B, acc=fmt, order="sequential", use_fma=use_fma)


def _strassen(A, B, fmt, cutoff, use_fma, winograd):
    n = A.shape[0]
    if n <= cutoff or n % 2:
        return _classical(A, B, fmt, use_fma)
    h = n // 2
    A11, A12, A21, A22 = A[:h, :h], A[:h, h:], A[h:, :h], A[h:, h:]
    B11, B12, B21, B22 = B[:h, :h], B[:h, h:], B[h:, :h], B[h:, h:]
    rec = lambda X, Y: _strassen(X, Y, fmt, cutoff, use_fma, winograd)  # noqa: E731
    ad = lambda X, Y: _add(X, Y, fmt)  # noqa: E731
    sb = lambda X, Y: _sub(X, Y, fmt)  # noqa: E731
    C = np.empty_like(A)
    if not winograd:
        M1 = rec(ad(A11, A22), ad(B11, B22))
        M2 = rec(ad(A21, A22), B11)
        M3 = rec(A11, sb(B12, B22))
        M4 = rec(A22, sb(B21, B11))
        M5 = rec(ad(A11, A12), B22)
        M6 = rec(sb(A21, A11), ad(B11, B12))
        M7 = rec(sb(A12, A22), ad(B21, B22))
        C[:h, :h] = ad(sb(ad(M1, M4), M5), M7)
        C[:h, h:] = ad(M3, M5)
        C[h:, :h] = ad(M2, M4)
        C[h:, h:] = ad(ad(sb(M1, M2), M3), M6)
        return C
    S1 = ad(A21, A22)
    S2 = sb(S1, A11)
    S3 = sb(A11, A21)
    S4 = sb(A12, S2)
    T1 = sb(B12, B11)
    T2 = sb(B22, T1)
    T3 = sb(B22, B12)
    T4 = sb(T2, B21)
    P1 = rec(A11, B11)
    P2 = rec(A12, B21)
    P3 = rec(S4, B22)
    P4 = rec(A22, T4)
    P5 = rec(S1, T1)
    P6 = rec(S2, T2)
    P7 = rec(S3, T3)
    U2 = ad(P1, P6)
    U3 = ad(U2, P7)
    U4 = ad(U2, P5)
    C[:h, :h] = ad(P1, P2)
    C[:h, h:] = ad(U4, P3)
    C[h:, :h] = sb(U3, P4)
    C[h:, h:] = ad(U3, P5)
    return C


def fast_gemm(A: np.ndarray, B: np.ndarray, *, algorithm: str = "strassen", cutoff: int = 32, acc: str = "fp32", use_fma: bool = True) -> np.ndarray:
    """C = A @ B by ``algorithm`` (classical, strassen, winograd), every operation rounded to ``acc``.

    Square matrices; a size that is not cutoff * 2^L stops recursing at the first odd block size."""
    if algorithm not in ALGORITHMS:
        raise ExperimentError(f"unknown algorithm {algorithm!r} (known: {', '.join(ALGORITHMS)})")
    if cutoff < 1:
        raise ExperimentError(f"cutoff must be >= 1, got {cutoff}")
    A = np.ascontiguousarray(A, np.float64)
    B = np.ascontiguousarray(B, np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape != B.shape:
        raise ExperimentError(f"fast_gemm needs square matrices of one size, got A {A.shape}, B {B.shape}")
    fmt = get_format(acc, what="accumulator")
    if algorithm == "classical":
        return _classical(A, B, fmt, use_fma)
    return _strassen(A, B, fmt, cutoff, use_fma, algorithm == "winograd")


def levels(n: int, cutoff: int) -> int:
    """Recursion levels the algorithm takes on an n x n problem."""
    lv = 0
    while n > cutoff and n % 2 == 0:
        n //= 2
        lv += 1
    return lv


def flop_counts(n: int, cutoff: int, algorithm: str) -> dict:
    """Multiplications, additions and total FLOPs of an n x n product (classical base: n0^3 mul, n0^2 (n0-1) add).

    Also the words each level's block additions read and write (2 reads + 1 write per added element), the traffic
    the cache models see as low-intensity work (seed 000 section 17.3: one FLOP per 12 bytes in fp32)."""
    if algorithm == "classical":
        return {"mul": n**3, "add": n * n * (n - 1), "flops": n**3 + n * n * (n - 1), "add_words": 0, "levels": 0}
    lv = levels(n, cutoff)
    m = n >> lv
    mul = 7**lv * m**3
    add = 7**lv * m * m * (m - 1)
    add_words = 0
    a = ADDITIONS[algorithm]
    for level in range(lv):
        h = n >> (level + 1)
        count = 7**level * a * h * h
        add += count
        add_words += 3 * count
    return {"mul": mul, "add": add, "flops": mul + add, "add_words": add_words, "levels": lv}


def higham_bound(n: int, cutoff: int, algorithm: str) -> float:
    """The constant c in ||C_hat - C||_max <= c u ||A||_max ||B||_max (Higham, Theorems 23.2 and 23.3 for Strassen
    and Winograd's variant; n^2 for classical: |C_hat - C| <= gamma_n |A||B| summed over n terms)."""
    if algorithm == "classical":
        return float(n * n)
    lv = levels(n, cutoff)
    n0 = n >> lv
    if algorithm == "strassen":
        return (n / n0) ** math.log2(12) * (n0 * n0 + 5 * n0) - 5 * n
    return (n / n0) ** math.log2(18) * (n0 * n0 + 6 * n0) - 6 * n
