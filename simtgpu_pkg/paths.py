"""Where simtgpu writes what it builds: Verilog, Verilator models, waveforms, reports.

One rule for every tool, so that an installed package never writes into site-packages:

1. ``$SIMTGPU_CACHE_DIR`` when set;
2. ``build/`` at the root of a source checkout (the package runs from a clone with
   ``pyproject.toml`` beside it, as ``make`` and an editable install use it);
3. otherwise the user's cache directory (``platformdirs.user_cache_dir("simtgpu")``, e.g.
   ``~/.cache/simtgpu`` on Linux).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["SOURCE_ROOT", "cache_dir"]

_ROOT = Path(__file__).resolve().parent.parent
SOURCE_ROOT: Path | None = _ROOT if (_ROOT / "pyproject.toml").is_file() \
    and (_ROOT / "simtgpu_pkg").is_dir() else None
"""The root of the source checkout the package runs from; None for an installed package."""


def cache_dir() -> Path:
    """The folder for build products (see the module docstring for the order)."""
    env = os.environ.get("SIMTGPU_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    if SOURCE_ROOT is not None:
        return SOURCE_ROOT / "build"
    import platformdirs

    return Path(platformdirs.user_cache_dir("simtgpu", appauthor=False))
