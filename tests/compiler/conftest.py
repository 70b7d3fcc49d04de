"""Fixtures for the compiler tests: the example kernels and a fresh ISS device."""

import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "dsl"


def example(name: str):
    """Import examples/dsl/NAME.py (the examples import their 'common' helper)."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    import importlib

    return importlib.import_module(name)


@pytest.fixture()
def iss_device():
    import simtgpu.compiler_backend as triton
    from simtgpu.driver_model import Device

    dev = Device(backend="iss", config="small")
    triton.set_device(dev)
    yield dev
    triton.set_device(None)
    dev.close()
