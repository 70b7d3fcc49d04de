"""examples/asm/hgemm_mma.s (fp16 GEMM on mma) on the ISS, bit for bit against NumPy doing
the kernel's documented order through ``numerics.mma`` (itself checked against exact
products in tests/numerics), and close to float64. The RTL run is in
tests/rtl/system/test_rtl_backend.py."""

from __future__ import annotations

import numpy as np
import pytest
from simtgpu.driver_model import Device
from simtgpu.rtlsim.workload import hgemm_mma, hgemm_mma_reference


def check_hgemm(dev, m: int, n: int, k: int, seed: int) -> None:
    """One launch of hgemm_mma on ``dev`` against the reference and float64."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-2, 2, (m, k)).astype(np.float16)
    b = rng.uniform(-2, 2, (k, n)).astype(np.float16)
    got, res = hgemm_mma(dev, a, b)
    assert got.view(np.uint32).tolist() == hgemm_mma_reference(a, b, dev.config.lanes).tolist()
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)) * (k * 2.0 ** -23)
    assert (np.abs(got - exact) <= bound).all()
    assert res.divergence_events == 0


@pytest.mark.parametrize("config,m,n,k", [("tiny", 8, 16, 16), ("small", 16, 64, 24)])
def test_hgemm_mma_iss(config, m, n, k):
    check_hgemm(Device(backend="iss", config=config), m, n, k, seed=1)


def test_hgemm_mma_rejects_shapes():
    dev = Device(backend="iss", config="small")
    with pytest.raises(ValueError, match="k of 8"):
        hgemm_mma(dev, np.zeros((8, 12), np.float16), np.zeros((12, 32), np.float16))
