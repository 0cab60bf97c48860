"""Seed 000 section 3: the 8x8 lab on an 8-line fully associative LRU cache with 4-element lines, by hand.

ikj (hoisted): per row i, each k loads A[i][k] once and walks B's row k and C's row i (load, load, store per j):
25 accesses per (i, k), 1600 in all. Misses per i: A's row (2 lines), C's row (2 lines, then kept warm because every
k touches them), B's 8 rows (16 lines; all of B never fits in 8 lines, so none survives to the next i): 20.
8 x 20 = 160 misses, 1440 hits: 90.0 %.

ijk (hoisted): per (i, j), load C[i][j], then 8 x (A[i][k], B[k][j]), store C[i][j]: 18 accesses, 1152 in all.
B's column j touches 8 lines; between two uses of the same B line lie the other 7 B lines, 2 A lines and C's line
(10 > 7 others), so all 64 B loads of a row i miss. The store of C[i][j] comes after A's 2 lines and B's 8 lines
were touched since C's line was loaded: it misses too (8 per i), and write-allocate brings the line back, so the
next load of C hits unless j crosses into a new line (2 misses per i). A's line A0 (k < 4) is re-used at the next j
after B3, A1, B4..B7 and C: 7 other lines, a hit -- unless C's line changed in between (j = 0 and j = 4: 8 others),
and the same for A1: 4 misses per i. Per i: 64 + 8 + 2 + 4 = 78; 8 x 78 = 624 misses, 528 hits: 45.8 %.
"""

import pytest

from gemmsim.machine import load_machine
from gemmsim.sim.cpu import simulate_cpu


@pytest.mark.parametrize("kernel,accesses,misses", [("ikj", 1600, 160), ("ijk", 1152, 624)])
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
