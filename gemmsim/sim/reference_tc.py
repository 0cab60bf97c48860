"""Measured tensor-core GEMM throughputs shown BESIDE the model (never inputs to it).

``H200_MMA_PIPE``: validation/h200/round3/mma_pipeline.csv, the cp.async + mma.sync kernel of
validation/h200/round3/mma_pipe.cu at M = N = K = 8192 (fp16 in, fp32 accumulate): (BM, BN, WM, WN, stages) ->
(TFLOP/s, the launches' median SM clock in MHz). A row of the same kernel configuration on the H200 gets
``measured_tflops`` and, rescaled to the clock the model ran at, ``measured_tflops_at_model_clock`` (a short spaced
launch runs at 1600-1790 MHz, the model at the sustained 1430 MHz).

``H200_WMMA_PIPE``: validation/h200/round28/wmma_pipeline28.csv (rows api = wmma, copy = 1, M = N = K = 8192), the
same kernel with its fragments and MMAs written with nvcuda::wmma (validation/h200/round28/wmma28.patch, same tiles,
copies and stages), keyed and valued as ``H200_MMA_PIPE``. A row's ``api`` parameter (TensorCoreParams.api, default
mma.sync) picks the table.
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

H200_WMMA_PIPE = {
    (128, 128, 64, 32, 1): (198.9, 1768), (128, 128, 64, 32, 2): (260.7, 1737),
    (128, 128, 64, 32, 3): (270.4, 1697), (128, 128, 64, 32, 4): (268.0, 1678),
    (64, 64, 32, 32, 1): (136.9, 1744), (64, 64, 32, 32, 2): (142.1, 1696),
    (64, 64, 32, 32, 3): (145.5, 1690), (64, 64, 32, 32, 4): (142.0, 1644),
    (128, 128, 64, 64, 1): (202.1, 1773), (128, 128, 64, 64, 2): (254.6, 1747),
    (128, 128, 64, 64, 3): (275.4, 1677), (128, 128, 64, 64, 4): (278.3, 1673),
}

#: the measured table per warp-level API (TensorCoreParams.api)
H200_PIPE_BY_API = {"mma.sync": H200_MMA_PIPE, "wmma": H200_WMMA_PIPE}


def reference_columns(machine_name: str, kernel: str, params: dict, spec, M: int, N: int, K: int, dtype: str,
                      clock_mhz: float) -> dict:
    """Measured columns for a row that is a measured configuration, else {}."""
    if machine_name != "h200" or kernel != "tensorcore" or (M, N, K, dtype) != (8192, 8192, 8192, "fp16"):
        return {}
    if params.get("pad") != 8:  # mma_pipe.cu pads its rows by 8 halves
        return {}
    # the spec carries the validated api; a raw params dict without one is the default mma.sync kernel
    api = (getattr(spec, "extra", None) or {}).get("api") or params.get("api", "mma.sync")
    table = H200_PIPE_BY_API.get(api)
    if table is None:
        return {}
    got = table.get((spec.BM, spec.BN, spec.WM, spec.WN, spec.stages))
    if got is None:
        return {}
    tflops, mhz = got
    return {"measured_tflops": tflops, "measured_sm_mhz": mhz, "measured_tflops_at_model_clock": tflops * clock_mhz / mhz}
