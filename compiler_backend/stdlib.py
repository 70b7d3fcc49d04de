"""Small ``triton.language`` names that are compositions of other builtins: ``tl.add``,
``tl.cast``, ``tl.max_constancy``, ``tl.swizzle2d``,
``tl.constexpr_function``, and the tensor members ``x.item()``, ``x.logical_and(y)`` and
``x.logical_or(y)``."""

from __future__ import annotations

import operator

from . import dtypes
from .errors import CompileError
from .ir import I1
from .lang_base import _minmax, builtin
from .tiles import Lowering, Tile


@builtin
def add(ctx: Lowering, x, y, sanitize_overflow: bool = True) -> Tile:
    """x + y (integers wrap, as they do on the GPU)."""
    return ctx.binary("+", x, y)


@builtin
def cast(ctx: Lowering, input, dtype, fp_downcast_rounding=None, bitcast: bool = False
         ) -> Tile:
    """``input.to(dtype)``."""
    return ctx.to_tile(input).to(dtype, bitcast=bitcast)


@builtin
def max_constancy(ctx: Lowering, input, values):
    """A hint (runs of equal values); accepted, and not needed by this code generator."""
    return input


@builtin
def item(ctx: Lowering, input) -> Tile:
    """The one element of a one-element tensor, as a scalar (``x.item()``)."""
    from .shapes import reshape

    t = ctx.to_tile(input)
    if t.numel != 1:
        raise CompileError(f"item() needs a tensor of one element, not one of shape "
                           f"{list(t.shape)}")
    return reshape(ctx, t, ())


def _logical(ctx: Lowering, op: str, name: str, x, y) -> Tile:
    a, b = ctx.to_tile(x), ctx.to_tile(y)
    if a.type != I1 or b.type != I1:
        raise CompileError(f"{name} needs two booleans (int1, e.g. comparisons), as in "
                           f"Triton; compare with 0 first (x != 0)")
    return ctx.binary(op, a, b)


@builtin
def logical_and(ctx: Lowering, input, other) -> Tile:
    """``x.logical_and(y)`` of two boolean tensors."""
    return _logical(ctx, "&", "logical_and", input, other)


@builtin
def logical_or(ctx: Lowering, input, other) -> Tile:
    """``x.logical_or(y)`` of two boolean tensors."""
    return _logical(ctx, "|", "logical_or", input, other)


_PY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
       "%": operator.mod}


def _arith(ctx: Lowering, op: str, a, b):
    """``a op b``: in Python when both are compile-time values, else on tensors."""
    if isinstance(a, Tile) or isinstance(b, Tile):
        return ctx.binary(op, a, b)
    return _PY[op](a, b)


@builtin
def swizzle2d(ctx: Lowering, i, j, size_i, size_j, size_g) -> tuple:
    """Triton's grouped ordering of a (size_i, size_j) grid: row-major within groups of
    ``size_g`` rows, so neighbouring programs share operand tiles."""
    ij = _arith(ctx, "+", _arith(ctx, "*", i, size_j), j)
    size_gj = _arith(ctx, "*", size_g, size_j)
    off_i = _arith(ctx, "*", _arith(ctx, "//", ij, size_gj), size_g)
    rows = _arith(ctx, "-", size_i, off_i)
    g = _minmax(ctx, "min", rows, size_g) if isinstance(rows, Tile) else min(rows, size_g)
    ij = _arith(ctx, "%", ij, size_gj)
    return _arith(ctx, "+", off_i, _arith(ctx, "%", ij, g)), _arith(ctx, "//", ij, g)


def constexpr_function(fn):
    """Mark a Python function as callable on compile-time values inside kernels."""
    fn._simtgpu_host = True
    return fn


@constexpr_function
def _log2(i) -> int:
    """``triton.language.standard._log2``: floor(log2(i)) of a compile-time integer (sort
    and topk kernels copied from Triton's standard library import it)."""
    n = getattr(i, "value", i)
    return max(int(n).bit_length() - 1, 0)


@constexpr_function
def get_int_dtype(bitwidth: int, signed: bool) -> dtypes.dtype:
    """``triton.language.core.get_int_dtype``: the integer type of a width (the bitonic
    sorts of Triton's standard library and Inductor's helpers, copied into kernels, bitcast
    through ``get_int_dtype(bitwidth=x.dtype.primitive_bitwidth, signed=True)``)."""
    width = int(getattr(bitwidth, "value", bitwidth))
    types = {1: (dtypes.int1, dtypes.int1), 32: (dtypes.int32, dtypes.uint32),
             64: (dtypes.int64, dtypes.uint64)}
    if width not in types:
        raise CompileError(f"no {width}-bit integer type here (integers are 1, 32 or 64 "
                           "bits wide)")
    return types[width][0 if signed else 1]


@constexpr_function
def _is_power_of_two(i) -> bool:
    """``triton.language.standard._is_power_of_two`` of a compile-time integer."""
    n = int(getattr(i, "value", i))
    return n > 0 and n & (n - 1) == 0
