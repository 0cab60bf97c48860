"""Split a valgrind lackey trace of gemm_lackey.c into one small file per kernel (used by make_lackey.sh).

Keeps, between consecutive stores to the program's marker variable, the data accesses that fall inside A, B
or C (dropping the stack traffic of -O0 loop counters and everything outside the kernels), as the original
lackey lines. Each output file starts with a '==gemmsim==' banner line (lackey readers skip '==' lines) that
records the array bases and the case, so the test can rebase the addresses to gemmsim's layout.

Usage: python filter_lackey.py LACKEY_LOG PROGRAM_STDOUT OUTDIR M N K BM BN BK DTYPE OPT COMPILER
Standard library only.
"""

import gzip
import re
import sys
from pathlib import Path

KERNELS = [
    ("ijk", {}),
    ("ikj", {}),
    ("jik", {}),
    ("jki", {}),
    ("kij", {}),
    ("kji", {}),
    ("blocked", {"tile_order": "ijk", "inner_order": "ikj"}),
    ("blocked", {"tile_order": "kij", "inner_order": "ijk"}),
    ("blocked", {"tile_order": "jki", "inner_order": "kji"}),
]
MAXE = 4096
LINE = re.compile(r"^ ([LSM]) ([0-9a-f]+),(\d+)\s*$")


def main(argv: list[str]) -> None:
    log, stdout, outdir, M, N, K, BM, BN, BK, dtype, opt, compiler = argv
    M, N, K, BM, BN, BK = map(int, (M, N, K, BM, BN, BK))
    info = {k: int(v, 16) for k, v in re.findall(r"(A|B|C|MARK)=0x([0-9a-f]+)", Path(stdout).read_text())}
    elem = int(re.search(r"ELEM=(\d+)", Path(stdout).read_text()).group(1))
    used = {"A": M * K, "B": K * N, "C": M * N}
    sections: list[list[str]] = []
    other: list[int] = []
    cur = None
    with open(log) as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            kind, a, size = m.group(1), int(m.group(2), 16), int(m.group(3))
            if kind == "S" and a == info["MARK"]:
                if len(sections) == len(KERNELS):
                    break
                cur = []
                sections.append(cur)
                other.append(0)
                continue
            if cur is None:
                continue
            for name in "ABC":
                base = info[name]
                if base <= a < base + MAXE * elem:
                    if not a < base + used[name] * elem or size != elem:
                        raise SystemExit(f"access {line.strip()!r} is outside {name}'s {used[name]} elements or not one element")
                    cur.append(line.rstrip("\n"))
                    break
            else:
                other[-1] += 1
    if len(sections) != len(KERNELS):
        raise SystemExit(f"found {len(sections)} marked kernels in {log}, expected {len(KERNELS)}")
    promotion = {"O0": "none", "O1": "hoisted"}[opt]
    out = Path(outdir) / f"{opt}_{M}x{N}x{K}_{dtype}"
    out.mkdir(parents=True, exist_ok=True)
    for (kernel, params), lines, n_other in zip(KERNELS, sections, other):
        p = dict(params, promotion=promotion)
        if kernel == "blocked":
            p.update(BM=BM, BN=BN, BK=BK)
        fields = [f"A=0x{info['A']:x}", f"B=0x{info['B']:x}", f"C=0x{info['C']:x}", f"M={M}", f"N={N}", f"K={K}",
                  f"dtype={dtype}", f"opt={opt}", f"kernel={kernel}"] + [f"{k}={v}" for k, v in p.items()]
        fields += [f"other_accesses={n_other}", f"compiler={compiler}"]
        name = kernel if kernel != "blocked" else f"blocked_{params['tile_order']}_{params['inner_order']}"
        text = "==gemmsim== " + " ".join(fields) + "\n" + "\n".join(lines) + "\n"
        with open(out / f"{name}.lackey.gz", "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
            gz.write(text.encode())


if __name__ == "__main__":
    main(sys.argv[1:])
