"""Closed forms of how a matrix layout meets a cache or a memory system: sets a strided walk touches, alignment.

Set conflicts (Lam, Rothberg and Wolf 1991, "The cache performance and optimizations of blocked algorithms",
ASPLOS IV, section 3): walking down a column of a row-major matrix whose row is ``ld`` elements long visits
addresses ``base + k * ld * elem``. A cache with ``sets`` sets of ``line``-byte lines maps them to set
``(addr // line) % sets``; when the stride in lines is a multiple of a large power of two, the walk touches only
``sets / gcd(stride_lines, sets)`` sets, so at most that many x ``ways`` lines of the column can stay cached,
however large the cache. Padding the leading dimension by a few elements breaks the common factor.

Alignment (CUDA C++ Best Practices Guide, section 10.2.1 "Coalesced access to global memory"; cuBLAS
documentation, "Tensor core usage": leading dimensions and pointers that are multiples of 16 bytes): a warp's
row segment starts on a 32-byte sector only when the row's byte offset is a multiple of 32, and a 16-byte vector
load (LDG.128, cp.async.cg 16) of consecutive elements needs every row to start on a 16-byte boundary.
"""

from __future__ import annotations

import numpy as np

from gemmsim.trace import Layout


def sets_touched(base: int, stride_bytes: int, count: int, line_bytes: int, sets: int) -> int:
    """Distinct cache sets the addresses ``base + k*stride_bytes`` (k < count) map to (set = line % sets)."""
    k = np.arange(count, dtype=np.int64)
    lines = (base + k * int(stride_bytes)) // line_bytes
    return int(np.unique(lines % sets).size)


def set_histogram(base: int, stride_bytes: int, count: int, line_bytes: int, sets: int) -> np.ndarray:
    """How many of the ``count`` strided lines fall in each set (int array of length ``sets``)."""
    k = np.arange(count, dtype=np.int64)
    lines = np.unique((base + k * int(stride_bytes)) // line_bytes)
    return np.bincount(lines % sets, minlength=sets)


def column_walk_columns(machine, lay: Layout) -> dict:
    """Result columns for the walk down column 0 of op(B) (its K rows, the inner loop of ijk and jik): the leading
    dimension of B, and per cache level the sets touched and the most lines of that column the level can hold
    (sets touched x ways; the column has K distinct lines when the stride is at least a line)."""
    e = lay.elem
    ld = max(lay.b_rs, lay.b_cs) // e  # the stored row length (row-major: the stride of k)
    row = {"ldb_elements": ld, "b_column_stride_bytes": lay.b_rs}
    lines = int(np.unique((lay.b_base + np.arange(lay.K, dtype=np.int64) * lay.b_rs) // machine.caches[0].line_bytes).size)
    row["b_column_lines"] = lines
    for c in machine.caches:
        s = sets_touched(lay.b_base, lay.b_rs, lay.K, c.line_bytes, c.sets)
        row[f"b_column_sets_{c.name}"] = s
        row[f"b_column_capacity_lines_{c.name}"] = s * c.ways
    return row


def alignment_columns(lay: Layout, sector_bytes: int = 32) -> dict:
    """Leading dimensions of A, B, C (elements), whether they are multiples of 8 and 64 elements, whether every row of
    all three starts on a 16-byte boundary (a 16-byte vector load of a row is possible) and on a sector."""
    e = lay.elem
    out: dict = {}
    rows_16 = rows_sector = True
    lds = []
    for name, base, rs, cs in (("a", lay.a_base, lay.a_rs, lay.a_cs), ("b", lay.b_base, lay.b_rs, lay.b_cs), ("c", lay.c_base, lay.c_rs, lay.c_cs)):
        stride = max(rs, cs)  # bytes between consecutive stored rows (the contiguous direction has stride e)
        ld = stride // e
        out[f"ld{name}_elements"] = ld
        lds.append(ld)
        rows_16 &= base % 16 == 0 and stride % 16 == 0
        rows_sector &= base % sector_bytes == 0 and stride % sector_bytes == 0
    out["ld_multiple_of_8"] = all(x % 8 == 0 for x in lds)
    out["ld_multiple_of_64"] = all(x % 64 == 0 for x in lds)
    out["rows_16B_aligned"] = bool(rows_16)
    out["rows_sector_aligned"] = bool(rows_sector)
    out["vector_load_16B_possible"] = bool(rows_16) and 16 % e == 0
    return out
