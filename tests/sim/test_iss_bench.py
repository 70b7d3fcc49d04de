"""The benchmark kernels run correctly (their results are checked against NumPy)."""

import pytest
from simtgpu.errors import SimtgpuError
from simtgpu.sim.bench import KERNELS, bench_iss


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_bench_kernel_is_correct(name):
    r = bench_iss(name, warp_size=8)
    assert r["correct"]
    assert r["thread_instructions"] > r["warp_instructions"] > 0


def test_unknown_kernel():
    with pytest.raises(SimtgpuError, match="unknown benchmark kernel"):
        bench_iss("nope")
