"""Verilator and cocotb plumbing shared by every RTL bench.

* Verilator and its environment come from :mod:`simtgpu.rtlsim.verilator`, as for every
  other Verilator build of the project.
* :func:`build` turns Verilog text into a Verilator+cocotb simulator, once: builds live under
  ``build/verilator/<name>-<hash>/`` where the hash covers the Verilog, the build options and
  the Verilator version. A file lock makes concurrent pytest-xdist workers wait for one build
  instead of racing; the second worker reuses the finished one.
* :func:`run_cocotb` runs a cocotb 2.x test module on a built simulator through
  ``cocotb_tools.runner`` (never cocotb's Makefiles, whose version check fails on this
  Verilator build) and raises :class:`RtlTestFailure` when any cocotb test failed.
* Waveforms: with ``SIMTGPU_WAVES=fst`` (or ``vcd``) :func:`waves_format` asks the build for
  tracing and :func:`run_cocotb` writes the dump to ``build/waves/<test name>.<fmt>``.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from simtgpu.errors import SimtgpuError
from simtgpu.paths import cache_dir
from simtgpu.rtlsim.trace_config import trace_all, trace_args, trace_rules
from simtgpu.rtlsim.verilator import VerilatorError, verilator_env, verilator_exe

__all__ = [
    "BUILD_ROOT", "REPO_ROOT", "Build", "RtlTestFailure", "build", "file_lock", "run_cocotb",
    "waves_format", "waves_path",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
BUILD_ROOT = cache_dir()  # build/ of a source checkout (simtgpu.paths)
VERILATOR_BUILDS = BUILD_ROOT / "verilator"
WAVES_DIR = BUILD_ROOT / "waves"

# Bump when the way a build is made changes, so stale builds are not reused.
_BUILD_RECIPE = 4


class RtlTestFailure(SimtgpuError):
    """A cocotb test reported a failure; the message carries the failing tests' messages."""


def _apply_env() -> None:
    os.environ.update(verilator_env())


def waves_format() -> str | None:
    """``"fst"``/``"vcd"`` when ``SIMTGPU_WAVES`` asks for waveforms, else None."""
    fmt = os.environ.get("SIMTGPU_WAVES", "").strip().lower()
    if fmt in ("", "0", "no", "none"):
        return None
    if fmt in ("1", "yes", "fst"):
        return "fst"
    if fmt == "vcd":
        return "vcd"
    raise VerilatorError(f"SIMTGPU_WAVES must be fst or vcd, not {fmt!r}")


def waves_path(test_name: str, fmt: str) -> Path:
    """Where the waveform of ``test_name`` goes (build/waves/<name>.<fmt>)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", test_name).strip("_") or "wave"
    return WAVES_DIR / f"{safe}.{fmt}"


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` (created if needed), for cross-process builds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@dataclass(frozen=True)
class Build:
    """A built Verilator+cocotb simulator."""

    name: str
    directory: Path
    toplevel: str
    waves: str | None  # tracing compiled in: "fst", "vcd" or None
    seconds: float  # time the build took (0 when it was reused)
    defaults: Mapping[str, int] = field(default_factory=dict)
    """The top's inputs with a declared initial value other than 0, by Verilog port name:
    exported Verilog loses them, so a bench drives them (verification/units.py)."""


def _coroutine_flags(timing: bool) -> list[str]:
    # g++ 12 only enables C++20 coroutines (needed by --timing) with -fcoroutines.
    return ["--timing", "-CFLAGS", "-fcoroutines"] if timing else ["--no-timing"]


def build(name: str, verilog: str, toplevel: str, *, waves: str | None = None,
          timing: bool = False, extra_args: Sequence[str] = (),
          extra_sources: Sequence[Path] = ()) -> Build:
    """Build ``verilog`` (text whose top module is ``toplevel``) for cocotb, or reuse the cached
    build with the same hash. ``waves``: compile FST or VCD tracing in (None: no tracing).
    ``extra_sources``: further files (e.g. a ``.vlt`` waiver file) that are part of the hash."""
    _apply_env()
    args = ["-Wno-fatal", "-Wno-lint", "-Wno-style", "-O2", "--x-assign", "fast",
            "--x-initial", "fast", "-CFLAGS", "-O1", *_coroutine_flags(timing)]
    rules = ""
    if waves in ("fst", "vcd"):
        # only named signals, each once (rtlsim/trace_config.py); the rules file is written
        # into the build folder below, its text is part of the hash
        rules = "" if trace_all() else trace_rules()
        args += [a for a in trace_args(waves, None) if a != "--trace"]
    elif waves is not None:
        raise VerilatorError(f"waves must be fst, vcd or None, not {waves!r}")
    args += list(extra_args)
    h = hashlib.sha256()
    h.update(verilog.encode())
    h.update(rules.encode())
    for src in extra_sources:
        h.update(Path(src).read_bytes())
    h.update(repr((args, toplevel, _BUILD_RECIPE, _verilator_version(), _python_env())).encode())
    key = h.hexdigest()[:16]
    directory = VERILATOR_BUILDS / f"{name}-{key}"
    stamp = directory / "BUILT"
    exe = directory / toplevel
    if stamp.exists() and exe.exists():
        directory.touch()
        return Build(name, directory, toplevel, waves, 0.0)
    with file_lock(VERILATOR_BUILDS / f"{name}-{key}.lock"):
        if stamp.exists() and exe.exists():
            return Build(name, directory, toplevel, waves, 0.0)
        t0 = time.perf_counter()
        if directory.exists():
            shutil.rmtree(directory)
        directory.mkdir(parents=True)
        src = directory / f"{toplevel}.v"
        src.write_text(verilog)
        runner = _runner(public_top_only=True)
        # Only the top module's ports are visible to cocotb: --public-flat-rw on a whole
        # GPU makes a symbol table whose constructor alone takes minutes to compile.
        vlt = directory / "public.vlt"
        vlt.write_text(f'`verilator_config\npublic_flat_rw -module "{toplevel}" -var "*"\n')
        sources = [vlt]
        if rules:
            sources.append(directory / "trace.vlt")
            sources[-1].write_text(rules)
        log = directory / "build.log"
        try:
            runner.build(sources=[*sources, src, *extra_sources], hdl_toplevel=toplevel,
                         build_dir=directory, build_args=args, waves=waves is not None,
                         timescale=("1ns", "1ps"), always=True, log_file=log)
        except (SystemExit, subprocess.CalledProcessError, RuntimeError) as e:
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise VerilatorError(f"Verilator build of {name} failed ({e}); log {log}:\n"
                                 f"{tail}") from None
        seconds = time.perf_counter() - t0
        stamp.write_text(f"{seconds:.1f}\n")
    _prune(name, keep=directory)
    return Build(name, directory, toplevel, waves, seconds)


def _prune(name: str, keep: Path, spare: int = 2, idle_s: float = 3600.0) -> None:
    """Remove older builds of ``name`` (other design hashes): all but the ``spare`` newest,
    and only those nobody has used for ``idle_s`` seconds (another worker may still run one).
    The RTL changes often; without this the cache grows by a model per change."""
    others = [d for d in VERILATOR_BUILDS.glob(f"{name}-*") if d.is_dir() and d != keep
              and re.fullmatch(rf"{re.escape(name)}-[0-9a-f]{{16}}", d.name)]
    others.sort(key=lambda d: d.stat().st_mtime, reverse=True)
    now = time.time()
    for d in others[spare:]:
        if now - d.stat().st_mtime > idle_s:
            shutil.rmtree(d, ignore_errors=True)
            d.with_suffix(".lock").unlink(missing_ok=True)


def _runner(public_top_only: bool = False):
    """cocotb's Verilator runner; with ``public_top_only`` it leaves out --public-flat-rw
    (the caller then names the public signals in a control file)."""
    from cocotb_tools.runner import Verilator

    class _Verilator(Verilator):
        def _build_command(self):  # type: ignore[override]
            cmds = super()._build_command()
            if public_top_only:
                cmds[0] = [a for a in cmds[0] if a != "--public-flat-rw"]
            return cmds

    return _Verilator()


def _python_env() -> tuple[str, str, str]:
    """What a cocotb build links against besides Verilator: cocotb's libraries (its version
    and where it is installed) and the Python it embeds. A new virtual environment or cocotb
    release makes a new build instead of reusing one that points at the old libraries."""
    import cocotb

    return cocotb.__version__, str(Path(cocotb.__file__).resolve().parent), sys.version


_VERSION: str | None = None


def _verilator_version() -> str:
    global _VERSION
    if _VERSION is None:
        try:
            out = subprocess.run([verilator_exe(), "--version"],
                                 env=verilator_env(), capture_output=True, text=True,
                                 timeout=60)
            _VERSION = out.stdout.strip() or "unknown"
        except (OSError, subprocess.TimeoutExpired):
            _VERSION = "unknown"
    return _VERSION


def run_cocotb(bld: Build, test_module: str, *, run_name: str,
               env: Mapping[str, str] | None = None, testcase: str | None = None,
               seed: int | None = None, waves: bool = False) -> Path:
    """Run the cocotb tests of ``test_module`` (a dotted module name) on ``bld``; return the
    run directory (``build/cocotb/<run_name>``), where the tests may leave result files.
    ``waves``: dump the waveform to :func:`waves_path` (``bld`` must have tracing).
    Raises :class:`RtlTestFailure` with the failures' messages when a test failed."""
    _apply_env()
    from cocotb_tools.runner import get_runner

    run_dir = BUILD_ROOT / "cocotb" / re.sub(r"[^A-Za-z0-9_.-]+", "_", run_name)
    run_dir.mkdir(parents=True, exist_ok=True)
    results = run_dir / "results.xml"
    if results.exists():
        results.unlink()
    extra_env = {"SIMTGPU_RUN_DIR": str(run_dir), **(env or {})}
    test_args: list[str] = []
    if waves:
        if bld.waves is None:
            raise VerilatorError(f"build {bld.name} has no tracing; build it with waves=")
        wpath = waves_path(run_name, bld.waves)
        wpath.parent.mkdir(parents=True, exist_ok=True)
        test_args += ["--trace-file", str(wpath)]
        extra_env["SIMTGPU_WAVES_FILE"] = str(wpath)
    runner = get_runner("verilator")
    log = run_dir / "sim.log"
    try:
        runner.test(test_module=test_module, hdl_toplevel=bld.toplevel, hdl_toplevel_lang="verilog",
                    build_dir=bld.directory, test_dir=run_dir, results_xml=str(results),
                    extra_env=extra_env, testcase=testcase, seed=seed, waves=waves,
                    test_args=test_args, log_file=log)
    except (SystemExit, subprocess.CalledProcessError) as e:
        raise RtlTestFailure(f"simulator of {bld.name} did not finish ({e}); "
                             f"log {log}:\n{_tail(log)}") from None
    failures = _failures(results)
    if failures is None:
        raise RtlTestFailure(f"no cocotb results from {run_name}; log {log}:\n{_tail(log)}")
    if failures:
        raise RtlTestFailure(f"{run_name}: " + "\n".join(failures))
    return run_dir


def _tail(path: Path, n: int = 4000) -> str:
    return path.read_text(errors="replace")[-n:] if path.exists() else "(no log)"


def _failures(results: Path) -> list[str] | None:
    """Failure messages from a cocotb results.xml (None when there is no file/no test)."""
    if not results.exists():
        return None
    root = ET.parse(results).getroot()
    cases = list(root.iter("testcase"))
    if not cases:
        return None
    out = []
    for case in cases:
        for bad in list(case.iter("failure")) + list(case.iter("error")):
            msg = bad.get("message") or (bad.text or "").strip()
            out.append(f"{case.get('name')}: {msg}")
    return out
