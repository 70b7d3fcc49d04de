"""The interface every execution backend implements (ISS, RTL under Verilator, CUDA).

A backend looks to the driver like a device on a bus: a 32-bit MMIO register file
(:class:`~simtgpu.arch.command_queue.Mmio`), device memory it can read and write,
and instruction memory loaded through the IMEM registers. The driver never calls a
simulator directly; it writes command records into the ring in device memory and rings
the doorbell, exactly as it would program the RTL host interface.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from simtgpu.arch.command_queue import Mmio
from simtgpu.arch.config import GpuConfig


class Backend(ABC):
    """One simulated or real device.

    Subclasses set ``name`` and ``config`` and implement the abstract methods; the default
    :meth:`load_code` programs instruction memory word by word through the IMEM registers.
    """

    name: str = "?"
    config: GpuConfig
    command_queue: bool = True
    """False for a backend without the MMIO host interface (a real GPU through CUDA): the
    Device then neither probes registers nor sets up the ring, uses only ``read``/``write``
    and ``run_until_idle`` for memory and waiting, and refuses ISA launches. The backend
    brings its own launch methods. Its ``mmio_*`` may raise."""
    per_core_counters: bool = False
    """True when the per-core counter windows (``arch.command_queue.CoreCounter``) hold what
    each core did: the Device then reads them around a launch (``LaunchResult.per_core``).
    A backend without a model of which core runs which block leaves it False."""

    @abstractmethod
    def mmio_read(self, offset: int) -> int:
        """Read the 32-bit register at byte ``offset``."""

    @abstractmethod
    def mmio_write(self, offset: int, value: int) -> None:
        """Write the 32-bit register at byte ``offset``."""

    @abstractmethod
    def read(self, addr: int, n: int) -> bytes:
        """Read ``n`` bytes of device memory at global address ``addr``."""

    @abstractmethod
    def write(self, addr: int, data: bytes) -> None:
        """Write device memory at global address ``addr``."""

    @abstractmethod
    def run_until_idle(self) -> None:
        """Let the device work until STATUS.BUSY is clear (queue drained or faulted).
        A hardware backend that runs on its own may simply wait."""

    def load_code(self, base: int, code: bytes) -> None:
        """Copy ``code`` into instruction memory at byte address ``base``."""
        if base % 4 or len(code) % 4:
            raise ValueError("instruction memory is loaded in whole, aligned words")
        self.mmio_write(Mmio.IMEM_ADDR, base)
        for i in range(0, len(code), 4):
            self.mmio_write(Mmio.IMEM_DATA, int.from_bytes(code[i:i + 4], "little"))

    def set_trace(self, sink: Any) -> None:  # noqa: B027 - optional hook, no-op by default
        """Ask the backend to emit its retire trace for the following launches into ``sink``
        (backend-specific; None stops tracing). Backends without a trace ignore it."""

    def command_details(self, fence: int) -> dict[str, Any]:
        """Backend-specific figures about the completed command with this fence value (the ISS
        returns its LaunchStats fields). Empty where the backend has none."""
        return {}

    def fault_detail(self) -> str:
        """More words about the current fault than the FAULT_* registers hold (for example the
        offending address), or empty."""
        return ""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release simulator resources."""
