"""The Verilator model of a configuration with its command queue programmed, for the tests
that drive the GPU through the queue themselves (tests/rtl/core, tests/rtl/gpu)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from simtgpu.arch.command_queue import Mmio
from simtgpu.driver_model.backend_rtl import train
from simtgpu.rtlsim.verilator_runner import RtlSim

QUEUE, FENCE, PARAMS = 0x1000, 0x1800, 0x1900
ENTRIES = 4


@contextmanager
def queued_sim(config: str) -> Iterator[RtlSim]:
    """The driver's build of the model (same trainer, so the build is shared), with a
    4-record ring at QUEUE and the fence at FENCE."""
    with RtlSim(config, trainer=train) as s:
        s.mmio_write(Mmio.QUEUE_BASE, QUEUE)
        s.mmio_write(Mmio.QUEUE_ENTRIES, ENTRIES)
        s.mmio_write(Mmio.FENCE_ADDR, FENCE)
        yield s
