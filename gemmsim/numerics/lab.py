"""The numerics experiment: CSV tables, figures and a report with verdicts (``python -m gemmsim numerics FILE``,
or ``python -m gemmsim run FILE`` for a file with ``kind: numerics``).

Studies (each one CSV, one figure, one verdict paragraph in report.md):

* ``error_vs_k``   error against K per input dtype / accumulator, all-positive and random-sign data, with gamma_K.
* ``fma``          FMA against multiply-then-add: error and the share of elements whose bits differ.
* ``orders``       one GEMM summed in the six loop orders (run literally), blocked, SIMD-lane, split-K, pairwise
                   and Kahan orders: error and bits that differ from the ijk result.
* ``mixed``        fp16 / bf16 / fp8 storage with fp32 or low-precision accumulation, against the unrounded data.
* ``loss_scaling`` fp16 gradients scaled by S before storage: underflow, overflow, error of dW = X^T G.
* ``quant``        int8 / int4 (per tensor, per channel, zero point) against fp32 and bf16, with bytes moved.
* ``strassen``     Strassen and Winograd against classical: error growth and operations saved.

Errors are against the exact product (gemmsim.numerics.error.reference) of the stored inputs unless a study says
it compares with the unrounded fp64 data.
"""

from __future__ import annotations

import csv
import math
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gemmsim.errors import ExperimentError
from gemmsim.numerics import quant as Q
from gemmsim.numerics.arith import FORMATS, quantize
from gemmsim.numerics.error import abs_product, differing_fraction, metrics, reference
from gemmsim.numerics.orders import LOOP_ORDERS, gemm, loop_order_gemm, rounding_depth, sample_rows
from gemmsim.numerics.strassen import fast_gemm, flop_counts, higham_bound

STUDIES = ("error_vs_k", "fma", "orders", "mixed", "loss_scaling", "quant", "strassen", "strassen_time")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Config(_Strict):
    """What the numerics experiment runs. Every field has a default; ``quick`` replaces fields for a fast run."""

    schema_version: int = 1
    kind: Literal["numerics"] = "numerics"
    name: str = "numerics"
    description: str = ""
    studies: list[str] = Field(default_factory=lambda: list(STUDIES))
    seed: int = 0
    MN: int = Field(64, gt=0, description="Rows and columns of C in the K sweeps (C is MN x MN).")
    Ks: list[int] = Field(default_factory=lambda: [16, 64, 256, 1024, 4096, 16384])
    configs: list[str] = Field(
        default_factory=lambda: ["fp32/fp32", "fp16/fp16", "fp16/fp32", "bf16/bf16", "bf16/fp32"],
        description="input/accumulator pairs for error_vs_k",
    )
    order_K: int = Field(4096, gt=0, description="K of the orders study.")
    order_MN: int = Field(32, gt=0)
    blocked_BK: int = 256
    lanes: int = 8
    split_k: int = 4
    loss_K: int = 1024
    loss_log2_scales: list[int] = Field(default_factory=lambda: [0, 4, 8, 12, 16, 20, 24, 28, 32])
    quant_K: int = 1024
    strassen_sizes: list[int] = Field(default_factory=lambda: [64, 128, 256, 512])
    strassen_cutoff: int = Field(16, gt=0)
    time_machines: list[str] = Field(default_factory=lambda: ["haswell", "skylake_avx512"], description="CPU machines for strassen_time.")
    time_sizes: list[int] = Field(default_factory=lambda: [256, 512])
    time_cutoff: int = Field(128, gt=0, description="Strassen/Winograd recursion cutoff in the simulated kernels.")
    quick: dict[str, Any] = Field(default_factory=dict)

    def quickened(self) -> "Config":
        data = self.model_dump()
        data.update(self.quick)
        data["quick"] = {}
        return Config(**data)


def load_config(path: str | Path | None, quick: bool = False) -> Config:
    """Read and validate a numerics experiment file (None: the defaults); problems name the file and field."""
    data: dict = {}
    src = str(path) if path else "<defaults>"
    if path:
        if not Path(path).exists():
            raise ExperimentError("no such experiment file", source=src)
        from gemmsim.machine.schema import read_yaml  # strict: UTF-8 with byte offsets, duplicate keys (issue 16)

        data = read_yaml(Path(path), ExperimentError) or {}
        if not isinstance(data, dict):
            raise ExperimentError("the file must be a mapping of fields", source=src)
    prefix = ""
    try:
        cfg = Config(**data)
        prefix = "quick."  # the quick variant is checked even when not asked for, so a typo there shows up at once
        quick_cfg = cfg.quickened()
        if quick:
            cfg = quick_cfg
    except ValidationError as err:
        probs = [f"{prefix}{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in err.errors()]
        raise ExperimentError("invalid numerics experiment", source=src, problems=probs) from None
    bad = [s for s in cfg.studies if s not in STUDIES]
    probs = [f"studies: unknown study {s!r} (known: {', '.join(STUDIES)})" for s in bad]
    for i, c in enumerate(cfg.configs):
        parts = c.split("/")
        if len(parts) != 2 or parts[0] not in FORMATS or parts[1] not in ("fp64", "fp32", "fp16", "bf16"):
            probs.append(f"configs[{i}]: {c!r} is not INPUT/ACC (inputs: {', '.join(FORMATS)}; accumulators fp64, fp32, fp16, bf16)")
    for i, k in enumerate(cfg.Ks):
        if k < 1:
            probs.append(f"Ks[{i}]: must be positive, got {k}")
    if probs:
        raise ExperimentError("invalid numerics experiment", source=src, problems=probs)
    return cfg


def is_numerics_file(path: str | Path) -> bool:
    """True when the YAML file declares ``kind: numerics`` (``gemmsim run`` hands such files to this lab)."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(data, dict) and data.get("kind") == "numerics"


# ---------------------------------------------------------------------------------------------------------------


def _data(kind: str, shape, rng) -> np.ndarray:
    if kind == "positive":
        return rng.random(shape)
    if kind == "signed":
        return rng.standard_normal(shape)
    raise ExperimentError(f"unknown data kind {kind!r}")


def _slope(xs, ys) -> float:
    x, y = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))
    ok = np.isfinite(y)
    return float(np.polyfit(x[ok], y[ok], 1)[0]) if ok.sum() >= 2 else math.nan


def _frob_rel(C, R) -> float:
    if not np.all(np.isfinite(C)):
        return math.inf
    return float(np.linalg.norm(C - R) / np.linalg.norm(R))


def study_error_vs_k(cfg: Config, rng) -> tuple[list[dict], dict]:
    rows = []
    n = cfg.MN
    for data in ("positive", "signed"):
        for K in cfg.Ks:
            A0, B0 = _data(data, (n, K), rng), _data(data, (K, n), rng)
            sel = sample_rows(n, n, K)
            for c in cfg.configs:
                inp, acc = c.split("/")
                A, B = quantize(A0, inp), quantize(B0, inp)
                R, G = reference(A, B, sel), abs_product(A, B, sel)
                C = gemm(A, B, acc=acc, order="sequential", use_fma=True, rows=sel)
                m = metrics(C, R, G, FORMATS[acc].u, K)
                rows.append({"data": data, "K": K, "input": inp, "acc": acc, "config": c, "rows_computed": len(sel), **m})
    summary = {}
    for data in ("positive", "signed"):
        for c in cfg.configs:
            rs = [r for r in rows if r["data"] == data and r["config"] == c]
            summary[(data, c)] = _slope([r["K"] for r in rs], [r["max_err_u"] for r in rs])
    return rows, {"slopes": summary, "worst_ratio": max(r["bound_ratio"] for r in rows if math.isfinite(r["bound_ratio"]))}


def study_fma(cfg: Config, rng) -> tuple[list[dict], dict]:
    rows = []
    n = cfg.MN
    for K in cfg.Ks:
        A0, B0 = _data("signed", (n, K), rng), _data("signed", (K, n), rng)
        sel = sample_rows(n, n, K)
        for inp, acc in (("fp32", "fp32"), ("fp16", "fp16"), ("bf16", "bf16"), ("fp16", "fp32")):
            A, B = quantize(A0, inp), quantize(B0, inp)
            R, G = reference(A, B, sel), abs_product(A, B, sel)
            Cf = gemm(A, B, acc=acc, use_fma=True, rows=sel)
            Cs = gemm(A, B, acc=acc, use_fma=False, rows=sel)
            u = FORMATS[acc].u
            mf, ms = metrics(Cf, R, G, u, K), metrics(Cs, R, G, u, K)
            rows.append({"K": K, "input": inp, "acc": acc, "differ": differing_fraction(Cf, Cs),
                         "fma_mean_err_u": mf["mean_err_u"], "muladd_mean_err_u": ms["mean_err_u"],
                         "fma_max_err_u": mf["max_err_u"], "muladd_max_err_u": ms["max_err_u"],
                         "fma_bound_ratio": mf["bound_ratio"], "muladd_bound_ratio": ms["bound_ratio"]})
    return rows, {}


def study_orders(cfg: Config, rng) -> tuple[list[dict], dict]:
    rows = []
    n, K = cfg.order_MN, cfg.order_K
    specs = [("sequential", None), ("blocked", cfg.blocked_BK), ("lanes", cfg.lanes), ("splitk", cfg.split_k), ("pairwise", 1), ("kahan", None)]
    for data in ("positive", "signed"):
        A0, B0 = _data(data, (n, K), rng), _data(data, (K, n), rng)
        for inp, acc in (("fp32", "fp32"), ("fp16", "fp16")):
            A, B = quantize(A0, inp), quantize(B0, inp)
            R, G = reference(A, B), abs_product(A, B)
            u = FORMATS[acc].u
            base = loop_order_gemm(A, B, "ijk", acc=acc, use_fma=True)
            for lo in LOOP_ORDERS:
                C = base if lo == "ijk" else loop_order_gemm(A, B, lo, acc=acc, use_fma=True)
                rows.append({"data": data, "acc": acc, "order": lo, "param": "", "depth": K, "differ_from_ijk": differing_fraction(C, base),
                             **metrics(C, R, G, u, K)})
            for order, p in specs:
                C = gemm(A, B, acc=acc, order=order, param=p, use_fma=True)
                d = rounding_depth(order, K, p)
                rows.append({"data": data, "acc": acc, "order": order, "param": p or "", "depth": d,
                             "differ_from_ijk": differing_fraction(C, base), **metrics(C, R, G, u, d)})
    return rows, {}


def study_mixed(cfg: Config, rng) -> tuple[list[dict], dict]:
    rows = []
    n = cfg.MN
    combos = [("fp16", "fp32"), ("fp16", "fp16"), ("bf16", "fp32"), ("bf16", "bf16"), ("fp8_e4m3", "fp32"), ("fp8_e5m2", "fp32")]
    for K in cfg.Ks:
        A0, B0 = rng.standard_normal((n, K)), rng.standard_normal((K, n))
        sel = sample_rows(n, n, K)
        R0 = reference(A0, B0, sel)  # the unrounded data's product
        for inp, acc in combos:
            A, B = quantize(A0, inp), quantize(B0, inp)
            C = gemm(A, B, acc=acc, out=acc, use_fma=True, rows=sel)
            Rq = reference(A, B, sel)
            rows.append({"K": K, "input": inp, "acc": acc, "total_rel": _frob_rel(C, R0), "input_rel": _frob_rel(Rq, R0),
                         "arith_rel": _frob_rel(C, Rq)})
    return rows, {}


def study_loss_scaling(cfg: Config, rng) -> tuple[list[dict], dict]:
    """dW = X^T G with small gradients G (magnitudes 2^N(-22, 3)); G * S stored in fp16, fp32 accumulation, / S."""
    K, m, n = cfg.loss_K, 32, 32
    X = quantize(rng.standard_normal((K, m)), "fp16")
    G0 = rng.choice([-1.0, 1.0], (K, n)) * np.exp2(rng.normal(-22.0, 3.0, (K, n)))
    R = reference(X.T, G0)
    rows = []
    f16 = FORMATS["fp16"]
    for e in cfg.loss_log2_scales:
        S = 2.0**e
        with np.errstate(over="ignore", invalid="ignore"):
            Gs = quantize(G0 * S, "fp16")
            C = gemm(X.T, Gs, acc="fp32", use_fma=True) / S
        mag = np.abs(Gs)
        rows.append({"format": "fp16", "log2_scale": e, "zero": float((mag == 0).mean()), "subnormal": float(((mag > 0) & (mag < f16.tiny)).mean()),
                     "overflow": float(np.isinf(mag).mean()), "rel_error": _frob_rel(C, R)})
    for fmt in ("bf16", "fp32"):
        Gs = quantize(G0, fmt)
        C = gemm(quantize(X.T, fmt), Gs, acc="fp32", use_fma=True)
        mag = np.abs(Gs)
        rows.append({"format": fmt, "log2_scale": 0, "zero": float((mag == 0).mean()), "subnormal": float(((mag > 0) & (mag < FORMATS[fmt].tiny)).mean()),
                     "overflow": float(np.isinf(mag).mean()), "rel_error": _frob_rel(C, R)})
    return rows, {}


QUANT_SCHEMES = [
    ("fp32", None), ("bf16", None), ("fp8_e4m3", None),
    ("int8", "tensor"), ("int8", "channel"), ("int8", "tensor+zp"), ("int4", "channel"), ("int4", "channel+zp"),
]


def study_quant(cfg: Config, rng) -> tuple[list[dict], dict]:
    """y = X W with X (m x K) activations and W (K x n) weights whose columns have different scales (channels)."""
    K, m, n = cfg.quant_K, 32, 64
    X = np.abs(rng.standard_normal((m, K)))  # post-ReLU-like activations: one-sided, where a zero point helps
    W = rng.standard_normal((K, n)) * np.exp2(rng.normal(-6.0, 1.0, (1, n)))
    R = reference(X, W)
    rows = []
    for dt, mode in QUANT_SCHEMES:
        if mode is None:
            C = gemm(quantize(X, dt), quantize(W, dt), acc="fp32", use_fma=True)
            label = dt if dt == "fp32" else f"{dt} (fp32 acc)"
        else:
            C = Q.qgemm(X, W, dt, symmetric="zp" not in mode, per_channel="channel" in mode)
            label = f"{dt} per {mode.replace('+zp', ', zero point')}"
        t = Q.traffic(4096, 4096, 1, "fp8" if dt.startswith("fp8") else dt)
        rows.append({"scheme": label, "dtype": dt, "mode": mode or "", "rel_error": _frob_rel(C, R), **{f"decode_{k}": v for k, v in t.items()}})
    return rows, {}


def study_strassen(cfg: Config, rng) -> tuple[list[dict], dict]:
    rows = []
    n0 = cfg.strassen_cutoff
    u = FORMATS["fp32"].u
    for data in ("positive", "signed"):
        for n in cfg.strassen_sizes:
            A, B = quantize(_data(data, (n, n), rng), "fp32"), quantize(_data(data, (n, n), rng), "fp32")
            R = reference(A, B)
            norm = np.abs(A).max() * np.abs(B).max()
            for alg in ("classical", "strassen", "winograd"):
                t0 = time.perf_counter()
                C = fast_gemm(A, B, algorithm=alg, cutoff=n0, acc="fp32")
                fc = flop_counts(n, n0, alg)
                rows.append({"data": data, "n": n, "cutoff": n0, "algorithm": alg, "levels": fc["levels"],
                             "err_u_norm": float(np.abs(C - R).max() / (u * norm)), "higham_bound": higham_bound(n, n0, alg),
                             "max_rel": float(np.max(np.abs(C - R) / np.abs(R))), "mul": fc["mul"], "add": fc["add"], "flops": fc["flops"],
                             "add_words": fc["add_words"], "wall_s": time.perf_counter() - t0})
    return rows, {}


def study_strassen_time(cfg: Config, rng) -> tuple[list[dict], dict]:
    """The trace generators (gemmsim.kernels.cpu_strassen) through each machine's caches and timing model, against
    the blocked and packed kernels, fp32."""
    from gemmsim.machine import load_machine
    from gemmsim.sim.cpu import simulate_cpu

    kernels = [("blocked", {"BM": 64, "BN": 64, "BK": 64}), ("packed_micro", {}),
               ("strassen", {"cutoff": cfg.time_cutoff}), ("winograd", {"cutoff": cfg.time_cutoff})]
    rows = []
    for mname in cfg.time_machines:
        m = load_machine(mname)
        for n in cfg.time_sizes:
            for k, p in kernels:
                r = simulate_cpu(m, k, n, n, n, "fp32", **p)
                last = m.caches[0].name
                rows.append({"machine": mname, "n": n, "kernel": k, "time_ms": r["time_s"] * 1e3, "bound": r.get("bound", ""),
                             "gflops_effective": r["gflops"], "dram_bytes": r["dram_bytes"], f"{last}_traffic_bytes": r[f"{last}_traffic_bytes"],
                             "levels": r.get("strassen_levels", 0), "add_bytes": r.get("strassen_add_bytes", 0),
                             "compute_flops": r.get("compute_flops", r["flops"])})
    return rows, {}


RUNNERS = {
    "error_vs_k": study_error_vs_k, "fma": study_fma, "orders": study_orders, "mixed": study_mixed,
    "loss_scaling": study_loss_scaling, "quant": study_quant, "strassen": study_strassen,
    "strassen_time": study_strassen_time,
}


def write_csv(path: Path, rows: list[dict]) -> None:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def run_lab(path: str | Path | None = None, out_dir: str | Path | None = None, quick: bool = False, studies: list[str] | None = None,
            quiet: bool = False) -> Path:
    """Run the studies, write <study>.csv, <study>.png and report.md into out_dir; returns out_dir."""
    from gemmsim.numerics import figures as F
    from gemmsim.numerics.verdicts import verdicts

    cfg = load_config(path, quick)
    chosen = studies or cfg.studies
    bad = [s for s in chosen if s not in STUDIES]
    if bad:
        raise ExperimentError(f"unknown study {bad[0]!r} (known: {', '.join(STUDIES)})")
    out = Path(out_dir) if out_dir else Path("results") / f"{cfg.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[dict]] = {}
    for s in chosen:
        t0 = time.perf_counter()
        rows, _ = RUNNERS[s](cfg, np.random.default_rng(cfg.seed + STUDIES.index(s)))  # a study's data do not depend on which others run
        results[s] = rows
        write_csv(out / f"{s}.csv", rows)
        fig = F.FIGURES[s](rows, cfg)
        fig.savefig(out / f"{s}.png", dpi=110)
        if not quiet:
            print(f"  {s}: {len(rows)} rows, {time.perf_counter() - t0:.1f} s -> {s}.csv, {s}.png", flush=True)
    lines = [f"# {cfg.name}: numerics lab", "", cfg.description.strip(), ""]
    for s, text in verdicts(results, cfg).items():
        lines += [f"## {s}", "", f"![{s}]({s}.png)", "", text, ""]
    (out / "report.md").write_text("\n".join(lines))
    return out
