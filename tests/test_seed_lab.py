"""Seed 000 section 3: the 8x8 lab on an 8-line fully associative LRU cache with 4-element lines, by hand.

ikj (hoisted): per row i, each k loads A[i][k] once and walks B's row k and C's row i (load, load, store per j):
25 accesses per (i, k), 1600 in all. Misses per i: A's row (2 lines), C's row (2 lines, then kept warm because every
k touches them), B's 8 rows (16 lines; all of B never fits in 8 lines, so none survives to the next i): 20.
8 x 20 = 160 misses, 1440 hits: 90.0 %.

ijk (hoisted): per (i, j), load C[i][j], then 8 x (A[i][k], B[k][j]), store C[i][j]: 18 accesses, 1152 in all.
B's column j touches 8 lines; between two uses of the same B line lie the other 7 B lines, 2 A lines and C's line
(10 > 7 others), so every one of the 512 B loads misses. A's two lines are re-used with at most 7 other lines in
between (hits) except when a new row i starts (2 misses per i); C's line changes every 4 j (2 misses per i).
512 + 8 x 4 = 544 misses, 608 hits: 52.8 %.
"""

import pytest

from gemmsim.machine import load_machine
from gemmsim.sim_cpu import simulate_cpu


@pytest.mark.parametrize("kernel,accesses,misses", [("ikj", 1600, 160), ("ijk", 1152, 544)])
def test_seed_lab_by_hand(kernel, accesses, misses):
    row = simulate_cpu(load_machine("toy"), kernel, 8, 8, 8, "fp32")
    assert row["L1_accesses"] == accesses
    assert row["L1_misses"] == misses
    assert row["memory_line_reads"] == misses  # every miss reads a line from memory


def test_seed_lab_without_register_promotion_reloads_everything():
    hoisted = simulate_cpu(load_machine("toy"), "ikj", 8, 8, 8, "fp32")
    none = simulate_cpu(load_machine("toy"), "ikj", 8, 8, 8, "fp32", promotion="none")
    assert none["L1_accesses"] == 4 * 8**3  # load C, load A, load B, store C per innermost iteration
    assert none["L1_hit_rate"] > hoisted["L1_hit_rate"]  # the extra loads are all hits
