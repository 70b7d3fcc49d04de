"""Module reuse in exported Verilog: the hook a design calls where it builds many identical units.

Amaranth 0.5 elaborates every instance of a unit on its own and writes each as its own Verilog
module, so ``full``'s four cores of 32 lanes mean 128 copies of every lane unit. A Verilog
export that wants each distinct unit once (:mod:`simtgpu.rtlsim.module_reuse`) activates a
reuser; then :func:`shared` returns a stand-in that instantiates one module per distinct unit,
and :func:`param` turns an elaboration-time constant that differs between otherwise identical
instances (a core's index) into an input port of that module, driven with the constant by each
instance. With no reuser active (the Amaranth simulator, any other use) both return their
argument unchanged: the flat design is exactly the design as written.
"""

from __future__ import annotations

from collections.abc import Hashable
from contextvars import ContextVar
from typing import Protocol

from amaranth.hdl import Elaboratable, Value
from amaranth.lib import wiring

__all__ = ["Reuser", "active", "param", "shared"]


class Reuser(Protocol):
    """What an exporter implements (:class:`simtgpu.rtlsim.module_reuse.ModuleReuse`)."""

    def shared(self, unit: wiring.Component, key: Hashable,
               params: dict[str, tuple[int, int]]) -> Elaboratable: ...

    def param(self, unit: wiring.Component, name: str, value: int) -> Value | int: ...


active: ContextVar[Reuser | None] = ContextVar("simtgpu_reuse", default=None)
"""The reuser of the export running in this context, if any."""


def shared(unit: wiring.Component, key: Hashable,
           params: dict[str, tuple[int, int]] | None = None) -> Elaboratable:
    """``unit``, or a stand-in instantiating the one module of every unit of its class with the
    same ``key``. ``key`` must identify the design completely (the constructor's arguments);
    ``params`` (name: (value, width)) are the per-instance constants the unit reads with
    :func:`param`."""
    reuser = active.get()
    return unit if reuser is None else reuser.shared(unit, key, params or {})


def param(unit: wiring.Component, name: str, value: int) -> Value | int:
    """``value``, or the input port that carries it while ``unit`` is written as a shared
    module declaring ``name`` in its ``params``."""
    reuser = active.get()
    return value if reuser is None else reuser.param(unit, name, value)
