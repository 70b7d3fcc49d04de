"""Errors raised by the driver model.

Misuse of the host API (a bad argument, an out-of-range launch, a double free) raises
:class:`DriverError` before anything on the device changes.
"""

from __future__ import annotations

from simtgpu.errors import SimtgpuError


class DriverError(SimtgpuError):
    """A host-API misuse: the message names the call and what was wrong; nothing changed."""

    def render(self) -> str:
        return f"driver error: {self}"
