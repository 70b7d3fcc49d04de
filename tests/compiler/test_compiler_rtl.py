"""The same compiled kernels on the RTL (Verilator through the driver's rtl backend)."""

import pytest
from compiler_helpers import example
from simtgpu.driver_model import DriverError


@pytest.fixture(scope="module")
def rtl_device():
    import simtgpu.compiler_backend as triton
    from simtgpu.driver_model import Device

    try:
        dev = Device(backend="rtl", config="small")
    except DriverError as e:
        pytest.skip(f"rtl backend unavailable ({e})")
    triton.set_device(dev)
    yield dev
    triton.set_device(None)
    dev.close()


@pytest.mark.slow
@pytest.mark.parametrize("name, size", [("vector_add", 45), ("softmax", 41), ("matmul", 8),
                                        ("histogram", 70)])
def test_example_on_rtl(rtl_device, name, size):
    import simtgpu.compiler_backend as triton

    triton.set_device(rtl_device)
    ok, detail, stats = example(name).run(size, seed=2)
    assert ok, detail
    assert stats.instructions > 0
