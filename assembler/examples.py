"""The example kernels of examples/asm, by name: the one place that knows where they are.

Benchmarks, the profile-guided build's training run, the demo and the tests load their
kernels from there rather than keeping copies. examples/ sits at the root of the source tree;
an installed package carries examples/asm as package data (``simtgpu/examples/asm``, see
pyproject.toml), at the same place relative to this file, so one path serves both.
"""

from __future__ import annotations

from pathlib import Path

from simtgpu.errors import SimtgpuError

__all__ = ["EXAMPLES", "EXAMPLES_ASM", "example_asm"]

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EXAMPLES_ASM = EXAMPLES / "asm"


def example_asm(name: str) -> Path:
    """Path of ``examples/asm/<name>.s``."""
    path = EXAMPLES_ASM / f"{name}.s"
    if not path.is_file():
        raise SimtgpuError(f"no example kernel {path}")
    return path
