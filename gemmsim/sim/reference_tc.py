"""Measured tensor-core GEMM throughputs shown BESIDE the model (never inputs to it).

``H200_MMA_PIPE``: validation/h200/round3/mma_pipeline.csv, the cp.async + mma.sync kernel of
validation/h200/round3/mma_pipe.cu at M = N = K = 8192 (fp16 in, fp32 accumulate): (BM, BN, WM, WN, stages) ->
(TFLOP/s, the launches' median SM clock in MHz). A row of the same kernel configuration on the H200 gets
``measured_tflops`` and, rescaled to the clock the model ran at, ``measured_tflops_at_model_clock`` (a short spaced
launch runs at 1600-1790 MHz, the model at the sustained 1430 MHz).
"""

from __future__ import annotations

H200_MMA_PIPE = {
    (128, 128, 64, 32, 1): (197.0, 1788), (128, 128, 64, 32, 2): (263.2, 1735),
    (128, 128, 64, 32, 3): (262.3, 1702), (128, 128, 64, 32, 4): (265.3, 1671),
    (64, 64, 32, 32, 1): (141.4, 1737), (64, 64, 32, 32, 2): (140.6, 1722),
    (64, 64, 32, 32, 3): (144.5, 1617), (64, 64, 32, 32, 4): (142.0, 1601),
    (128, 128, 64, 64, 1): (198.4, 1780), (128, 128, 64, 64, 2): (251.6, 1754),
    (128, 128, 64, 64, 3): (272.5, 1714), (128, 128, 64, 64, 4): (255.9, 1705),
}


def reference_columns(machine_name: str, kernel: str, params: dict, spec, M: int, N: int, K: int, dtype: str,
                      clock_mhz: float) -> dict:
    """Measured columns for a row that is a measured configuration, else {}."""
    if machine_name != "h200" or kernel != "tensorcore" or (M, N, K, dtype) != (8192, 8192, 8192, "fp16"):
        return {}
    if params.get("pad") != 8:  # mma_pipe.cu pads its rows by 8 halves
        return {}
    got = H200_MMA_PIPE.get((spec.BM, spec.BN, spec.WM, spec.WN, spec.stages))
    if got is None:
        return {}
    tflops, mhz = got
    return {"measured_tflops": tflops, "measured_sm_mhz": mhz, "measured_tflops_at_model_clock": tflops * clock_mhz / mhz}
