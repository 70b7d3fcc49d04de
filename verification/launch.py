"""A kernel launch as verification sees it, and its golden run on the ISS.

:class:`KernelLaunch` holds everything both models need: the code, the entry, grid and block,
the parameter words and the initial device-memory buffers at fixed addresses. The same object
is run on the ISS (:func:`run_iss`, with the retire trace) and on the RTL harness
(:mod:`simtgpu.verification.harness`), and the two results are compared by
:mod:`simtgpu.verification.compare`.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass, field

import numpy as np
from simtgpu.assembler import assemble
from simtgpu.isa import GLOBAL_NULL_GUARD
from simtgpu.sim import GlobalMemory, Iss, KernelFault
from simtgpu.sim.trace import read_trace

__all__ = ["PARAM_ADDR", "DATA_ADDR", "IssRun", "KernelLaunch", "launch_from_asm", "run_iss"]

PARAM_ADDR = GLOBAL_NULL_GUARD  # the parameter block: first usable global address
DATA_ADDR = PARAM_ADDR + 0x1000  # buffers are laid out from here, each 256-byte aligned


@dataclass
class KernelLaunch:
    """One launch: code, shape, parameters and initial buffers (name -> (address, words))."""

    name: str
    code: bytes
    entry: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    params: list[int]
    buffers: dict[str, tuple[int, np.ndarray]] = field(default_factory=dict)
    source: str = ""  # assembly text, for failure reports
    seed: int | None = None  # of a random program
    note: str = ""

    @property
    def param_bytes(self) -> bytes:
        return b"".join(struct.pack("<I", p & 0xFFFF_FFFF) for p in self.params)

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def num_blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def memory_end(self) -> int:
        """One past the highest byte the launch's image uses."""
        end = PARAM_ADDR + len(self.param_bytes)
        for addr, words in self.buffers.values():
            end = max(end, addr + 4 * len(words))
        return end


def layout_buffers(arrays: dict[str, np.ndarray]) -> dict[str, tuple[int, np.ndarray]]:
    """Place ``arrays`` (uint32 words) one after another from :data:`DATA_ADDR`."""
    out, addr = {}, DATA_ADDR
    for name, arr in arrays.items():
        words = np.ascontiguousarray(arr, dtype=np.uint32).ravel()
        out[name] = (addr, words)
        addr += -(-max(4 * len(words), 4) // 256) * 256
    return out


def launch_from_asm(source: str, kernel: str, grid, block, params: list,
                    arrays: dict[str, np.ndarray] | None = None, name: str = "") -> KernelLaunch:
    """Assemble ``source`` and build a launch; a ``params`` entry that is a string names a
    buffer of ``arrays`` and becomes its address."""
    obj = assemble(source, name or kernel)
    k = obj.kernel(kernel)
    buffers = layout_buffers(arrays or {})
    words = [buffers[p][0] if isinstance(p, str) else int(p) for p in params]
    g = tuple(grid) + (1,) * (3 - len(tuple(grid)))
    b = tuple(block) + (1,) * (3 - len(tuple(block)))
    return KernelLaunch(name or kernel, obj.code, k.entry, g, b, k.shared_bytes, words, buffers,
                        source=source)


@dataclass
class IssRun:
    """The golden result: every buffer after the launch, the trace, or the fault."""

    buffers: dict[str, np.ndarray]
    trace: list[dict]
    fault: object | None  # sim.errors.FaultRecord
    stats: object | None


def run_iss(launch: KernelLaunch, lanes: int, memory_bytes: int, stack_depth: int = 16,
            num_cores: int = 1, trace: bool = True,
            instruction_budget: int = 2_000_000) -> IssRun:
    """Run ``launch`` on the ISS with a device memory of ``memory_bytes``."""
    gm = GlobalMemory(memory_bytes)
    gm.write(PARAM_ADDR, launch.param_bytes)
    for addr, words in launch.buffers.values():
        gm.write(addr, words.astype("<u4").tobytes())
    stream = io.StringIO() if trace else None
    iss = Iss(gm, warp_size=lanes, stack_depth=stack_depth, num_cores=num_cores,
              instruction_budget=instruction_budget)
    fault = stats = None
    try:
        stats = iss.launch(launch.code, launch.entry, launch.grid, launch.block, PARAM_ADDR,
                           len(launch.param_bytes), launch.shared_bytes, trace=stream)
    except KernelFault as e:
        fault = e.record
    lines = read_trace(io.StringIO(stream.getvalue())) if stream is not None else []
    bufs = {name: np.frombuffer(gm.read(addr, 4 * len(words)), dtype="<u4").copy()
            for name, (addr, words) in launch.buffers.items()}
    return IssRun(bufs, lines, fault, stats)
