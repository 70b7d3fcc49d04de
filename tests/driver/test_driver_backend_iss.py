"""The ISS backend's register file and command processor, programmed by hand as the RTL
host interface would be (no Device in the way)."""

from __future__ import annotations

import dataclasses
import struct

import numpy as np
import pytest
from driver_kernels import COUNT
from simtgpu.arch import command_queue as cq
from simtgpu.arch.command_queue import Command, CommandOp, Control, Mmio, Status
from simtgpu.arch.config import CONFIGS
from simtgpu.assembler import assemble
from simtgpu.driver_model.backend_iss import IssBackend
from simtgpu.isa import FaultCause

QBASE, FENCE, PARAMS, CTR = 0x2000, 0x3000, 0x3100, 0x3200


CODE = assemble(COUNT).code


def _setup(entries: int = 4, backend: type[IssBackend] = IssBackend) -> IssBackend:
    b = backend(CONFIGS["tiny"])
    b.mmio_write(Mmio.QUEUE_BASE, QBASE)
    b.mmio_write(Mmio.QUEUE_ENTRIES, entries)
    b.mmio_write(Mmio.FENCE_ADDR, FENCE)
    b.load_code(0, CODE)
    return b


def _push(b: IssBackend, cmd: Command) -> None:
    tail = b.mmio_read(Mmio.DOORBELL)
    b.write(cq.record_address(QBASE, tail), cq.pack(cmd))
    b.mmio_write(Mmio.DOORBELL, cq.next_index(tail, b.mmio_read(Mmio.QUEUE_ENTRIES)))


def _launch(fence: int, threads: int = 4) -> Command:
    return Command(CommandOp.LAUNCH, fence, 0, (1, 1, 1), (threads, 1, 1), PARAMS, 8, 0, 4, 0,
                   len(CODE))


def _word(b: IssBackend, addr: int) -> int:
    return struct.unpack("<I", b.read(addr, 4))[0]


def test_identity_and_capabilities():
    b = IssBackend(CONFIGS["small"])
    assert b.mmio_read(Mmio.ID) == 0x53475055
    assert b.mmio_read(Mmio.VERSION) == 2 << 16 | 2  # 2.2: 2.1 (per-core counters) + memory path
    cfg = CONFIGS["small"]
    assert [b.mmio_read(r) for r in (Mmio.CAP_CORES, Mmio.CAP_WARPS, Mmio.CAP_LANES,
                                     Mmio.CAP_SHARED_BYTES, Mmio.CAP_MEM_BYTES,
                                     Mmio.CAP_IMEM_BYTES, Mmio.CAP_STACK_DEPTH)] == [
        cfg.cores, cfg.warps_per_core, cfg.lanes, cfg.shared_bytes_per_core,
        cfg.memory_bytes, cfg.imem_bytes, cfg.stack_depth]
    assert b.mmio_read(0xFC) == 0  # unnamed offsets read 0
    b.mmio_write(Mmio.ID, 5)  # read-only
    assert b.mmio_read(Mmio.ID) == 0x53475055


def test_imem_port_auto_increments():
    b = IssBackend(CONFIGS["tiny"])
    words = [0x11111111, 0x22222222, 0xDEADBEEF]
    b.mmio_write(Mmio.IMEM_ADDR, 0x40)
    for w in words:
        b.mmio_write(Mmio.IMEM_DATA, w)
    assert b.mmio_read(Mmio.IMEM_ADDR) == 0x4C
    b.mmio_write(Mmio.IMEM_ADDR, 0x40)
    assert [b.mmio_read(Mmio.IMEM_DATA) for _ in words] == words


def test_commands_complete_in_order_with_fences():
    b = _setup()
    b.write(PARAMS, struct.pack("<Ii", CTR, 3))
    _push(b, _launch(7))
    _push(b, Command(CommandOp.NOP, 8))
    _push(b, Command(CommandOp.FENCE, 9))
    assert b.mmio_read(Mmio.STATUS) == Status.BUSY
    b.run_until_idle()
    assert b.mmio_read(Mmio.STATUS) == 0
    assert _word(b, FENCE) == 9 and _word(b, CTR) == 12
    assert b.mmio_read(Mmio.HEAD) == 3
    assert b.mmio_read(Mmio.COMMANDS) == 3
    assert b.mmio_read(Mmio.INSTRUCTIONS) == 4  # one warp: 2 ldparam, atom, exit
    assert b.mmio_read(Mmio.THREAD_INSTRUCTIONS) == 16
    assert b.command_details(7)["per_opcode"]["atom.add"] == 1
    b.mmio_write(Mmio.CONTROL, Control.RESET_COUNTERS)
    assert all(b.mmio_read(r) == 0 for r in cq.PERF_COUNTERS)


def test_bad_record_stops_queue_until_cleared():
    b = _setup()
    b.write(PARAMS, struct.pack("<Ii", CTR, 1))
    _push(b, _launch(1))
    raw = bytearray(cq.pack(Command(CommandOp.NOP, 2)))
    raw[0] = 9  # unknown opcode
    tail = b.mmio_read(Mmio.DOORBELL)
    b.write(cq.record_address(QBASE, tail), bytes(raw))
    b.mmio_write(Mmio.DOORBELL, tail + 1)
    _push(b, _launch(3))
    b.run_until_idle()
    st = b.mmio_read(Mmio.STATUS)
    assert st == Status.FAULT | Status.BAD_COMMAND
    assert b.mmio_read(Mmio.HEAD) == 1 and _word(b, FENCE) == 1
    assert b.mmio_read(Mmio.FAULT_PC) == cq.record_address(QBASE, 1)
    assert "opcode 9" in b.fault_detail()
    b.run_until_idle()  # stays stopped
    assert _word(b, CTR) == 4
    b.mmio_write(Mmio.CONTROL, Control.CLEAR_FAULT)
    assert b.mmio_read(Mmio.STATUS) == 0
    assert b.mmio_read(Mmio.HEAD) == b.mmio_read(Mmio.DOORBELL) == 3  # rest discarded
    assert b.mmio_read(Mmio.FAULT_PC) == 0


@pytest.mark.parametrize("change, why", [
    (dict(block=(9, 1, 1)), "9 threads"),  # tiny allows 8 threads per block
    (dict(param_size=0x10000), "param size 65536 exceeds 65532"),  # the field is 16 bits
    (dict(entry_pc=len(CODE)), "outside the code range"),
    (dict(code_end=len(CODE) + 4), f"code end {len(CODE) + 4:#x} is past the loaded code"),
])
def test_device_refuses_launch_over_its_capabilities(change, why):
    b = _setup()
    b.write(PARAMS, struct.pack("<Ii", CTR, 1))
    _push(b, dataclasses.replace(_launch(1), **change))
    b.run_until_idle()
    assert b.mmio_read(Mmio.STATUS) == Status.FAULT | Status.BAD_COMMAND
    assert why in b.fault_detail()
    assert _word(b, CTR) == 0


def test_kernel_fault_registers():
    b = _setup()
    b.write(PARAMS, struct.pack("<Ii", 0x0FFC, 1))  # counter in the null guard
    _push(b, Command(CommandOp.LAUNCH, 1, 0, (1, 2, 1), (3, 1, 1), PARAMS, 8, 0, 4, 0,
                     len(CODE)))
    b.run_until_idle()
    assert b.mmio_read(Mmio.STATUS) == Status.FAULT
    assert b.mmio_read(Mmio.FAULT_CAUSE) == FaultCause.OUT_OF_RANGE
    assert b.mmio_read(Mmio.FAULT_PC) == 8  # the atom.add, third instruction
    assert b.mmio_read(Mmio.FAULT_LANES) == 0b111
    assert (b.mmio_read(Mmio.FAULT_BLOCK_X), b.mmio_read(Mmio.FAULT_BLOCK_Y)) == (0, 0)
    word = b.mmio_read(Mmio.FAULT_INSTR)
    assert word == int(np.frombuffer(CODE, "<u4")[2])
    assert _word(b, FENCE) == 0


def test_queue_wraps_many_times():
    b = _setup(entries=2)
    b.write(PARAMS, struct.pack("<Ii", CTR, 1))
    for f in range(1, 8):
        _push(b, _launch(f))
        b.run_until_idle()
        assert _word(b, FENCE) == f
        assert b.mmio_read(Mmio.HEAD) == f % 2
    assert _word(b, CTR) == 7 * 4


def test_cuda_backend_refuses_isa_launches_through_the_device_hook():
    # The cuda backend runs on the ISS backend's queue; its hook refuses ISA launches (a GPU
    # is not needed to check the hook: an ISS backend with the cuda hook's rule).
    from simtgpu.driver_model.backend_cuda import CudaBackend

    class IsaRefusing(IssBackend):
        _launch_problem = CudaBackend._launch_problem

    b = _setup(backend=IsaRefusing)
    _push(b, Command(CommandOp.NOP, 7))
    b.run_until_idle()
    assert _word(b, FENCE) == 7  # NOP and FENCE still complete
    _push(b, _launch(8))
    b.run_until_idle()
    assert b.mmio_read(Mmio.STATUS) & Status.BAD_COMMAND
    assert _word(b, FENCE) == 7
