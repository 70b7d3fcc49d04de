"""The same compiled kernels on the RTL (Verilator through the driver's rtl backend).

One test, so that a parallel run builds the Verilator model in one worker only."""

import pytest
from compiler_helpers import example
from simtgpu.driver_model import DriverError


@pytest.mark.slow
def test_examples_on_rtl():
    import simtgpu.compiler_backend as triton
    from simtgpu.driver_model import Device

    try:
        dev = Device(backend="rtl", config="small")
    except DriverError as e:
        pytest.skip(f"rtl backend unavailable ({e})")
    triton.set_device(dev)
    try:
        for name, size in (("vector_add", 45), ("softmax", 41), ("matmul", 8),
                           ("histogram", 70)):
            ok, detail, stats = example(name).run(size, seed=2)
            assert ok, f"{name}: {detail}"
            assert stats.instructions > 0
    finally:
        triton.set_device(None)
        dev.close()
