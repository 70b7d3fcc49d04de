"""Compile-time values: the ``tl.constexpr`` annotation and the checks that turn a kernel's
arguments into compile-time integers and tile shapes (shared by the language modules)."""

from __future__ import annotations

from .errors import CompileError
from .tiles import Tile


class constexpr:  # noqa: N801
    """Annotation for compile-time parameters (``BLOCK: tl.constexpr``)."""

    def __init__(self, value=None):
        self.value = value

    def __repr__(self) -> str:
        return f"constexpr({self.value!r})"


def _int(x, what: str) -> int:
    if isinstance(x, constexpr):
        x = x.value
    if isinstance(x, bool) or not isinstance(x, int):
        raise CompileError(f"{what} must be a compile-time integer (tl.constexpr), "
                           f"not {type(x).__name__ if not isinstance(x, Tile) else 'a tensor'}")
    return x


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, int | constexpr):
        shape = (shape,)
    if not isinstance(shape, tuple | list):
        raise CompileError("a shape must be a tuple of compile-time integers")
    out = tuple(_int(s, "a shape dimension") for s in shape)
    for s in out:
        if s <= 0 or s & (s - 1):
            raise CompileError(f"tile dimensions must be powers of two, not {s}")
    return out
