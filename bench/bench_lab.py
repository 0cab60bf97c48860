"""Benchmark: response times of the labs' JSON API (gemmsim.lab.api.answer) for lab-sized requests.

    python bench/bench_lab.py [--repeats 3]

Issue 18 asks for answers "well under a second" for lab-sized requests. Each line is one request: the best of
--repeats wall times after one warm-up call (which compiles the numba code), and the JSON size the page downloads.
"""

from __future__ import annotations

import argparse
import json
import time

from gemmsim.lab.api import answer

CASES = [
    ("cache", {}),  # the seed preset, ijk: 1152 accesses walked one by one
    ("cache", {"order": "ikj"}),
    ("cache", {"N": 16, "order": "ikj", "lines": 32, "ways": 4}),
    ("cache", {"N": 32, "order": "blocked", "block": 8, "lines": 64}),  # walks the first 6000 of 99k accesses
    ("blocking", {"machine": "haswell", "N": 64}),
    ("blocking", {"machine": "haswell", "N": 128}),  # 7 block sizes, each simulated
    ("roofline", {}),
    ("bank", {}),
    ("wave", {}),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    answer("cache", {"N": 2})
    answer("bank", {})
    print(f"{'lab':9s} {'request':52s} {'best s':>8s} {'JSON':>9s}")
    for lab, params in CASES:
        best = float("inf")
        for _ in range(args.repeats):
            if lab == "blocking":  # the blocking lab memoises its sweep: time it cold
                from gemmsim.lab import api

                api._BLOCKING_MEMO.clear()
            t = time.perf_counter()
            out = answer(lab, params)
            best = min(best, time.perf_counter() - t)
        size = len(json.dumps(out))
        print(f"{lab:9s} {json.dumps(params):52s} {best:8.3f} {size / 1024:7.0f} KiB")


if __name__ == "__main__":
    main()
