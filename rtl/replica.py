"""Register replicas: copies of a flip-flop for a fan-out spread over the device.

A register read by logic in several places (the L2's request buffer's read pointer, read by
both banks) is one net from one flip-flop to all of them; on the FPGA the placer puts the
flip-flop somewhere between its readers and the net's longest branch is several
nanoseconds. Copies of the register, each read by one group of the readers, let each copy
sit by its own group. Synthesis merges flip-flops with the same inputs (yosys ``opt_merge``,
even where the signal is marked ``keep``), so each copy's signal carries :data:`REPLICA_ATTR`
and the flow (rtlsim/synth.py) marks the flip-flop driving such a signal ``keep`` before it
optimises. Simulation sees copies that always hold the same value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the flow reads REPLICA_ATTR without loading Amaranth
    from amaranth.hdl import Module, Signal, Value

__all__ = ["REPLICA_ATTR", "replicas"]

REPLICA_ATTR = "simtgpu_replica"
"""The attribute that marks a signal as a register copy the synthesis flow must keep."""


def replicas(m: Module, next_value: Value, copies: int, name: str,
             init: int = 0) -> list[Signal]:
    """``copies`` registers (``name``0, ``name``1, ...), each loaded with ``next_value`` every
    cycle: the same register, kept as separate flip-flops in synthesis."""
    from amaranth.hdl import Signal, Value

    if copies < 1:
        raise ValueError(f"replicas: copies must be at least 1, not {copies}")
    value = Value.cast(next_value)
    regs = [Signal(value.shape(), name=f"{name}{i}", init=init, attrs={REPLICA_ATTR: 1})
            for i in range(copies)]
    m.d.sync += [r.eq(value) for r in regs]
    return regs
