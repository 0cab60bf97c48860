"""How block columns push and pull each other in column order, from the traces -> force7.csv.

    python validation/h200/round7/force7.py

Per column-order launch of the naive kernel (round 7's and 7c/7d's traces), per block column (cohort): its start and
end (medians over its blocks, in block times) and its duration. A cohort that starts less than half a block after the
one before it runs beside it (they share A's panels: partners); call it a *follower*, and a cohort with a concurrent
partner after it but none before a *leader*. ``follower_minus_leader`` is the followers' mean duration, binned by how
far behind their partner they started, minus the launch's mean leader duration: negative = the follower catches up
(attraction), positive = it falls further behind (repulsion). This is the drift a schedule model would have to
reproduce (NOTES.md, launch order).
"""

from __future__ import annotations

import numpy as np

from process7 import launches, write_csv

BINS = (0.0, 0.01, 0.03, 0.06, 0.1, 0.15, 0.2, 0.3, 0.5)


def cohort_force(N: int, d: np.ndarray) -> list[dict]:
    """Rows (offset bin, followers, follower_minus_leader) of one launch's trace ``d``."""
    T = N // 16
    bt = float(np.median(d[:, 3] - d[:, 2]))
    s = np.median((d[:, 2] / bt).reshape(T, T), axis=1)
    e = np.median((d[:, 3] / bt).reshape(T, T), axis=1)
    dur = e - s
    behind = np.r_[np.inf, s[1:] - s[:-1]]  # how far behind the cohort before it
    ahead = np.r_[s[1:] - s[:-1], np.inf]
    follower = behind < 0.5
    leader = ~follower & (ahead < 0.5)
    base = float(dur[leader].mean())
    out = []
    for lo, hi in zip(BINS, BINS[1:]):
        m = follower & (behind >= lo) & (behind < hi)
        if m.sum() >= 3:
            out.append(dict(offset_lo=lo, offset_hi=hi, followers=int(m.sum()),
                            follower_minus_leader=round(float(dur[m].mean()) - base, 4)))
    return out


def main() -> None:
    rows = []
    for (n, order, ta, tb, rep), d in sorted(launches(), key=lambda x: x[0]):
        if order != "column" or ta == 1 or tb == 1:
            continue
        for r in cohort_force(n, d):
            rows.append(dict(N=n, a_l2_resident=int(ta == 2), b_l2_resident=int(tb == 2), launch=rep, **r))
    write_csv("force7.csv", rows)
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
