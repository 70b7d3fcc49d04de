"""Command records and MMIO map: encodings and round trips."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from simtgpu.arch import command_queue as cq
from simtgpu.arch.command_queue import Command, CommandOp, Mmio

u32 = st.integers(0, 0xFFFF_FFFF)
dims = st.tuples(u32, u32, u32)


@given(st.sampled_from(list(CommandOp)), u32, u32, dims, dims, u32, u32, u32, u32)
def test_pack_unpack_round_trip(op, fence, pc, grid, block, pa, ps, sh, regs):
    cmd = Command(op, fence, pc, grid, block, pa, ps, sh, regs)
    raw = cq.pack(cmd)
    assert len(raw) == cq.RECORD_BYTES == 64
    assert cq.unpack(raw) == cmd


def test_record_word_layout_by_hand():
    cmd = Command(CommandOp.LAUNCH, 7, 0x40, (3, 2, 1), (32, 4, 1), 0x2000, 12, 1024, 20)
    words = struct.unpack("<16I", cq.pack(cmd))
    assert words == (1, 7, 0x40, 3, 2, 1, 32, 4, 1, 0x2000, 12, 1024, 20, 0, 0, 0)


def test_unpack_refuses_bad_records():
    good = bytearray(cq.pack(Command(CommandOp.FENCE, 1)))
    bad_op = bytearray(good)
    bad_op[0] = 9
    with pytest.raises(cq.RecordError, match="opcode 9"):
        cq.unpack(bytes(bad_op))
    reserved = bytearray(good)
    reserved[60] = 1
    with pytest.raises(cq.RecordError, match="reserved"):
        cq.unpack(bytes(reserved))
    with pytest.raises(cq.RecordError, match="64 bytes"):
        cq.unpack(bytes(good[:60]))


def test_pack_refuses_words_over_32_bits():
    with pytest.raises(ValueError, match="word 1"):
        cq.pack(Command(CommandOp.NOP, 1 << 32))


def test_launch_problem():
    ok = Command(CommandOp.LAUNCH, 1, 0, (1, 1, 1), (8, 1, 1), 0x1000, 8)
    assert cq.launch_problem(ok) is None
    assert "zero" in cq.launch_problem(Command(CommandOp.LAUNCH, 1, 0, (0, 1, 1), (8, 1, 1)))
    assert "aligned" in cq.launch_problem(Command(CommandOp.LAUNCH, 1, 2, (1, 1, 1), (8, 1, 1)))
    assert cq.launch_problem(Command(CommandOp.NOP, 1)) is None


def test_mmio_map_fixed_offsets():
    # The RTL host interface decodes these numbers; they must never move.
    expected = {
        "ID": 0x00, "VERSION": 0x04, "QUEUE_BASE": 0x08, "QUEUE_ENTRIES": 0x0C,
        "DOORBELL": 0x10, "HEAD": 0x14, "FENCE_ADDR": 0x18, "STATUS": 0x1C,
        "FAULT_CAUSE": 0x20, "FAULT_PC": 0x24, "FAULT_CORE": 0x28, "FAULT_WARP": 0x2C,
        "FAULT_LANES": 0x30, "FAULT_BLOCK_X": 0x34, "FAULT_BLOCK_Y": 0x38,
        "FAULT_BLOCK_Z": 0x3C, "CONTROL": 0x40, "IMEM_ADDR": 0x48, "IMEM_DATA": 0x4C,
        "CYCLES_LO": 0x80, "CYCLES_HI": 0x84, "INSTRUCTIONS": 0x88,
        "THREAD_INSTRUCTIONS": 0x8C,
    }
    for name, off in expected.items():
        assert Mmio[name] == off
    offsets = [int(m) for m in Mmio]
    assert len(set(offsets)) == len(offsets)
    assert all(o % 4 == 0 and o < cq.MMIO_SPAN for o in offsets)
    assert cq.DEVICE_ID.to_bytes(4, "big") == b"SGPU"


def test_ring_indices_wrap():
    assert cq.next_index(7, 8) == 0
    assert cq.record_address(0x2000, 3) == 0x2000 + 3 * 64
