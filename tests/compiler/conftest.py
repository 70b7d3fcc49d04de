"""Fixtures for the compiler tests: a fresh ISS device as the current device."""

import pytest


@pytest.fixture()
def iss_device():
    import simtgpu.compiler_backend as triton
    from simtgpu.driver_model import Device

    dev = Device(backend="iss", config="small")
    triton.set_device(dev)
    yield dev
    triton.set_device(None)
    dev.close()
