"""The language's element types (``tl.float32``, ``tl.int32`` ...) and their IR types.

A module of its own so that both the tensor layer (:mod:`.tiles`) and the language
(:mod:`.language`) can use it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import CompileError
from .ir import F32, I1, I32, Type


@dataclass(frozen=True)
class dtype:  # noqa: N801 - the Triton spelling
    name: str
    type: Type

    def __repr__(self) -> str:
        return f"tl.{self.name}"


float32 = dtype("float32", F32)
int32 = dtype("int32", I32)
int1 = dtype("int1", I1)
uint32 = dtype("uint32", I32)
fp32 = float32
_DTYPES = {"float32": float32, "fp32": float32, "int32": int32, "i32": int32, "int1": int1,
           "i1": int1, "uint32": uint32}


def dtype_of_type(t: Type):
    if t.is_ptr:
        return pointer_type(_DTYPES[t.elem if t.elem != "f32" else "float32"])
    return {F32: float32, I32: int32, I1: int1}[t]


@dataclass(frozen=True)
class pointer_type:  # noqa: N801
    element_ty: dtype


def to_ir_type(d) -> Type:
    if isinstance(d, dtype):
        return d.type
    if isinstance(d, str) and d in _DTYPES:
        return _DTYPES[d].type
    raise CompileError(f"{d!r} is not a supported dtype (tl.float32, tl.int32, tl.int1)")
