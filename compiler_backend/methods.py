"""Tensor methods: ``x.T``, ``x.reshape(...)``, ``x.sum(axis)`` ... as in Triton, where many
``tl.*`` functions are also members of ``tl.tensor`` taking the tensor as first argument."""

from __future__ import annotations

from . import language, stdlib
from .tiles import Tile

METHOD_NAMES = frozenset({
    # Triton 3.5's members of tl.tensor (its @_tensor_member_fn functions and the methods of
    # class tensor), plus broadcast and topk
    "trans", "permute", "reshape", "view", "ravel", "expand_dims", "broadcast_to", "split",
    "flip", "sum", "max", "min", "argmax", "argmin", "reduce", "associative_scan", "cumsum",
    "cumprod", "sort", "histogram", "gather", "abs", "exp", "exp2", "log", "log2", "sqrt",
    "rsqrt", "sin", "cos", "sigmoid", "xor_sum", "broadcast", "reduce_or", "softmax", "topk",
    "cast", "cdiv", "ceil", "floor", "erf", "sqrt_rn", "item", "logical_and", "logical_or",
    "store", "atomic_add", "atomic_and", "atomic_cas", "atomic_max", "atomic_min", "atomic_or",
    "atomic_xchg", "atomic_xor",
})


class BoundMethod:
    """``x.name``: calling it calls ``tl.name(x, ...)`` (a builtin, so ``_ctx`` is passed)."""

    _simtgpu_builtin = True

    def __init__(self, fn, tile: Tile):
        self.fn = fn
        self.tile = tile
        self.__name__ = fn.__name__

    def __call__(self, *args, _ctx=None, **kwargs):
        return self.fn(self.tile, *args, _ctx=_ctx, **kwargs)


def tensor_attribute(t: Tile, name: str):
    """The value of attribute ``name`` of a tensor (a bound method, or ``.T``), or None."""
    if name == "T":
        return language.trans(t, _ctx=t.ctx)
    if name not in METHOD_NAMES:
        return None
    # item, logical_and and logical_or are members only, as in Triton (not tl.* names)
    fn = getattr(language, name, None) or getattr(stdlib, name, None)
    return BoundMethod(fn, t) if fn is not None else None
