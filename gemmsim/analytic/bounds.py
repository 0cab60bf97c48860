"""Communication lower bounds of the classical GEMM: how few bytes any schedule can move through a fast memory.

Hong and Kung (1981, "I/O complexity: the red-blue pebble game", STOC) showed that an n x n x n matrix product
that performs all n^3 multiply-adds with a fast memory of S words moves Omega(n^3 / sqrt(S)) words to and from
slow memory. The constant used here is the tight one of Smith, Lowery, Langou and van de Geijn (2019, "A tight
I/O lower bound for matrix multiplication", arXiv:1702.02017, Theorem 2): for C (M x N) += A (M x K) B (K x N)

    Q >= 2 M N K / sqrt(S) - 2 S   words (reads + writes),

and no schedule can move less than the compulsory traffic either: every input read once and every output
written once, M K + K N + M N words. ``hong_kung_words`` is the larger of the two. It holds for every
schedule of the classical algorithm (not for Strassen-like ones, which do fewer products) and for any
replacement policy, so a simulated cache of S words can only sit on or above it.

The tiled schedule that nearly reaches it keeps three T x T tiles in fast memory, T = floor(sqrt(S / 3)),
and moves about 2 M N K / T words (``tiled_words``): a factor sqrt(3) above the bound's leading term.

Bytes are words x element bytes. A cache level's "fast memory" is everything at or above it (registers are
left out: a few hundred bytes that would lower the bound by a fraction of a percent).
"""

from __future__ import annotations

import math

from gemmsim.errors import KernelError
from gemmsim.units import dtype_bytes


def _check(M: int, N: int, K: int, S: float) -> None:
    for name, v in (("M", M), ("N", N), ("K", K)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise KernelError(f"{name} must be a positive integer (got {v!r})")
    if not S > 0:
        raise KernelError(f"the fast memory must hold at least one word (got S = {S!r})")


def compulsory_words(M: int, N: int, K: int) -> int:
    """Words every schedule moves at least: A and B read once, C written once (M K + K N + M N)."""
    return M * K + K * N + M * N


def pebbling_words(M: int, N: int, K: int, S: float) -> float:
    """The red-blue pebbling bound 2 M N K / sqrt(S) - 2 S (Smith et al. 2019), words; may be negative for small problems."""
    _check(M, N, K, S)
    return 2.0 * M * N * K / math.sqrt(S) - 2.0 * S


def hong_kung_words(M: int, N: int, K: int, S: float) -> float:
    """Lower bound on the words moved between a fast memory of S words and slow memory: max(pebbling, compulsory)."""
    return max(pebbling_words(M, N, K, S), float(compulsory_words(M, N, K)))


def hong_kung_bytes(M: int, N: int, K: int, fast_bytes: float, dtype: str = "fp32") -> float:
    """``hong_kung_words`` in bytes for a fast memory of ``fast_bytes`` bytes of ``dtype`` elements."""
    e = dtype_bytes(dtype)
    return hong_kung_words(M, N, K, fast_bytes / e) * e


def tile_side(S: float) -> int:
    """Side T of three square tiles (one each of A, B, C) that fit S words: floor(sqrt(S / 3)), at least 1."""
    if not S > 0:
        raise KernelError(f"the fast memory must hold at least one word (got S = {S!r})")
    return max(1, math.isqrt(int(S // 3)))


def tiled_words(M: int, N: int, K: int, T: int) -> float:
    """Words the three-tile schedule with square T x T tiles moves: A and B panels per C tile (2 M N K / T for
    tiles that divide the problem; edges rounded up) plus C read and written once (2 M N)."""
    _check(M, N, K, 1)
    tm, tn = -(-M // T), -(-N // T)
    return float(tn * M * K + tm * K * N + 2 * M * N)


def bound_columns(M: int, N: int, K: int, dtype: str, fast: dict[str, float], traffic: dict[str, float]) -> dict:
    """Result columns: for each named fast memory (name -> bytes) the bound ``hong_kung_bytes_<name>`` and, where
    ``traffic`` has the bytes the kernel moved below it, ``traffic_over_bound_<name>``. The name ``dram`` also gives
    the plain ``hong_kung_bytes`` and ``traffic_over_bound`` (DRAM traffic against the whole chip's fast memory)."""
    row: dict = {}
    for name, size in fast.items():
        b = hong_kung_bytes(M, N, K, size, dtype)
        row[f"hong_kung_bytes_{name}"] = b
        if name in traffic:
            row[f"traffic_over_bound_{name}"] = traffic[name] / b if b else float("nan")
    if "dram" in fast:
        row["hong_kung_bytes"] = row["hong_kung_bytes_dram"]
        row["hong_kung_fast_bytes"] = fast["dram"]
        if "traffic_over_bound_dram" in row:
            row["traffic_over_bound"] = row["traffic_over_bound_dram"]
    return row


def cpu_bound_columns(machine, M: int, N: int, K: int, dtype: str, traffic: dict[str, float], threads: int = 1) -> dict:
    """Bounds for each cache level of a CPU machine and for DRAM. The fast memory of a level is that level and every
    level above it, private levels counted once per core the kernel uses (a bound for the traffic of all cores
    together); DRAM's is all levels."""
    fast: dict[str, float] = {}
    acc = 0.0
    for c in machine.caches:
        acc += c.size * (1 if c.shared else max(1, threads))
        fast[c.name] = acc
    fast["dram"] = acc
    return bound_columns(M, N, K, dtype, fast, traffic)


def gpu_fast_bytes(machine) -> dict[str, float]:
    """Fast memories of a GPU: ``sm`` -- one SM's register file + L1/shared array (the bound applies per SM to the
    traffic into that SM, summed over SMs it is 2MNK/sqrt(S_sm) - 2 S_sm x SMs); ``dram`` -- the L2 plus every
    SM's L1/shared array and register file (everything on chip)."""
    sm = machine.limits.registers_per_sm * 4 + machine.l1.unified_size
    return {"sm": float(sm), "dram": float(machine.l2.size + machine.sms * sm)}


def gpu_bound_columns(machine, M: int, N: int, K: int, dtype: str, dram_bytes: float, l2_bytes: float) -> dict:
    """``hong_kung_bytes`` (DRAM against all on-chip memory) and ``hong_kung_bytes_sm`` (L2 -> SM traffic against
    the SMs' own memories, the per-SM bound summed over SMs) with the kernel's ratios to them."""
    fast = gpu_fast_bytes(machine)
    e = dtype_bytes(dtype)
    row = bound_columns(M, N, K, dtype, {"dram": fast["dram"]}, {"dram": dram_bytes})
    s = fast["sm"] / e
    per_sm = max(2.0 * M * N * K / math.sqrt(s) - 2.0 * s * machine.sms, float(compulsory_words(M, N, K))) * e
    row["hong_kung_bytes_sm"] = per_sm
    row["traffic_over_bound_sm"] = l2_bytes / per_sm if per_sm else float("nan")
    return row


def naive_intensity(elem_bytes: int) -> float:
    """Seed 001: the naive kernel (one thread per C element, no reuse) loads A[i][k] and B[k][j] for each FMA:
    2 FLOPs per 2 elements, 1 / elem FLOP per byte -- 1/4 for fp32, whatever the size."""
    return 2.0 / (2 * elem_bytes)


def tile_intensity(BM: int, BN: int, elem_bytes: int) -> float:
    """Seed 001: a BM x BN tile loads BM + BN elements per k step and does 2 BM BN FLOPs on them:
    I = 2 BM BN / ((BM + BN) elem) FLOP/B (T/4 for a square fp32 tile; 64 for 128 x 128 fp16, 128 for 256 x 256)."""
    for name, v in (("BM", BM), ("BN", BN), ("elem_bytes", elem_bytes)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise KernelError(f"{name} must be a positive integer (got {v!r})")
    return 2.0 * BM * BN / ((BM + BN) * elem_bytes)
