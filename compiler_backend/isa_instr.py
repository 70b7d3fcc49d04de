"""The machine-instruction records of the ISA code generator (before register allocation),
in a module of their own so that the per-type lowering modules (half_codegen) can build them
without importing the generator."""

from __future__ import annotations

from dataclasses import dataclass, field

from .ir import Value

__all__ = ["MI", "Label", "Mem", "Sym"]


@dataclass
class MI:
    """One machine instruction on virtual registers (``Value``s) before allocation."""

    op: str
    args: list = field(default_factory=list)
    defs: list[Value] = field(default_factory=list)
    guard: Value | None = None
    gneg: bool = False
    partial: bool = False  # guarded def: lanes outside the guard keep the old value
    moves: list[tuple[Value, Value]] | None = None  # parallel move (op == "pmove")
    group: list[MI] | None = None  # loop pre-header: rematerialised constants and params
    clobbers: frozenset[int] = frozenset()  # fixed registers it may overwrite (mma groups)


@dataclass(frozen=True)
class Mem:
    base: Value | Sym  # a register, or r0
    offset: int


@dataclass(frozen=True)
class Label:
    name: str


@dataclass(frozen=True)
class Sym:
    text: str
