"""int8/int4 quantization: exact on the grid, zero-point algebra against dequantize-then-multiply."""

import numpy as np
import pytest

from gemmsim.errors import ExperimentError
from gemmsim.numerics.quant import dequantize, qgemm, quantize, traffic


@pytest.mark.parametrize("dtype", ["int8", "int4"])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("per_channel", [True, False])
def test_qgemm_equals_dequantized_product(dtype, symmetric, per_channel):
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((8, 64)) + 0.5, rng.random((64, 5))
    qa, sa, za = quantize(A, dtype, symmetric=symmetric, axis=1 if per_channel else None)
    qb, sb, zb = quantize(B, dtype, symmetric=symmetric, axis=0 if per_channel else None)
    want = dequantize(qa, sa, za) @ dequantize(qb, sb, zb)
    np.testing.assert_allclose(qgemm(A, B, dtype, symmetric=symmetric, per_channel=per_channel), want, rtol=1e-12, atol=1e-12)
    # every input within half a step of its code
    assert np.all(np.abs(dequantize(qa, sa, za) - A) <= np.asarray(sa) / 2 + 1e-12)


def test_on_grid_inputs_are_exact():
    A = np.array([[-127.0, 0.0, 3.0], [1.0, 2.0, 127.0]]) * 0.5
    B = np.array([[2.0], [-127.0], [5.0]])
    np.testing.assert_array_equal(qgemm(A, B, "int8"), A @ B)


def test_traffic_counts():
    t = traffic(4096, 4096, 1, "int8", group=128)
    assert t["weight_bytes"] == 4096 * 4096 * (1 + 4 / 128)
    assert t["dequant_ops"] == 3 * 4096 * 4096
    assert traffic(4096, 4096, 1, "bf16")["weight_bytes"] == 2 * 4096 * 4096
    with pytest.raises(ExperimentError):
        traffic(4, 4, 1, "int3")
