"""Helpers shared by the compiler tests (a uniquely named module, importable from them)."""

import importlib.util
import sys
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import pytest
from example_scripts import load_example
from simtgpu.assembler.examples import EXAMPLES as _ROOT

EXAMPLES = _ROOT / "dsl"

KERNEL_PRELUDE = ("import simtgpu.compiler_backend as triton\n"
                  "import simtgpu.compiler_backend.language as tl\n\n\n"
                  "@triton.jit\n")


def example(name: str) -> ModuleType:
    """examples/dsl/NAME.py as a module."""
    return load_example(EXAMPLES, name)


def generated_kernel(tmp_path: Path, stem: str, definition: str):
    """The kernel ``kern`` defined by ``definition`` (its ``def`` line onwards, after the
    imports and ``@triton.jit`` of KERNEL_PRELUDE), written to ``tmp_path/stem.py`` so the
    front end can read its source. Returns the kernel and the whole file's text."""
    src = KERNEL_PRELUDE + definition
    path = tmp_path / f"{stem}.py"
    path.write_text(src)
    key = f"_generated_{stem}"
    spec = importlib.util.spec_from_file_location(key, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module.kern, src


def compile_error(tmp_path: Path, stem: str, definition: str, types: dict,
                  names: dict | None = None):
    """The ``SourceError`` that compiling the generated kernel ``definition`` (see
    :func:`generated_kernel`; ``names`` added to its globals) for this ISA raises; the test
    fails when it compiles."""
    from simtgpu.compiler_backend.compiler import Target, compile_function
    from simtgpu.errors import SourceError

    kern, _ = generated_kernel(tmp_path, stem, definition)
    kern.fn.__globals__.update(names or {})
    with pytest.raises(SourceError) as e:
        compile_function(kern.fn, types, {}, Target("isa", 8), 4)
    return e.value


def regress_seeds(request) -> range:
    """The seeds of a long random run: ``pytest -m regress tests/compiler --regress-n N
    --regress-seed S``."""
    first = 1000 + request.config.getoption("--regress-seed")
    return range(first, first + request.config.getoption("--regress-n"))


@contextmanager
def current_device(backend: str, config: str = "small"):
    """A fresh device as the compiler's current device for the ``with`` block; the test is
    skipped where the backend is unavailable (no Verilator model, no NVIDIA GPU)."""
    import simtgpu.compiler_backend as triton
    from simtgpu.driver_model import Device, DriverError

    try:
        dev = Device(backend=backend, config=config)
    except DriverError as e:
        pytest.skip(f"{backend} backend unavailable ({e})")
    triton.set_device(dev)
    try:
        yield dev
    finally:
        triton.set_device(None)
        dev.close()
