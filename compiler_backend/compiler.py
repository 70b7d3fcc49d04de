"""The compile pipeline: front end -> verified IR -> passes -> ISA assembly or PTX text."""

from __future__ import annotations

import functools
import gc
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np
from simtgpu.errors import SimtgpuError

from . import chunking, ir, passes
from .errors import CompileError, KernelError
from .frontend import KernelSource, lower_kernel
from .host_arrays import host_address
from .ir import F32, I32, I64, U32, U64, Type

if TYPE_CHECKING:
    from .isa_codegen import CodeTooLong


@dataclass(frozen=True)
class Target:
    """What to compile for: ``isa`` (this GPU, with its warp size) or ``ptx`` (sm_80/sm_90)."""

    kind: str = "isa"
    warp_size: int = 8
    arch: str = "sm_90"

    @classmethod
    def ptx(cls, arch: str = "sm_90") -> Target:
        return cls("ptx", 32, arch)


@dataclass
class CompiledKernel:
    name: str
    target: Target
    ir_text: str
    code: str  # assembly text (isa) or PTX text
    params: list[tuple[str, str]]  # (name, kind): kind is ptr | i32 | u32 | i64 | u64 | f32
    shared_bytes: int
    threads: int
    block: tuple[int, int, int]
    compile_ms: float
    stats: dict = field(default_factory=dict)
    asserts: list = field(default_factory=list)  # (SourceLocation, message) per device_assert
    prints: list = field(default_factory=list)  # (prefix, value kinds, hex) per device_print
    elements: dict = field(default_factory=dict)  # pointer parameter -> element ("f16" ...)
    _object: object = field(default=None, repr=False, compare=False)
    _launcher: tuple | None = field(default=None, repr=False, compare=False)

    # -- Triton's CompiledKernel (what ``kernel.warmup(...)`` returns) ---------------------
    @property
    def n_regs(self) -> int:
        """Registers per thread (isa target; 0 for PTX, which ptxas allocates)."""
        return int(self.stats.get("registers", 0))

    @property
    def n_spills(self) -> int:
        """Values spilled to the per-thread spill area for want of registers."""
        return int(self.stats.get("spilled", 0))

    @property
    def metadata(self) -> SimpleNamespace:
        """``shared`` (bytes per block, spill area included), ``num_warps``, ``name``."""
        return SimpleNamespace(shared=self.shared_bytes, name=self.name,
                               num_warps=-(-self.threads // self.target.warp_size))

    @property
    def asm(self) -> dict[str, str]:
        return {"ir": self.ir_text, self.target.kind: self.code}

    def _init_handles(self) -> None:
        """Nothing to do: modules load on the first launch."""

    def bind_launcher(self, launch) -> None:
        """Let ``self[grid](*args)`` launch through ``launch(grid, args, kwargs)``
        (``kernel.warmup`` binds its @jit kernel's launcher here)."""
        self._launcher = launch

    def __getitem__(self, grid):
        import functools

        return functools.partial(self._launch, grid)

    def _launch(self, grid, *args, **kwargs):
        if self._launcher is None:
            raise SimtgpuError(f"kernel '{self.name}': launch a compiled kernel from "
                               "kernel.warmup(...), or launch the @jit kernel itself")
        return self._launcher(grid, args, kwargs)

    def check_array(self, name: str, dtype) -> None:
        """Raise :class:`DriverError` when an array of ``dtype`` does not match the element
        type pointer parameter ``name`` was compiled for (float16 data read as float32...)."""
        from simtgpu.driver_model.errors import DriverError

        want = self.elements.get(name)
        try:
            got = type_of_arg(np.empty(0, dtype)).elem
        except TypeError as e:
            raise DriverError(f"kernel '{self.name}', parameter '{name}': {e}") from None
        if want is not None and got != want:
            raise DriverError(f"kernel '{self.name}', parameter '{name}': compiled for "
                              f"{_ELEM_NAMES[want]} elements, got an array of {np.dtype(dtype)}")

    def object_file(self):
        """The assembled object (isa target), assembled once."""
        from simtgpu.assembler import assemble

        if self.target.kind != "isa":
            raise ValueError("only isa kernels assemble into an object file")
        if self._object is None:
            self._object = assemble(self.code, f"<{self.name}>")
        return self._object


_ELEM_NAMES = {"f32": "float32", "i32": "int32", "i64": "int64", "f16": "float16",
               "bf16": "bfloat16", "i8": "int8", "u8": "uint8", "i16": "int16",
               "u16": "uint16", "i1": "bool"}
_TYPE_NAMES = {"*fp32": ir.ptr("f32"), "*f32": ir.ptr("f32"), "*i32": ir.ptr("i32"),
               "*fp16": ir.ptr("f16"), "*f16": ir.ptr("f16"), "*bf16": ir.ptr("bf16"),
               "*int32": ir.ptr("i32"), "*u32": ir.ptr("u32"), "*uint32": ir.ptr("u32"),
               "*i64": ir.ptr("i64"), "*int64": ir.ptr("i64"), "*u64": ir.ptr("u64"),
               "*uint64": ir.ptr("u64"), "*i8": ir.ptr("i8"), "*int8": ir.ptr("i8"),
               "*u8": ir.ptr("u8"), "*uint8": ir.ptr("u8"), "*i16": ir.ptr("i16"),
               "*int16": ir.ptr("i16"), "*u16": ir.ptr("u16"), "*uint16": ir.ptr("u16"),
               "*i1": ir.ptr("i1"), "i64": I64, "int64": I64, "u64": U64, "uint64": U64,
               "fp32": F32, "f32": F32, "i32": I32, "int32": I32, "u32": U32, "uint32": U32}


def parse_type(text: str) -> Type:
    """Triton-style signature type names: ``*fp32``, ``*fp16``, ``*bf16``, ``*i32``,
    ``*u32``, ``*i64``, ``*u64``, ``*i8``, ``*u8``, ``*i16``, ``*u16``, ``*i1``, ``i32``,
    ``u32``, ``i64``, ``u64``, ``fp32``."""
    t = _TYPE_NAMES.get(text.strip())
    if t is None:
        raise ValueError(f"unknown parameter type '{text}' (use *fp32, *fp16, *bf16, *i32, *u32, "
                         "*i64, *u64, *i8, *u8, *i16, *u16, *i1, i32, u32, i64, u64, fp32)")
    return t


_NARROW_ARRAYS = {np.dtype(np.int8): "i8", np.dtype(np.uint8): "u8", np.dtype(np.int16): "i16",
                  np.dtype(np.uint16): "u16", np.dtype(np.bool_): "i1"}


def type_of_arg(value) -> Type:
    """Parameter type from a launch argument (NumPy array, DeviceArray, int, float)."""
    from simtgpu.driver_model import DeviceArray

    if isinstance(value, np.ndarray | DeviceArray):
        dt = np.dtype(value.dtype)
        if dt == np.float32:
            return ir.ptr("f32")
        if dt == np.dtype(np.int32):
            return ir.ptr("i32")
        if dt == np.dtype(np.uint32):
            return ir.ptr("u32")  # unsigned: comparisons, >>, //, %, float conversion
        if dt == np.dtype(np.int64):
            return ir.ptr("i64")
        if dt == np.dtype(np.uint64):
            return ir.ptr("u64")
        if dt == np.float16:
            return ir.ptr("f16")
        if dt.name == "bfloat16":  # ml_dtypes.bfloat16
            return ir.ptr("bf16")
        narrow = _NARROW_ARRAYS.get(dt)
        if narrow is not None:  # one byte (bool: 0 or 1) or two per element
            return ir.ptr(narrow)
        raise TypeError(f"arrays of {dt} are not supported (float32, float16, bfloat16 from "
                        "ml_dtypes, int8, uint8, int16, uint16, int32, uint32, int64, uint64, "
                        "bool)")
    if isinstance(value, bool | np.bool_):
        return I32
    if isinstance(value, np.int64 | np.uint64):
        return U64 if isinstance(value, np.uint64) else I64
    if isinstance(value, np.unsignedinteger):
        return U32
    if isinstance(value, int | np.integer):
        # as Triton: an int is i32 when it fits, else i64 (u64 above 2**63 - 1)
        v = int(value)
        if -(1 << 31) <= v < (1 << 31):
            return I32
        if -(1 << 63) <= v < (1 << 63):
            return I64
        if v < (1 << 64):
            return U64
        raise TypeError(f"the integer {v} does not fit in 64 bits")
    if isinstance(value, float | np.floating):
        return F32
    raise TypeError(f"cannot pass a {type(value).__name__} to a kernel")


SPECIALIZATIONS = {
    "a16": "pointer whose address is a multiple of 16 bytes",
    "d16": "integer divisible by 16",
    "one": "integer equal to 1 (compiled as the constant 1)",
}
"""What a launch argument may be specialised on (as Triton does); part of the cache key."""


def specialization(name: str, value, do_not_specialize=()) -> str | None:
    """The :data:`SPECIALIZATIONS` key a launch argument earns, or None."""
    if name in do_not_specialize or isinstance(value, bool | np.bool_ | float | np.floating):
        return None
    ptr = getattr(value, "ptr", None)
    if isinstance(value, np.ndarray):
        # staged so that its device address is its host address modulo 16 (host_arrays.py)
        return "a16" if host_address(value) % 16 == 0 else None
    if isinstance(ptr, int):
        return "a16" if ptr % 16 == 0 else None
    if isinstance(value, int | np.integer):
        return "one" if value == 1 else "d16" if value % 16 == 0 else None
    return None


def default_vec(target: Target) -> int:
    """Contiguous elements per thread when the caller does not say: 4 on PTX (vector
    accesses to shared memory, whose alignment is known, and to global memory where the
    specialisation proves it; ``tl.dot``'s 2-D block per thread), 1 on this ISA (the cyclic
    layout: it has no vector memory instructions, and consecutive lanes reading consecutive
    words keep a warp's access within the fewest lines)."""
    return 4 if target.kind == "ptx" else 1


def _without_gc(compile):
    """Run ``compile`` with Python's cyclic garbage collector paused: the IR (operations
    pointing at their blocks and back) is all cycles, and as it grows the collector walks
    it again and again, to free nothing until the compile is over (softmax at 16,384 on one
    warp of ``small``: 3.5 s with it, 2.1 s without; what the compile leaves is collected
    once the collector runs again)."""

    @functools.wraps(compile)
    def run(*args, **kwargs):
        if not gc.isenabled():
            return compile(*args, **kwargs)
        gc.disable()
        try:
            return compile(*args, **kwargs)
        finally:
            gc.enable()

    return run


@_without_gc
def compile_function(fn, arg_types: dict[str, Type], constexprs: dict, target: Target,
                     num_warps: int = 4, block: tuple[int, int, int] | None = None,
                     name: str | None = None, optimize: bool = True,
                     enable_fp_fusion: bool = True, config=None,
                     specialize: dict[str, str] | None = None,
                     size_per_thread: int | None = None,
                     num_stages: int | None = None,
                     chunk: int | None = None,
                     max_stages: int | None = None) -> CompiledKernel:
    """Compile the Python kernel ``fn`` for ``target``; ``enable_fp_fusion`` contracts a
    multiply feeding an add into one fused multiply-add (as in Triton). With ``config`` (a
    :class:`simtgpu.arch.config.GpuConfig`, isa target), a kernel over that configuration's
    limits (threads per block, shared memory, instruction memory) is a :class:`KernelError`
    at the kernel's ``def``, before any launch. ``specialize`` maps parameter names to
    :data:`SPECIALIZATIONS` keys the launch arguments are known to satisfy;
    ``size_per_thread`` (1, 2 or 4) sets the contiguous elements each thread owns (default:
    :func:`default_vec`); ``num_stages`` pipelines loops that stage global tiles in shared
    memory (:mod:`.pipeline`; default ``DEFAULT_STAGES`` of the target, 1 turns it off; a
    loop's ``tl.range(..., num_stages=k)`` overrides it; fewer stages where more would exceed
    a limit or spill more registers: ``max_stages`` caps every loop's); ``chunk`` (isa target)
    the elements per thread each iteration of an elementwise kernel's chunk loop handles:
    None chooses (a loop only where the unrolled code would not fit, see :mod:`.chunking`),
    0 keeps the code unrolled."""
    t0 = time.perf_counter()

    def again(stages: int | None, chunks: int | None) -> CompiledKernel:
        return compile_function(fn, arg_types, constexprs, target, num_warps, block, name,
                                optimize, enable_fp_fusion, config, specialize,
                                size_per_thread, num_stages=stages, chunk=chunks,
                                max_stages=stages)

    if block is None:
        block = (num_warps * target.warp_size, 1, 1)
    threads = block[0] * block[1] * block[2]
    if config is not None and target.kind == "isa":
        _check_threads(fn, name, threads, block, num_warps, config)
    for k, v in (specialize or {}).items():
        if v not in SPECIALIZATIONS:
            raise ValueError(f"unknown specialisation {v!r} for '{k}' (one of "
                             f"{', '.join(SPECIALIZATIONS)})")
    vec = default_vec(target) if size_per_thread is None else size_per_thread
    if vec not in (1, 2, 4):
        raise ValueError(f"size_per_thread must be 1, 2 or 4, not {vec}")

    def lowered(virtual: int) -> ir.Function:
        f = lower_kernel(fn, arg_types, constexprs, virtual, target.warp_size, name, specialize,
                         vec)
        if virtual != threads:
            chunking.wrap(f, threads, virtual // threads)
        f.meta["block"] = tuple(block)
        ir.verify(f)
        if optimize:
            passes.optimize(f, verify=False, fp_fusion=enable_fp_fusion)
            ir.verify(f)
            from .pipeline import DEFAULT_STAGES, pipeline_loops

            stages = DEFAULT_STAGES[target.kind] if num_stages is None else num_stages
            used = pipeline_loops(f, stages, target.kind == "ptx", max_stages)
            if used > 1:
                passes.optimize(f, verify=False, fp_fusion=enable_fp_fusion)
                ir.verify(f)
                f.meta["num_stages"] = used
        return f

    f = lowered(threads)
    if target.kind == "isa":
        try:
            f = chunking.choose(f, lowered, threads, chunk, config)
        except CompileError as e:
            src = KernelSource.from_function(fn)
            raise e.at(src.loc(src.tree), f"kernel '{f.name}': ") from None
    ir_text = ir.print_function(f)
    from .isa_codegen import param_kind

    params = [(p.name, param_kind(p.type)) for p in f.params]
    elements = {p.name: p.type.elem for p in f.params if p.type.is_ptr}
    stats: dict = {}
    from .isa_codegen import CodeTooLong  # (imported late, as the code generators are)

    try:
        if target.kind == "isa":
            from .isa_codegen import generate
            from .wide import legalize_i64

            if legalize_i64(f):  # 64-bit integers as register pairs
                if optimize:
                    passes.optimize(f, verify=False, fp_fusion=enable_fp_fusion)
                ir.verify(f)
            res = generate(f, None if config is None else config.shared_bytes_per_core,
                           None if config is None else config.imem_bytes // 4)
            code = res.text
            stats = {"registers": res.registers, "static_instructions": res.instructions,
                     "spilled": res.spilled, "spill_space": res.spill_space,
                     "local_bytes": res.local_bytes, "chunks": f.meta.get("chunks", 1)}
            if "not_chunked" in f.meta:
                stats["not_chunked"] = f.meta["not_chunked"]
        elif target.kind == "ptx":
            from .ptx_codegen import generate_ptx

            code = generate_ptx(f, target.arch)
        else:
            raise ValueError(f"unknown target {target.kind}")
    except CodeTooLong as e:
        if chunk is None and chunking.can_chunk(f):
            return again(num_stages, chunking.pick(f))
        if f.meta.get("num_stages", 1) > 1:
            return again(f.meta["num_stages"] - 1, chunk)
        raise _too_long(fn, f, e, num_warps, block, config, chunk) from None
    except CompileError as e:
        if f.meta.get("num_stages", 1) > 1:  # the pipelined loop is over a limit: fewer
            return again(f.meta["num_stages"] - 1, chunk)
        # code generation limits (registers) belong to the kernel as a whole: point at it
        src = KernelSource.from_function(fn)
        raise e.at(src.loc(src.tree), f"kernel '{f.name}': ") from None
    if target.kind == "isa":
        from .isa_codegen import shared_size

        shared = shared_size(code)  # (data and the shared spill area)
    else:
        from .ptx_codegen import shared_bytes

        shared = shared_bytes(f)  # what the launch gives the PTX's dynamic array
    stats["num_stages"] = f.meta.get("num_stages", 1)  # 1: no loop was pipelined
    ck = CompiledKernel(f.name, target, ir_text, code, params, shared,
                        threads, block, 0.0, stats, list(f.meta.get("asserts", [])),
                        list(f.meta.get("prints", [])), elements)
    piped = stats["num_stages"]
    if config is not None and target.kind == "isa":
        if chunk is None and chunking.too_big(f, len(ck.object_file().code), config):
            return again(num_stages, chunking.pick(f))
        try:
            _check_resources(fn, ck, f.shared_bytes, config)
        except KernelError:
            if piped == 1:
                raise
            return again(piped - 1, chunk)
    if piped > 1 and stats.get("spilled"):
        # on this ISA's 32 registers a stage that spills costs more than it hides: keep the
        # stage count that spills least (the most stages among equals)
        alt = again(piped - 1, chunk)
        if alt.n_spills < ck.n_spills:
            return alt
    ck.compile_ms = (time.perf_counter() - t0) * 1000
    return ck


def _limit_error(fn, name: str | None, message: str) -> KernelError:
    src = KernelSource.from_function(fn)
    return KernelError(src.loc(src.tree), f"kernel '{name or fn.__name__}': {message}")


def _too_long(fn, f: ir.Function, e: CodeTooLong, num_warps: int, block, config,
              chunk: int | None) -> KernelError:
    """The error for a kernel whose code was found too long while registers were being
    allocated: the limit, why the code is that long, and what to change."""
    slots = f.meta.get("slots", 1)
    why = [f"each thread's {slots} elements of a tile are unrolled (one copy of the code "
           "per element)"] if slots > 1 else []
    if slots > 1 and "chunks" not in f.meta and (no := chunking.why_not(f)) is not None:
        why.append(f"the kernel cannot run as a chunk loop ({no})")
    elif slots > 1 and chunk == 0:
        why.append("chunk=0 keeps it unrolled")
    fix = ["a smaller block size (fewer elements per thread)"] if slots > 1 else []
    most = config.max_threads_per_block // config.lanes
    if slots > 1 and block[1:] == (1, 1) and block[0] == num_warps * config.lanes \
            and num_warps < most:
        fix.append(f"more warps (num_warps up to {most})")
    fix = "use " + ", ".join(fix) + (" or " if fix else "") + "fewer unrolled loops"
    return _limit_error(fn, f.name, f"needs {e}; the '{config.name}' configuration has "
                        f"{config.imem_bytes} bytes of instruction memory ({e.budget} "
                        "instructions)" + (f": {' and '.join(why)}" if why else "")
                        + f"; {fix}")


def _check_threads(fn, name, threads: int, block, num_warps: int, config) -> None:
    """Threads per block against the configuration's warps x lanes."""
    most = config.max_threads_per_block
    if threads <= most:
        return
    if block[0] == num_warps * config.lanes and block[1:] == (1, 1):
        what = f"num_warps={num_warps} is {threads} threads per block"
        fix = f"use num_warps <= {most // config.lanes}"
    else:
        what = f"block={tuple(block)} is {threads} threads"
        fix = "use a smaller block"
    raise _limit_error(fn, name, f"{what}; the '{config.name}' configuration runs at most "
                       f"{most} ({config.warps_per_core} warps of {config.lanes} lanes): {fix}")


def _check_resources(fn, ck: CompiledKernel, data_bytes: int, config) -> None:
    """Shared memory (data and the register spill area) and code size against the
    configuration, so that a kernel that can never be loaded or launched fails here."""
    if ck.shared_bytes > config.shared_bytes_per_core:
        spill = ck.shared_bytes - data_bytes
        parts = f"{data_bytes} of data" + (f" and {spill} of register spill area "
                                            f"({ck.stats.get('spilled', 0)} values)"
                                            if spill else "")
        raise _limit_error(fn, ck.name, f"needs {ck.shared_bytes} bytes of shared memory "
                           f"({parts}); the '{config.name}' configuration has "
                           f"{config.shared_bytes_per_core} per core: use smaller blocks")
    size = len(ck.object_file().code)
    if size > config.imem_bytes:
        raise _limit_error(fn, ck.name, f"is {size} bytes of code ({size // 4} "
                           f"instructions); the '{config.name}' configuration has "
                           f"{config.imem_bytes} bytes of instruction memory: use smaller "
                           "blocks or fewer unrolled loops"
                           + (f" (not run as a chunk loop: {why})"
                              if (why := ck.stats.get("not_chunked")) else ""))
