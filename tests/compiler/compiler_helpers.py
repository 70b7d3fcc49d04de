"""Helpers shared by the compiler tests (a uniquely named module, importable from them)."""

from types import ModuleType

from example_scripts import load_example
from simtgpu.assembler.examples import EXAMPLES as _ROOT

EXAMPLES = _ROOT / "dsl"


def example(name: str) -> ModuleType:
    """examples/dsl/NAME.py as a module."""
    return load_example(EXAMPLES, name)
