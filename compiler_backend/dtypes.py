"""The language's element types (``tl.float32``, ``tl.int32`` ...) and their IR types.

A module of its own so that both the tensor layer (:mod:`.tiles`) and the language
(:mod:`.language`) can use it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import CompileError
from .ir import BF16, F16, F32, I1, I8, I16, I32, I64, U8, U16, U32, U64, Type, ptr


@dataclass(frozen=True)
class dtype:  # noqa: N801 - the Triton spelling
    name: str
    type: Type

    def __repr__(self) -> str:
        return f"tl.{self.name}"

    # Triton's questions about a type, so that kernels which branch on them at compile time
    # (``if x.dtype.is_floating(): ...``) run unchanged
    @property
    def primitive_bitwidth(self) -> int:
        return {"int1": 1, "float16": 16, "bfloat16": 16, "int64": 64, "uint64": 64,
                "int8": 8, "uint8": 8, "int16": 16, "uint16": 16}.get(self.name, 32)

    @property
    def itemsize(self) -> int:
        return max(1, self.primitive_bitwidth // 8)

    @property
    def int_bitwidth(self) -> int:
        return self.primitive_bitwidth

    @property
    def scalar(self) -> dtype:
        return self

    def is_floating(self) -> bool:
        return self.name in ("float32", "float16", "bfloat16")

    is_standard_floating = is_floating

    def is_int_signed(self) -> bool:
        return self.name in ("int8", "int16", "int32", "int64")

    def is_int_unsigned(self) -> bool:  # int1 too, as Triton counts it
        return self.name in ("int1", "uint8", "uint16", "uint32", "uint64")

    def is_int(self) -> bool:
        return self.is_int_signed() or self.is_int_unsigned()

    def is_bool(self) -> bool:
        return self.name == "int1"

    def is_ptr(self) -> bool:
        return False

    def is_block(self) -> bool:
        return False

    def get_int_max_value(self) -> int:
        bits = self.int_bitwidth
        return 2 ** (bits - 1) - 1 if self.is_int_signed() else 2 ** bits - 1

    def get_int_min_value(self) -> int:
        return -(2 ** (self.int_bitwidth - 1)) if self.is_int_signed() else 0


_PREDICATES = {"is_fp16": "float16", "is_bf16": "bfloat16", "is_fp32": "float32",
               "is_int1": "int1", "is_int32": "int32", "is_int64": "int64",
               "is_uint32": "uint32", "is_uint64": "uint64", "is_int8": "int8",
               "is_int16": "int16", "is_uint8": "uint8", "is_uint16": "uint16"}
for _m, _n in _PREDICATES.items():
    setattr(dtype, _m, lambda self, _n=_n: self.name == _n)
for _m in ("is_fp8", "is_fp8e4nv", "is_fp8e4b8", "is_fp8e4b15", "is_fp8e5", "is_fp8e5b16",
           "is_fp64"):
    setattr(dtype, _m, lambda self: False)  # types that do not exist here
del _m, _n


float32 = dtype("float32", F32)
int32 = dtype("int32", I32)
int1 = dtype("int1", I1)
uint32 = dtype("uint32", U32)
int64 = dtype("int64", I64)
uint64 = dtype("uint64", U64)
float16 = dtype("float16", F16)
bfloat16 = dtype("bfloat16", BF16)
int8 = dtype("int8", I8)
uint8 = dtype("uint8", U8)
int16 = dtype("int16", I16)
uint16 = dtype("uint16", U16)
fp32 = float32
fp16 = float16
bf16 = bfloat16
_DTYPES = {"float32": float32, "fp32": float32, "int32": int32, "i32": int32, "int1": int1,
           "i1": int1, "uint32": uint32, "u32": uint32, "float16": float16, "fp16": float16,
           "bfloat16": bfloat16, "bf16": bfloat16, "int64": int64, "i64": int64,
           "uint64": uint64, "u64": uint64, "int8": int8, "i8": int8, "uint8": uint8,
           "u8": uint8, "int16": int16, "i16": int16, "uint16": uint16, "u16": uint16}
_NARROW = {(8, False): int8, (8, True): uint8, (16, False): int16, (16, True): uint16}


def dtype_of_type(t: Type):
    if t.is_ptr:
        if t.elem == "i1":  # bytes of 0 or 1: loads give int1
            return pointer_type(int1)
        return pointer_type(dtype_of_type(t.pointee))
    if t.narrow:
        return _NARROW[t.narrow, t.unsigned]
    if t.unsigned:
        return uint64 if t == I64 else uint32
    return {F32: float32, I32: int32, I64: int64, I1: int1, F16: float16, BF16: bfloat16}[t]


@dataclass(frozen=True)
class pointer_type:  # noqa: N801
    """A pointer's language type: ``ptr.type.element_ty`` (or ``ptr.dtype.element_ty``)."""

    element_ty: dtype

    @property
    def name(self) -> str:
        return f"pointer<{self.element_ty.name}>"

    def is_ptr(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"pointer<{self.element_ty!r}>"


_PTR_ELEMS = {"float32": "f32", "int32": "i32", "uint32": "u32", "int64": "i64",
              "uint64": "u64", "float16": "f16", "bfloat16": "bf16", "int8": "i8",
              "uint8": "u8", "int16": "i16", "uint16": "u16", "int1": "i1"}


def to_ir_type(d) -> Type:
    if isinstance(d, dtype):
        return d.type
    if isinstance(d, str) and d in _DTYPES:
        return _DTYPES[d].type
    if isinstance(d, pointer_type) and d.element_ty.name in _PTR_ELEMS:
        return ptr(_PTR_ELEMS[d.element_ty.name])  # an integer-to-pointer cast's target
    raise CompileError(f"{d!r} is not a supported dtype (tl.float32, tl.float16, "
                       "tl.bfloat16, tl.int8, tl.uint8, tl.int16, tl.uint16, tl.int32, "
                       "tl.uint32, tl.int64, tl.uint64, tl.int1, tl.pointer_type(...))")
