"""The notebook API: every public name resolves, and the documented calls work on shipped machines."""

import pytest

import gemmsim


@pytest.mark.parametrize("name", [n for n in gemmsim.__all__ if n != "__version__"])
def test_every_public_name_resolves(name):
    assert getattr(gemmsim, name) is not None


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError):
        gemmsim.no_such_thing  # noqa: B018


def test_documented_calls():
    a100 = gemmsim.load_machine("a100")
    occ = gemmsim.occupancy(a100, threads=256, regs=72, smem=73728)
    assert (occ.blocks_per_sm, occ.limiter) == (2, "shared_memory")  # 167,936 B of shared memory / 74,752 B per block = 2
    row = gemmsim.simulate_cpu(gemmsim.load_machine("toy"), "ikj", 8, 8, 8)
    assert row["L1_hit_rate"] == pytest.approx(0.9)
    res = gemmsim.simulate_systolic(gemmsim.load_machine("tpu_v1"), M=256, N=256, K=256, dataflow="ws")
    assert res.utilization <= 1 and res.folds >= 1
