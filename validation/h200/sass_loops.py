"""cuobjdump -sass dumps of the mma_gemm kernels (rounds 3 and 4): each instantiation's instructions and its k-loop.

Used by round3/model_vs_measured_tc.py (loop sizes, fragment traces) and round4/process4.py (instruction counts).
"""

from __future__ import annotations

import re


def functions(sass_text: str, name_re: str):
    """For every function of the dump whose name line matches ``name_re``: (the match, [(address, instruction)]),
    the instruction text as the dump prints it up to its ';'."""
    for part in re.split(r"\n\s*Function : ", sass_text)[1:]:
        m = re.search(name_re, part.split("\n", 1)[0])
        if m:
            yield m, [(int(a, 16), t) for a, t in re.findall(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", part)]


def longest_loop(ins: list, holding: str | None = None):
    """(first, last) index in ``ins`` of the body of the longest backward branch (the k-loop), counting only bodies
    that hold an instruction containing ``holding`` when given; None without one. Ties: the first found."""
    index = {a: k for k, (a, _) in enumerate(ins)}
    loops = []
    for k, (a, t) in enumerate(ins):
        b = re.search(r"BRA .*?(0x[0-9a-f]+)", t)
        if b and int(b.group(1), 16) < a and int(b.group(1), 16) in index:
            i0 = index[int(b.group(1), 16)]
            if holding is None or any(holding in x for _, x in ins[i0:k + 1]):
                loops.append((i0, k))
    return max(loops, key=lambda x: x[1] - x[0]) if loops else None
