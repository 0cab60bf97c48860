"""Edge blocks: what dimensions that are not multiples of the tile cost, in closed form (seed 000 section 4.2).

C (M x N) is cut into tiles of TM x TN (a microkernel's MR x NR, or the seed's 64 x 64 blocks). With
``M = qM*TM + rM`` and ``N = qN*TN + rN`` there are at most four kinds of tile: full (TM x TN), right edge
(TM x rN), bottom edge (rM x TN) and the corner (rM x rN). The share of C in partial tiles is
``1 - qM*TM * qN*TN / (M*N)``; for M = N = 1000 and 64-blocks, ``1 - 960^2 / 1000^2 = 7.84 %``.

Time of each strategy, relative to the ideal ``M*N*K / (lanes * fma_units)`` cycles (all at peak). A tile of
``r x c`` run by a vector kernel with ``v = r * ceil(c / lanes)`` vector accumulators takes
``max(v / fma_units, fma_latency)`` cycles per k step: a kernel with too few accumulators waits for its FMAs
(Low et al. 2016, eq. 1); with ``fma_latency = 0`` this is plain throughput. Per strategy:

- ``scalar``: full tiles by the vector kernel, partial tiles by a scalar loop ``scalar_slowdown`` times slower
  per element than the vector path (default: lanes, one lane of the vector's work per FMA). The seed's case:
  ``0.922 * 1 + 0.078 * 8 = 1.55``.
- ``masked``: partial tiles by the full-width vector kernel with lanes masked off: rows exact, but every row
  still issues all ``ceil(TN / lanes)`` vectors (masked lanes cost their slot, they just do not load, compute or
  store); ``mask_overhead`` multiplies a partial tile's time (AVX2 maskload/maskstore are slower than plain
  moves; AVX-512 masks are free, 1.0).
- ``pad``: zero-padded packing: every tile runs the full TM x TN kernel; the ghost FLOPs on padding are
  ``2 K (ceil(M/TM) TM ceil(N/TN) TN - M N)`` (at most TM-1 rows and TN-1 columns per panel).
- ``special``: a family of exact-shape kernels: an r x c tile issues ``r * ceil(c / lanes)`` vectors, bounded
  below by the FMA latency.

The K edge needs no strategy in a packed microkernel (its k loop simply runs fewer times) and is ignored.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gemmsim.errors import KernelError

#: Edge strategies, in the seed's order of sophistication.
STRATEGIES = ("scalar", "masked", "pad", "special")


def _check(M: int, N: int, TM: int, TN: int) -> None:
    for name, v in (("M", M), ("N", N), ("tile_m", TM), ("tile_n", TN)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise KernelError(f"edge model: {name} must be a positive integer, not {v!r}")


def tile_classes(M: int, N: int, TM: int, TN: int) -> list[tuple[int, int, int]]:
    """The tiles of an M x N matrix cut into TM x TN: ``[(rows, cols, count), ...]``, full tiles first.

    At most four classes (full, right edge, bottom edge, corner); classes with no tile are left out.
    """
    _check(M, N, TM, TN)
    qm, rm = divmod(M, TM)
    qn, rn = divmod(N, TN)
    out = [(TM, TN, qm * qn), (TM, rn, qm if rn else 0), (rm, TN, qn if rm else 0), (rm, rn, 1 if rm and rn else 0)]
    return [c for c in out if c[2] > 0]


def partial_fraction(M: int, N: int, TM: int, TN: int) -> float:
    """Share of the elements of C that lie in partial tiles (either axis): ``1 - (M//TM*TM)(N//TN*TN)/(M N)``."""
    _check(M, N, TM, TN)
    return 1.0 - (M // TM * TM) * (N // TN * TN) / (M * N)


def padded_elements(M: int, N: int, TM: int, TN: int) -> int:
    """Elements of C once both dimensions are rounded up to whole tiles."""
    _check(M, N, TM, TN)
    return -(-M // TM) * TM * (-(-N // TN) * TN)


def ghost_flops(M: int, N: int, K: int, TM: int, TN: int) -> int:
    """FLOPs a zero-padded kernel spends on padding: ``2 K (padded elements - M N)``."""
    return 2 * K * (padded_elements(M, N, TM, TN) - M * N)


def _tile_cycles(r: int, c: int, lanes: int, fma_units: int, fma_latency: float) -> float:
    """Cycles per k step of a vector kernel on an r x c tile."""
    v = r * -(-c // lanes)
    return max(v / fma_units, float(fma_latency))


@dataclass(frozen=True)
class EdgeCost:
    """Closed-form cost of one strategy: ``time_ratio`` = modelled time / ideal time (1.0 = every FMA slot useful)."""

    strategy: str
    tile_m: int
    tile_n: int
    partial_fraction: float
    time_ratio: float
    partial_time_share: float  # share of the modelled time spent on partial tiles
    ghost_flops: int

    def as_dict(self) -> dict:
        """Plain dict."""
        return asdict(self)


def edge_cost(
    M: int,
    N: int,
    K: int,
    tile_m: int,
    tile_n: int,
    strategy: str,
    *,
    lanes: int = 8,
    fma_units: int = 2,
    fma_latency: float = 0.0,
    scalar_slowdown: float | None = None,
    mask_overhead: float = 1.0,
) -> EdgeCost:
    """Modelled time of an M x N x K GEMM whose edges are handled by ``strategy`` (module docstring).

    Example (seed 000 section 4.2): ``edge_cost(1000, 1000, 1000, 64, 64, "scalar").time_ratio`` is 1.549.
    """
    if strategy not in STRATEGIES:
        raise KernelError(f"unknown edge strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    if lanes < 1 or fma_units < 1 or fma_latency < 0 or mask_overhead <= 0:
        raise KernelError("edge model: lanes and fma_units must be >= 1, fma_latency >= 0, mask_overhead > 0")
    slow = float(lanes if scalar_slowdown is None else scalar_slowdown)
    ideal_per_elem = 1.0 / (lanes * fma_units)  # cycles per element of C per k step at peak
    full = _tile_cycles(tile_m, tile_n, lanes, fma_units, fma_latency)
    total = partial = 0.0
    for r, c, count in tile_classes(M, N, tile_m, tile_n):
        if (r, c) == (tile_m, tile_n):
            cyc = full
        elif strategy == "scalar":
            cyc = slow * r * c * ideal_per_elem
        elif strategy == "pad":
            cyc = full
        elif strategy == "masked":
            cyc = mask_overhead * _tile_cycles(r, tile_n, lanes, fma_units, fma_latency)
        else:
            cyc = _tile_cycles(r, c, lanes, fma_units, fma_latency)
        total += cyc * count
        if (r, c) != (tile_m, tile_n):
            partial += cyc * count
    ideal = M * N * ideal_per_elem
    return EdgeCost(
        strategy=strategy,
        tile_m=tile_m,
        tile_n=tile_n,
        partial_fraction=partial_fraction(M, N, tile_m, tile_n),
        time_ratio=total / ideal,
        partial_time_share=partial / total if total else 0.0,
        ghost_flops=ghost_flops(M, N, K, tile_m, tile_n) if strategy == "pad" else 0,
    )


def edge_report(M: int, N: int, K: int, tile_m: int, tile_n: int, **model) -> dict:
    """Every strategy's cost for one shape and tile: ``{"edge_partial_fraction": .., "edge_ratio_<strategy>": ..,
    "edge_ghost_flops": ..}`` (``model``: the keyword arguments of ``edge_cost``)."""
    row = {"edge_partial_fraction": partial_fraction(M, N, tile_m, tile_n), "edge_ghost_flops": ghost_flops(M, N, K, tile_m, tile_n)}
    for s in STRATEGIES:
        row[f"edge_ratio_{s}"] = edge_cost(M, N, K, tile_m, tile_n, s, **model).time_ratio
    return row
