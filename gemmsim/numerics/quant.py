"""Integer quantization (seed 000 section 12.4): x ~ s (q - z) with scale s and zero point z, int8 or int4.

A quantized GEMM multiplies the integer codes with exact int32 accumulation and corrects for the zero points
afterwards (Jacob et al., "Quantization and training of neural networks for efficient integer-arithmetic-only
inference", CVPR 2018, eq. 7):

    sum_k s_a (qa_ik - za) s_b (qb_kj - zb) = s_a s_b [ sum qa qb - zb sum_k qa_ik - za sum_k qb_kj + K za zb ]

Scales are per tensor or per row of A / per column of B ("per channel"). Integer arithmetic here is exact
(int64 numpy), so the whole error is the rounding of the inputs to the integer grid.

Dequantization cost: a weight-only quantized layer (int8 or int4 weights, fp16/bf16 activations) must turn
every weight back into a float before the multiply: a convert, a subtract of the zero point and a multiply by
the scale per weight, ``dequant_ops`` below; the bytes it saves are counted by ``traffic``.
"""

from __future__ import annotations

import numpy as np

from gemmsim.errors import ExperimentError

BITS = {"int8": 8, "int4": 4}


def _range(bits: int, symmetric: bool) -> tuple[int, int]:
    if symmetric:  # a symmetric grid drops the most negative code so that 0 maps to 0 and +-max are both there
        return -(2 ** (bits - 1) - 1), 2 ** (bits - 1) - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def quantize(x: np.ndarray, dtype: str = "int8", *, symmetric: bool = True, axis: int | None = None):
    """Codes q (int64), scale s and zero point z (broadcastable to x) with x ~ s (q - z).

    ``axis`` None: one scale for the tensor; axis=1: one per row; axis=0: one per column."""
    if dtype not in BITS:
        raise ExperimentError(f"unknown integer dtype {dtype!r} (known: {', '.join(BITS)})")
    qmin, qmax = _range(BITS[dtype], symmetric)
    x = np.asarray(x, np.float64)
    kw = {} if axis is None else {"axis": axis, "keepdims": True}
    if symmetric:
        amax = np.max(np.abs(x), **kw)
        s = np.where(amax > 0, amax / qmax, 1.0)
        z = np.zeros_like(s)
    else:
        lo = np.minimum(np.min(x, **kw), 0.0)
        hi = np.maximum(np.max(x, **kw), 0.0)
        s = np.where(hi > lo, (hi - lo) / (qmax - qmin), 1.0)
        z = np.clip(np.rint(qmin - lo / s), qmin, qmax)
    q = np.clip(np.rint(x / s + z), qmin, qmax).astype(np.int64)
    return q, s, z


def dequantize(q: np.ndarray, s, z) -> np.ndarray:
    return s * (q - z)


def qgemm(A: np.ndarray, B: np.ndarray, dtype: str = "int8", *, symmetric: bool = True, per_channel: bool = False) -> np.ndarray:
    """A @ B with both operands quantized (A per row, B per column when per_channel), exact integer accumulation,
    the zero-point correction of the module docstring, and a float64 rescale."""
    qa, sa, za = quantize(A, dtype, symmetric=symmetric, axis=1 if per_channel else None)
    qb, sb, zb = quantize(B, dtype, symmetric=symmetric, axis=0 if per_channel else None)
    K = A.shape[1]
    acc = qa @ qb  # exact: |acc| <= K 2^(2 bits) fits int64 easily
    za_i = np.asarray(za).astype(np.int64)
    zb_i = np.asarray(zb).astype(np.int64)
    acc = acc - qa.sum(axis=1, keepdims=True) * zb_i - za_i * qb.sum(axis=0, keepdims=True) + K * za_i * zb_i
    # int32 overflow check: the seed's int8 GEMMs accumulate in int32
    if np.abs(qa @ qb).max(initial=0) >= 2**31:
        raise ExperimentError(f"int32 accumulator overflows at K={K}")
    return np.asarray(sa) * np.asarray(sb) * acc


def traffic(n_out: int, k: int, batch: int, weight_dtype: str, act_bytes: int = 2, group: int = 128) -> dict:
    """Bytes and operations of a weight-stationary layer y = x W (W: k x n_out) for ``batch`` tokens, each byte
    read once: weights (with one fp16 scale and, for int, one zero point per ``group`` weights), activations in and out.

    ``flops`` counts the 2 k n_out batch multiply-adds; ``dequant_ops`` one convert + subtract + multiply per weight
    (done once per weight per layer call, shared by the batch)."""
    bits = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}.get(weight_dtype)
    if bits is None:
        raise ExperimentError(f"unknown weight dtype {weight_dtype!r}")
    w = k * n_out
    wbytes = w * bits / 8
    meta = 0.0
    dq = 0
    if weight_dtype in ("int8", "int4"):
        meta = (w / group) * 2 * 2  # fp16 scale + fp16 zero point per group
        dq = 3 * w
    act = batch * (k + n_out) * act_bytes
    total = wbytes + meta + act
    flops = 2 * w * batch
    return {"weight_bytes": wbytes + meta, "bytes": total, "flops": flops, "dequant_ops": dq,
            "intensity": flops / total, "ops_per_byte": (flops + dq) / total}
