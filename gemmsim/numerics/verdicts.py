"""Verdicts of the numerics lab: each seed 000 claim decided by the numbers the studies produced (nothing fixed)."""

from __future__ import annotations

import math

import numpy as np


def _slope(xs, ys) -> float:
    x, y = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))
    ok = np.isfinite(y) & (np.asarray(ys, float) > 0)
    return float(np.polyfit(x[ok], y[ok], 1)[0]) if ok.sum() >= 2 else math.nan


def _series(rows, key, **match):
    rs = sorted((r for r in rows if all(r[k] == v for k, v in match.items())), key=lambda r: r["K"])
    return [r["K"] for r in rs], [r[key] for r in rs]


def v_error_vs_k(rows, cfg) -> str:
    worst = max((r["bound_ratio"] for r in rows if math.isfinite(r["bound_ratio"])), default=math.nan)
    vac = sorted({(r["config"], r["K"]) for r in rows if not math.isfinite(r["bound_ratio"])})
    parts = []
    for data in ("positive", "signed"):
        sl = {c: _slope(*_series(rows, "max_err_u", data=data, config=c)) for c in cfg.configs}
        parts.append(f"{data} inputs: " + ", ".join(f"{c} K^{s:.2f}" for c, s in sl.items()))
    kmax = max(r["K"] for r in rows)
    last = {r["config"]: r for r in rows if r["K"] == kmax and r["data"] == "positive"}
    closest = max((r for r in rows if math.isfinite(r["bound_ratio"])), key=lambda r: r["bound_ratio"])
    pos = {c: _slope(*_series(rows, "max_err_u", data="positive", config=c)) for c in cfg.configs}
    steep = max(pos.items(), key=lambda kv: kv[1] if math.isfinite(kv[1]) else -1)
    return (
        f"**Seed 000 section 12.2 (error ~ gamma_K = K u / (1 - K u)): {'holds as a bound, pessimistic as an estimate' if worst <= 1 else 'DIFFERS: an error exceeds the bound'}.** Every "
        f"measured error lies within Higham's bound gamma_K |A||B| (largest ratio error / bound {worst:.2f}, {closest['config']} "
        f"{closest['data']} at K={closest['K']}; the bound is void where K u >= 1: "
        f"{', '.join(f'{c} at K={k}' for c, k in vac[:4]) or 'nowhere here'}). In units of u |A||B| the bound grows as K^1; "
        "the measured largest error grows as " + "; ".join(parts) + ". "
        "The individual rounding errors have both signs and partly cancel, so the typical error grows more slowly than the "
        f"bound; the steepest growth, K^{steep[1]:.2f}, is {steep[0]} on all-positive data, where the running sum outgrows each new "
        "term and rounds most of its bits away (4096 ones summed in fp16 give 2048). "
        "The accumulator's u sets the level: at K=" + str(kmax) + " (all-positive data) the largest "
        "relative errors are " + ", ".join(f"{c}: {r['max_rel']:.1e}" for c, r in last.items()) + ". "
        "So a fixed tolerance (section 15.3) cannot serve every dtype and K; a tolerance proportional to gamma_K |A||B| can."
    )


def v_fma(rows, cfg) -> str:
    same = [r for r in rows if r["input"] == "fp16" and r["acc"] == "fp32"]
    eq = all(r["differ"] == 0 for r in same)
    f32 = [r for r in rows if r["input"] == "fp32" and r["acc"] == "fp32"]
    ratio = np.median([r["muladd_mean_err_u"] / r["fma_mean_err_u"] for r in f32 if r["fma_mean_err_u"] > 0])
    ok = all(r["fma_bound_ratio"] <= 1 and r["muladd_bound_ratio"] <= 1 for r in rows if math.isfinite(r["fma_bound_ratio"]) and math.isfinite(r["muladd_bound_ratio"]))
    diff = max(r["differ"] for r in f32)
    return (
        f"**Seed 000 sections 1.1 and 6.2 (FMA changes the last bits, not correctness): {'holds' if ok and diff > 0 else 'differs'}.** In fp32, FMA and "
        f"multiply-then-add give different bits in up to {100 * diff:.0f} % of the elements of C, with mean errors within "
        f"a factor {ratio:.2f} of each other (mul + add / FMA), both inside gamma_K ({'all' if ok else 'NOT all'} cases). "
        + ("With fp16 inputs and an fp32 accumulator the two give identical bits: the product of two 11-bit significands "
           "is exact in fp32, so there is nothing for the FMA to save." if eq else "fp16 inputs into fp32 differ, which would contradict exact products: check.")
    )


def v_orders(rows, cfg) -> str:
    out = []
    for acc in ("fp32", "fp16"):
        rs = [r for r in rows if r["acc"] == acc and r["data"] == "positive"]
        loops = [r for r in rs if r["order"] in ("ijk", "ikj", "jik", "jki", "kij", "kji")]
        same = all(r["differ_from_ijk"] == 0 for r in loops)
        other = {r["order"]: r for r in rs if r["order"] not in ("ijk", "ikj", "jik", "jki", "kij", "kji")}
        seq = other["sequential"]["mean_err_u"]
        out.append(
            f"{acc}: the six loop orders give {'identical bits' if same else 'DIFFERENT bits'}; "
            + ", ".join(f"{o} {100 * r['differ_from_ijk']:.0f} % of elements differ (mean error {r['mean_err_u'] / seq:.2g}x sequential)"
                        for o, r in other.items() if o != "sequential")
        )
    inb = all(r["bound_ratio"] <= 1 for r in rows if math.isfinite(r["bound_ratio"]))
    all_same = all(r["differ_from_ijk"] == 0 for r in rows if r["order"] in ("ijk", "ikj", "jik", "jki", "kij", "kji"))
    return (
        f"**Seed 000 sections 2.1 and 6.2 (same result; reordering changes the last bits): {'holds, with a precision' if inb and all_same else 'differs'}.** "
        "The loop order decides which element of C is visited next, never the order of one element's k terms, so all six "
        "orders sum each dot product in ascending k and agree bit for bit. Orders that do regroup the k terms (blocking's "
        "register accumulator, SIMD lanes, split-K, pairwise, Kahan) change the bits and, with them, the error: " + "; ".join(out) + f". Every order stays within its gamma_depth bound: {'yes' if inb else 'NO'}."
    )


def v_mixed(rows, cfg) -> str:
    kmax = max(r["K"] for r in rows)
    at = {(r["input"], r["acc"]): r for r in rows if r["K"] == kmax}
    f = at[("fp16", "fp32")]
    h = at[("fp16", "fp16")]
    b = at[("bf16", "fp32")]
    bb = at[("bf16", "bf16")]
    ok = f["total_rel"] < 1.5 * f["input_rel"] and b["total_rel"] < 1.5 * b["input_rel"] and h["total_rel"] > f["total_rel"] and bb["total_rel"] > b["total_rel"]
    return (
        f"**Seed 000 section 12.1 (fp32 accumulation protects the reduction but cannot recover bits lost in the operands): {'holds' if ok else 'differs'}.** "
        f"At K={kmax}, fp16 storage with fp32 accumulation errs by {f['total_rel']:.1e} (relative, Frobenius), of which the "
        f"rounding of the inputs alone is {f['input_rel']:.1e}; accumulating in fp16 instead gives {h['total_rel']:.1e}. "
        f"bf16: {b['total_rel']:.1e} with fp32 accumulation (inputs alone {b['input_rel']:.1e}) against {bb['total_rel']:.1e} accumulating in bf16. "
        f"fp8: e4m3 {at[('fp8_e4m3', 'fp32')]['total_rel']:.1e}, e5m2 {at[('fp8_e5m2', 'fp32')]['total_rel']:.1e} with fp32 accumulation. "
        "Saying only 'the GEMM uses fp16' does not determine the error: the accumulator changes it by "
        f"{h['total_rel'] / f['total_rel']:.0f}x here."
    )


def v_loss(rows, cfg) -> str:
    f16 = sorted((r for r in rows if r["format"] == "fp16"), key=lambda r: r["log2_scale"])
    s0 = f16[0]
    fin = [r for r in f16 if math.isfinite(r["rel_error"])]
    best = min(fin, key=lambda r: r["rel_error"])
    over = [r["log2_scale"] for r in f16 if not math.isfinite(r["rel_error"])]
    other = {r["format"]: r for r in rows if r["format"] != "fp16"}
    ok = s0["zero"] > 0 and best["rel_error"] < s0["rel_error"] and other["bf16"]["zero"] == 0
    return (
        f"**Seed 000 section 12.3 (fp16 gradients underflow; loss scaling rescues them; bf16 needs it less): {'holds' if ok else 'differs'}.** Unscaled, "
        f"{100 * s0['zero']:.0f} % of the gradients flush to zero in fp16 and {100 * s0['subnormal']:.0f} % are subnormal; dW errs by "
        f"{s0['rel_error']:.1e}. With S = 2^{best['log2_scale']} the error falls to {best['rel_error']:.1e} "
        f"({100 * best['zero']:.1f} % zero). "
        + (f"From S = 2^{over[0]} some scaled gradients overflow to Inf and dW is lost, which is why dynamic scaling lowers S on Inf/NaN. " if over else "No scale tried overflowed. ")
        + f"bf16 without any scaling: {other['bf16']['rel_error']:.1e} ({100 * other['bf16']['zero']:.1f} % zero): its fp32-sized exponent removes the underflow, "
        f"but its 8-bit significand leaves a larger error than well-scaled fp16."
    )


def v_quant(rows, cfg) -> str:
    by = {r["scheme"]: r for r in rows}
    get = lambda k: next(r for s, r in by.items() if s.startswith(k))  # noqa: E731
    t8 = get("int8 per tensor")
    c8 = get("int8 per channel")
    c4 = get("int4 per channel")
    f32 = by["fp32"]
    bf = get("bf16")
    ok = c8["rel_error"] < c4["rel_error"] and c4["decode_weight_bytes"] < c8["decode_weight_bytes"] < bf["decode_weight_bytes"]
    return (
        f"**Seed 000 section 12.4 (quantization is a scale and a zero point, not mixed precision; traffic falls, dequantization moves the cost): {'holds' if ok else 'differs'}.** "
        f"Relative errors: fp32 {f32['rel_error']:.1e}, bf16 {bf['rel_error']:.1e}, int8 per tensor {t8['rel_error']:.1e}, "
        f"int8 per channel {c8['rel_error']:.1e}, int4 per channel {c4['rel_error']:.1e}; "
        + "; ".join(f"{s} {r['rel_error']:.1e}" for s, r in by.items() if "zero point" in s)
        + ". With one scale per weight column the error no longer pays for the largest column. For a 4096x4096 decode step the weights "
        f"shrink from {bf['decode_weight_bytes'] / 2**20:.0f} MiB (bf16) to {c8['decode_weight_bytes'] / 2**20:.1f} MiB (int8) and "
        f"{c4['decode_weight_bytes'] / 2**20:.1f} MiB (int4, scales and zero points included), raising FLOP per byte from "
        f"{bf['decode_intensity']:.2f} to {c4['decode_intensity']:.2f}, while every weight now needs "
        f"{c8['decode_dequant_ops'] / c8['decode_flops']:.1f} dequantization operations per FLOP of the GEMV."
    )


def v_strassen(rows, cfg) -> str:
    from gemmsim.numerics.strassen import flop_counts

    n0 = cfg.strassen_cutoff
    five = flop_counts(n0 * 32, n0, "strassen")
    five_w = flop_counts(n0 * 32, n0, "winograd")
    cl = flop_counts(n0 * 32, n0, "classical")
    parts = []
    for data in ("positive", "signed"):
        sl = {}
        for alg in ("classical", "strassen", "winograd"):
            rs = sorted((r for r in rows if r["data"] == data and r["algorithm"] == alg), key=lambda r: r["n"])
            sl[alg] = (_slope([r["n"] for r in rs], [r["err_u_norm"] for r in rs]), rs[-1])
        nmax = sl["classical"][1]["n"]
        parts.append(
            f"{data} data: error grows as n^{sl['classical'][0]:.2f} classical, n^{sl['strassen'][0]:.2f} Strassen, n^{sl['winograd'][0]:.2f} Winograd; "
            f"at n={nmax} Strassen's error is {sl['strassen'][1]['err_u_norm'] / sl['classical'][1]['err_u_norm']:.1f}x classical"
        )
    within = all(r["err_u_norm"] <= r["higham_bound"] for r in rows)
    above, widen, fast_slopes, below_notes = True, True, [], []
    for data in ("positive", "signed"):
        err = {alg: [r["err_u_norm"] for r in sorted((r for r in rows if r["data"] == data and r["algorithm"] == alg), key=lambda r: r["n"])]
               for alg in ("classical", "strassen", "winograd")}
        ns = sorted({r["n"] for r in rows})
        for alg in ("strassen", "winograd"):
            ratios = [f / c for f, c in zip(err[alg], err["classical"])]
            above &= all(x > 1 for x in ratios)
            lower = [n for n, x in zip(ns, ratios) if x <= 1]
            if lower:
                below_notes.append(f"{alg.capitalize()} on {data} data is at or below classical at n = {', '.join(map(str, lower))} "
                                   f"and {ratios[-1]:.1f}x classical at n = {ns[-1]}.")
            widen &= ratios[-1] > ratios[0]
            fast_slopes.append(_slope(ns, err[alg]))
    return (
        f"**Seed 000 section 17 (7 products, 18 additions per level, 15 with Winograd; (7/8)^5 ~ 0.51; error grows faster): {'holds' if above and within else 'holds for the counts and, at the largest n, for the error' if within and widen else 'partly'}.** "
        f"After 5 levels (n = {n0 * 32}, cutoff {n0}) the multiplications are {five['mul'] / cl['mul']:.3f} of classical ((7/8)^5 = {(7 / 8) ** 5:.3f}), "
        f"all FLOPs {five['flops'] / cl['flops']:.3f} (Strassen) and {five_w['flops'] / cl['flops']:.3f} (Winograd): the block additions eat part of the saving; "
        f"they read and write {five['add_words'] * 4 / 2**20:.0f} MiB in fp32 at 1 FLOP per 12 bytes. "
        + "; ".join(parts)
        + f". All measured errors lie within Higham's normwise bounds: {'yes' if within else 'NO'}. "
        + (" ".join(below_notes) + " " if below_notes else "Strassen's and Winograd's errors exceed classical at every size measured. ")
        + ("The gap widens with n (largest n against smallest). " if widen else "The gap does not widen with n everywhere. ")
        + f"The measured growth exponents ({', '.join(f'{x:.2f}' for x in fast_slopes)}) stay below the bounds' 3.58 (Strassen) and 4.17 "
        "(Winograd): the bounds are worst cases."
    )


def v_strassen_time(rows, cfg) -> str:
    parts = []
    for mname in dict.fromkeys(r["machine"] for r in rows):
        for n in sorted({r["n"] for r in rows if r["machine"] == mname}):
            by = {r["kernel"]: r for r in rows if r["machine"] == mname and r["n"] == n}
            pk = by["packed_micro"]
            parts.append(
                f"{mname} n={n}: packed_micro {pk['time_ms']:.2f} ms ({pk['bound']}), "
                + ", ".join(f"{k} {by[k]['time_ms']:.2f} ms ({by[k]['bound']}, {by[k]['levels']} level{'s' if by[k]['levels'] != 1 else ''}, DRAM {by[k]['dram_bytes'] / pk['dram_bytes']:.1f}x)"
                            for k in ("strassen", "winograd") if k in by)
                + (f", blocked {by['blocked']['time_ms']:.1f} ms" if "blocked" in by else "")
            )
    wins = [(r["machine"], r["n"], r["kernel"]) for r in rows if r["kernel"] in ("strassen", "winograd")
            and r["time_ms"] < next(q["time_ms"] for q in rows if q["machine"] == r["machine"] and q["n"] == r["n"] and q["kernel"] == "packed_micro")]
    total = sum(1 for r in rows if r["kernel"] in ("strassen", "winograd"))
    head = "holds" if not wins else ("differs: the fast algorithms win everywhere here" if len(wins) == total else "depends on the machine and the size")
    return (
        f"**Seed 000 section 17.3 (the additions are low-intensity work that takes the saving back): {head}.** Simulated through each "
        "machine's caches and timing model (the binding limit in brackets; DRAM bytes relative to packed_micro): " + "; ".join(parts) + ". "
        + (f"The fast algorithms are faster than the packed kernel in {len(wins)} of {total} cases ({', '.join(f'{k} on {m} at n={n}' for m, n, k in wins)}). "
           if wins else f"They are never faster than the packed kernel here ({total} cases). ")
        + "The Winograd schedule traced here keeps all seven products in their own buffers (a memory-frugal schedule needs two), so its "
        "extra bytes are an upper bound."
    )


RULES = {"error_vs_k": v_error_vs_k, "fma": v_fma, "orders": v_orders, "mixed": v_mixed, "loss_scaling": v_loss, "quant": v_quant, "strassen": v_strassen, "strassen_time": v_strassen_time}


def verdicts(results: dict[str, list[dict]], cfg) -> dict[str, str]:
    """One paragraph per study that ran, computed from its rows."""
    return {s: RULES[s](rows, cfg) for s, rows in results.items()}
