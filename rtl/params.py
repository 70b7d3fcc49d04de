"""Checks of the construction parameters of the units: one wording of each rule, raised as
``ValueError`` before anything is built."""

from __future__ import annotations

from amaranth import Elaboratable

MAX_LATENCY = 8
"""The most enabled cycles a pipelined unit (:class:`~.fpu.Fpu`, :class:`~.multiplier.
Multiplier`) may take from operands to result."""


def check_latency(unit: Elaboratable, latency: object) -> int:
    """``latency`` if it is an integer from 1 to :data:`MAX_LATENCY`, else ``ValueError``
    (``unit`` is the component being built: once rejected it is never elaborated, so its
    unused-elaboratable warning is silenced)."""
    if not isinstance(latency, int) or isinstance(latency, bool) or \
            not 1 <= latency <= MAX_LATENCY:
        unit._MustUse__silence = True
        raise ValueError(f"latency must be an integer from 1 to {MAX_LATENCY}, not {latency!r}")
    return latency


def require_positive(**sizes: int) -> None:
    """``ValueError`` naming the first of ``sizes`` (warps, lanes, depth, ...) below 1."""
    for name, n in sizes.items():
        if n < 1:
            raise ValueError(f"{name} must be at least 1, not {n}")
