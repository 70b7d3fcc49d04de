"""The compile pipeline: front end -> verified IR -> passes -> ISA assembly or PTX text."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import ir, passes
from .errors import CompileError
from .frontend import KernelSource, lower_kernel
from .ir import F32, I32, U32, Type


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
    params: list[tuple[str, str]]  # (name, kind): kind is ptr | i32 | u32 | f32
    shared_bytes: int
    threads: int
    block: tuple[int, int, int]
    compile_ms: float
    stats: dict = field(default_factory=dict)
    asserts: list = field(default_factory=list)  # (SourceLocation, message) per device_assert
    prints: list = field(default_factory=list)  # (prefix, value kinds, hex) per device_print
    elements: dict = field(default_factory=dict)  # pointer parameter -> element ("f16" ...)

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
        """The assembled object (isa target)."""
        from simtgpu.assembler import assemble

        if self.target.kind != "isa":
            raise ValueError("only isa kernels assemble into an object file")
        return assemble(self.code, f"<{self.name}>")


_ELEM_NAMES = {"f32": "float32", "i32": "int32", "f16": "float16", "bf16": "bfloat16"}
_TYPE_NAMES = {"*fp32": ir.ptr("f32"), "*f32": ir.ptr("f32"), "*i32": ir.ptr("i32"),
               "*fp16": ir.ptr("f16"), "*f16": ir.ptr("f16"), "*bf16": ir.ptr("bf16"),
               "*int32": ir.ptr("i32"), "*u32": ir.ptr("u32"), "*uint32": ir.ptr("u32"),
               "fp32": F32, "f32": F32, "i32": I32, "int32": I32, "u32": U32, "uint32": U32}


def parse_type(text: str) -> Type:
    """Triton-style signature type names: ``*fp32``, ``*fp16``, ``*bf16``, ``*i32``,
    ``*u32``, ``i32``, ``u32``, ``fp32``."""
    t = _TYPE_NAMES.get(text.strip())
    if t is None:
        raise ValueError(f"unknown parameter type '{text}' (use *fp32, *fp16, *bf16, *i32, *u32, "
                         "i32, u32, fp32)")
    return t


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
        if dt == np.float16:
            return ir.ptr("f16")
        if dt.name == "bfloat16":  # ml_dtypes.bfloat16
            return ir.ptr("bf16")
        raise TypeError(f"arrays of {dt} are not supported (float32, float16, bfloat16 from "
                        "ml_dtypes, int32, uint32)")
    if isinstance(value, bool | np.bool_):
        return I32
    if isinstance(value, np.unsignedinteger):
        return U32
    if isinstance(value, int | np.integer):
        return I32
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
        return "a16"  # copied into a fresh allocation (the allocator aligns to 256 bytes)
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


def compile_function(fn, arg_types: dict[str, Type], constexprs: dict, target: Target,
                     num_warps: int = 4, block: tuple[int, int, int] | None = None,
                     name: str | None = None, optimize: bool = True,
                     enable_fp_fusion: bool = True, specialize: dict[str, str] | None = None,
                     size_per_thread: int | None = None) -> CompiledKernel:
    """Compile the Python kernel ``fn`` for ``target``; ``enable_fp_fusion`` contracts a
    multiply feeding an add into one fused multiply-add (as in Triton). ``specialize`` maps
    parameter names to :data:`SPECIALIZATIONS` keys the launch arguments are known to
    satisfy; ``size_per_thread`` (1, 2 or 4) sets the contiguous elements each thread owns
    (default: :func:`default_vec`)."""
    t0 = time.perf_counter()
    if block is None:
        block = (num_warps * target.warp_size, 1, 1)
    threads = block[0] * block[1] * block[2]
    for k, v in (specialize or {}).items():
        if v not in SPECIALIZATIONS:
            raise ValueError(f"unknown specialisation {v!r} for '{k}' (one of "
                             f"{', '.join(SPECIALIZATIONS)})")
    vec = default_vec(target) if size_per_thread is None else size_per_thread
    if vec not in (1, 2, 4):
        raise ValueError(f"size_per_thread must be 1, 2 or 4, not {vec}")
    f = lower_kernel(fn, arg_types, constexprs, threads, target.warp_size, name, specialize,
                     vec)
    f.meta["block"] = tuple(block)
    ir.verify(f)
    if optimize:
        passes.optimize(f, verify=False, fp_fusion=enable_fp_fusion)
        ir.verify(f)
    ir_text = ir.print_function(f)
    stats: dict = {}
    try:
        if target.kind == "isa":
            from .isa_codegen import generate

            res = generate(f)
            code = res.text
            stats = {"registers": res.registers, "static_instructions": res.instructions,
                     "spilled": res.spilled}
        elif target.kind == "ptx":
            from .ptx_codegen import generate_ptx

            code = generate_ptx(f, target.arch)
        else:
            raise ValueError(f"unknown target {target.kind}")
    except CompileError as e:
        # code generation limits (registers) belong to the kernel as a whole: point at it
        src = KernelSource.from_function(fn)
        raise e.at(src.loc(src.tree), f"kernel '{f.name}': ") from None
    from .isa_codegen import param_kind

    ms = (time.perf_counter() - t0) * 1000
    return CompiledKernel(f.name, target, ir_text, code,
                          [(p.name, param_kind(p.type)) for p in f.params], f.shared_bytes,
                          threads, block, ms, stats, list(f.meta.get("asserts", [])),
                          list(f.meta.get("prints", [])),
                          {p.name: p.type.elem for p in f.params if p.type.is_ptr})
