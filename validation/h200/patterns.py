"""Generate the warp access patterns measured with Nsight Compute on the H200 (patterns.txt).

Each pattern is one warp instruction: a name, the memory space (smem | global), the operation (ld | st),
the access width in bytes and the 32 lane byte offsets (from a 256-byte-aligned base for global memory,
from the start of dynamic shared memory for shared memory). ``python patterns.py`` rewrites
patterns.txt; tests re-create the offsets from the CSVs, which carry all 32 of them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

LANE = np.arange(32)


def patterns() -> list[tuple[str, str, str, int, list[int]]]:
    rng = np.random.default_rng(20240601)
    out: list[tuple[str, str, str, int, np.ndarray]] = []

    def add(name, space, op, width, offs):
        offs = np.asarray(offs, dtype=np.int64)
        assert offs.shape == (32,) and (offs % width == 0).all(), name
        out.append((name, space, op, width, offs))

    # ---- shared memory loads ----
    for s in (1, 2, 3, 4, 8, 16, 32, 33, 64):
        add(f"smem_ld_w4_stride{s}", "smem", "ld", 4, LANE * s * 4)
    add("smem_ld_w1_stride1", "smem", "ld", 1, LANE)
    add("smem_ld_w1_stride4", "smem", "ld", 1, LANE * 4)
    add("smem_ld_w1_stride128", "smem", "ld", 1, LANE * 128)
    add("smem_ld_w2_stride1", "smem", "ld", 2, LANE * 2)
    add("smem_ld_w2_stride2", "smem", "ld", 2, LANE * 4)
    for s in (1, 2, 4, 16, 17):
        add(f"smem_ld_w8_stride{s}", "smem", "ld", 8, LANE * s * 8)
    for s in (1, 2, 4, 8, 9):
        add(f"smem_ld_w16_stride{s}", "smem", "ld", 16, LANE * s * 16)
    for w in (4, 8, 16):
        add(f"smem_ld_w{w}_broadcast", "smem", "ld", w, np.zeros(32))
    add("smem_ld_w4_two_words", "smem", "ld", 4, (LANE % 2) * 4)
    add("smem_ld_w4_two_words_same_bank", "smem", "ld", 4, (LANE % 2) * 128)
    add("smem_ld_w8_halfwarps_equal", "smem", "ld", 8, (LANE % 16) * 8)
    add("smem_ld_w8_lane_pairs", "smem", "ld", 8, (LANE // 2) * 8)
    add("smem_ld_w16_quarters_equal", "smem", "ld", 16, (LANE % 8) * 16)
    add("smem_ld_w16_lane_pairs", "smem", "ld", 16, (LANE // 2) * 16)
    add("smem_ld_w16_lane_quads", "smem", "ld", 16, (LANE // 4) * 16)
    for c in (0, 7):
        add(f"smem_ld_w4_transpose32x32_col{c}", "smem", "ld", 4, (LANE * 32 + c) * 4)
        add(f"smem_ld_w4_transpose32x33_col{c}", "smem", "ld", 4, (LANE * 33 + c) * 4)
    add("smem_ld_w4_row5_of_32x33", "smem", "ld", 4, (5 * 33 + LANE) * 4)
    add("smem_ld_w4_mixed_halves", "smem", "ld", 4, np.where(LANE < 16, LANE, LANE * 32) * 4)
    for i in range(4):
        add(f"smem_ld_w4_random{i}", "smem", "ld", 4, rng.integers(0, 1024, 32) * 4)
    for i in range(3):
        add(f"smem_ld_w8_random{i}", "smem", "ld", 8, rng.integers(0, 512, 32) * 8)
    for i in range(3):
        add(f"smem_ld_w16_random{i}", "smem", "ld", 16, rng.integers(0, 256, 32) * 16)
    # ---- shared memory stores ----
    for s in (1, 2, 32, 33):
        add(f"smem_st_w4_stride{s}", "smem", "st", 4, LANE * s * 4)
    add("smem_st_w4_broadcast", "smem", "st", 4, np.zeros(32))
    add("smem_st_w8_stride1", "smem", "st", 8, LANE * 8)
    add("smem_st_w8_stride2", "smem", "st", 8, LANE * 16)
    add("smem_st_w16_stride1", "smem", "st", 16, LANE * 16)
    add("smem_st_w16_stride2", "smem", "st", 16, LANE * 32)
    add("smem_st_w4_random0", "smem", "st", 4, rng.integers(0, 1024, 32) * 4)
    add("smem_st_w16_random0", "smem", "st", 16, rng.integers(0, 256, 32) * 16)
    # ---- global loads ----
    for s in (1, 2, 4, 8, 16, 32):
        add(f"global_ld_w4_stride{s}", "global", "ld", 4, LANE * s * 4)
    for off in (4, 32, 64, 96):
        add(f"global_ld_w4_stride1_offset{off}", "global", "ld", 4, LANE * 4 + off)
    add("global_ld_w1_stride1", "global", "ld", 1, LANE)
    add("global_ld_w1_stride4", "global", "ld", 1, LANE * 4)
    add("global_ld_w2_stride1", "global", "ld", 2, LANE * 2)
    add("global_ld_w8_stride1", "global", "ld", 8, LANE * 8)
    add("global_ld_w8_stride2", "global", "ld", 8, LANE * 16)
    add("global_ld_w8_stride1_offset8", "global", "ld", 8, LANE * 8 + 8)
    add("global_ld_w16_stride1", "global", "ld", 16, LANE * 16)
    add("global_ld_w16_stride2", "global", "ld", 16, LANE * 32)
    add("global_ld_w16_stride1_offset16", "global", "ld", 16, LANE * 16 + 16)
    add("global_ld_w4_broadcast", "global", "ld", 4, np.zeros(32))
    add("global_ld_w4_reversed", "global", "ld", 4, (31 - LANE) * 4)
    add("global_ld_w4_column_of_1024", "global", "ld", 4, LANE * 4096)
    for i in range(2):
        add(f"global_ld_w4_random{i}", "global", "ld", 4, rng.integers(0, 1024, 32) * 4)
    # ---- global stores ----
    add("global_st_w4_stride1", "global", "st", 4, LANE * 4)
    add("global_st_w4_stride2", "global", "st", 4, LANE * 8)
    add("global_st_w4_stride32", "global", "st", 4, LANE * 128)
    add("global_st_w4_stride1_offset4", "global", "st", 4, LANE * 4 + 4)
    add("global_st_w16_stride1", "global", "st", 16, LANE * 16)
    # ---- second run: when do lanes with equal addresses in adjacent pairs merge phases (8/16-byte)? ----
    rng2 = np.random.default_rng(20240602)

    def pairs(values):  # lanes 2j and 2j+1 get values[j]
        return np.repeat(np.asarray(values), 2)

    for i in range(3):
        add(f"smem_ld_w8_pairs_random{i}", "smem", "ld", 8, pairs(rng2.integers(0, 512, 16)) * 8)
        add(f"smem_ld_w16_pairs_random{i}", "smem", "ld", 16, pairs(rng2.integers(0, 256, 16)) * 16)
    for i in range(3):
        a = rng2.integers(0, 512, 32)
        keep = rng2.random(16) < 0.5
        a[1::2] = np.where(keep, a[0::2], a[1::2])
        add(f"smem_ld_w8_some_pairs_random{i}", "smem", "ld", 8, a * 8)
        b = rng2.integers(0, 256, 32)
        b[1::2] = np.where(keep, b[0::2], b[1::2])
        add(f"smem_ld_w16_some_pairs_random{i}", "smem", "ld", 16, b * 16)
    add("smem_ld_w8_pairs_first_half", "smem", "ld", 8,
        np.where(LANE < 16, (LANE // 2) * 8, np.where(LANE < 24, 128 + (LANE - 16) * 8, 192 + (LANE - 24) * 8)))
    add("smem_ld_w8_pairs_but_last", "smem", "ld", 8, np.where(LANE < 31, (LANE // 2) * 8, 256))
    add("smem_ld_w8_quads", "smem", "ld", 8, (LANE // 4) * 8)
    add("smem_ld_w16_pairs_first_half", "smem", "ld", 16, np.where(LANE < 16, (LANE // 2) * 16, 256 + (LANE - 16) * 16))
    add("smem_ld_w16_octets", "smem", "ld", 16, (LANE // 8) * 16)
    j = LANE // 2
    add("smem_ld_w16_pairs_interleaved", "smem", "ld", 16, np.where(j % 2 == 0, (j // 2) * 16, 512 + (j // 2) * 16))
    add("smem_ld_w8_pairs_interleaved", "smem", "ld", 8, np.where(j % 2 == 0, (j // 2) * 8, 256 + (j // 2) * 8))
    add("smem_st_w8_pairs", "smem", "st", 8, (LANE // 2) * 8)
    add("smem_st_w16_pairs", "smem", "st", 16, (LANE // 2) * 16)
    add("smem_st_w16_broadcast", "smem", "st", 16, np.zeros(32))
    return [(n, sp, op, w, [int(x) for x in o]) for n, sp, op, w, o in out]


def main() -> int:
    path = Path(__file__).with_name("patterns.txt")
    with path.open("w") as f:
        for name, space, op, width, offs in patterns():
            f.write(" ".join([name, space, op, str(width)] + [str(x) for x in offs]) + "\n")
    print(f"wrote {len(patterns())} patterns to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
