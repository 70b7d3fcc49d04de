"""Command records and MMIO map: the field table, encodings, round trips, launch rules and
the generated table in docs/command-queue.md."""

from __future__ import annotations

import dataclasses
import re
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from simtgpu.arch import command_queue as cq
from simtgpu.arch.command_queue import Command, CommandOp, Mmio
from simtgpu.arch.config import get_config
from simtgpu.cli.main import main

u32 = st.integers(0, 0xFFFF_FFFF)
dims = st.tuples(u32, u32, u32)


@given(st.sampled_from(list(CommandOp)), u32, u32, dims, dims, u32, u32, u32, u32, u32, u32)
def test_pack_unpack_round_trip(op, fence, pc, grid, block, pa, ps, sh, regs, cb, ce):
    cmd = Command(op, fence, pc, grid, block, pa, ps, sh, regs, cb, ce)
    raw = cq.pack(cmd)
    assert len(raw) == cq.RECORD_BYTES == 64
    assert cq.unpack(raw) == cmd


def test_record_word_layout_by_hand():
    cmd = Command(CommandOp.LAUNCH, 7, 0x40, (3, 2, 1), (32, 4, 1), 0x2000, 12, 1024, 20, 0x20,
                  0x80)
    words = struct.unpack("<16I", cq.pack(cmd))
    assert words == (1, 7, 0x40, 3, 2, 1, 32, 4, 1, 0x2000, 12, 1024, 20, 0x20, 0x80, 0)


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


def test_field_table_by_hand():
    """The table's word positions and widths, written out independently of it."""
    want = {"opcode": (0, 1, 32), "fence": (1, 1, 32), "entry_pc": (2, 1, 32),
            "grid": (3, 3, 16), "block": (6, 3, 16), "param_addr": (9, 1, 32),
            "param_size": (10, 1, 16), "shared_bytes": (11, 1, 32), "regs": (12, 1, 32),
            "code_base": (13, 1, 32), "code_end": (14, 1, 32), "reserved": (15, 1, 0)}
    assert {f.name: (f.word, f.count, f.width) for f in cq.RECORD_FIELDS} == want
    assert cq.MAX_GRID_DIM == 65535 and cq.MAX_PARAM_BYTES == 65532


@pytest.mark.parametrize("f", cq.RECORD_FIELDS[1:-1], ids=lambda f: f.name)
def test_each_field_lands_in_its_own_words(f):
    """Setting one field changes only that field's words, bit for bit."""
    value = (0xA5C3_0001, 0x5A3C_0002, 0x0FF0_0003)[:f.count]
    fields = {"opcode": CommandOp.NOP, "fence": 0, f.name: value if f.count > 1 else value[0]}
    cmd = Command(**fields)
    words = struct.unpack("<16I", cq.pack(cmd))
    for i, w in enumerate(words):
        assert w == (value[i - f.word] if i in f.words else 0), (f.name, i)


def test_unpack_refuses_each_reserved_word():
    for i in (15,):
        words = [int(CommandOp.NOP), 1] + [0] * 14
        words[i] = 1 << 31
        with pytest.raises(cq.RecordError, match=f"w{i} \\(reserved\\) is not zero"):
            cq.unpack(struct.pack("<16I", *words))


TINY = get_config("tiny")  # 2 warps x 4 lanes = 8 threads, 4096 shared bytes per core
CODE_END = 0x100
OK = Command(CommandOp.LAUNCH, 1, 0xFC, (65535, 1, 1), (2, 4, 1), 0x1000, 65532, 4096, 9,
             0xF8, CODE_END)


@pytest.mark.parametrize("change, why", [
    (dict(grid=(1, 0, 1)), r"grid \(1, 0, 1\) is zero in a dimension"),
    (dict(block=(4, 1, 0)), r"block \(4, 1, 0\) is zero"),
    (dict(grid=(1, 65536, 1)), "exceeds 65535"),
    (dict(block=(1 << 16, 1, 1)), "exceeds 65535"),
    (dict(block=(3, 3, 1)), "9 threads; configuration 'tiny' allows at most 8"),
    (dict(block=(2, 2, 2 + 1)), "12 threads"),
    (dict(entry_pc=0x42), "entry pc 66 is not a multiple of 4"),
    (dict(entry_pc=CODE_END), r"entry pc 0x100 is outside the code range \[0xf8, 0x100\)"),
    (dict(entry_pc=0xF4), r"entry pc 0xf4 is outside the code range"),
    (dict(entry_pc=1 << 20), "outside the code range"),
    (dict(code_end=CODE_END + 4), "code end 0x104 is past the loaded code"),
    (dict(code_end=0), "code end 0 is zero"),
    (dict(code_base=0xFA), "code base 250 is not a multiple of 4"),
    (dict(param_addr=0x1002), "param addr 4098 is not a multiple of 4"),
    (dict(param_size=6), "param size 6 is not a multiple of 4"),
    (dict(param_size=65536), "param size 65536 exceeds 65532"),
    (dict(shared_bytes=4100), "4100 bytes of shared memory exceed the 4096"),
])
def test_launch_problem_each_rule(change, why):
    assert cq.launch_problem(OK, TINY, CODE_END) is None  # every limit exactly met
    bad = dataclasses.replace(OK, **change)
    assert re.search(why, cq.launch_problem(bad, TINY, CODE_END))


def test_launch_problem_ignores_nop_and_fence_words():
    junk = dict(entry_pc=2, grid=(0, 1 << 20, 1), block=(99, 0, 1), param_size=7,
                shared_bytes=1 << 30)
    for op in (CommandOp.NOP, CommandOp.FENCE):
        assert cq.launch_problem(Command(op, 1, **junk), TINY, 0) is None
    assert cq.launch_problem(Command(CommandOp.LAUNCH, 1, **junk), TINY, 0) is not None


def test_record_table_in_docs_is_current(capsys):
    doc = (Path(__file__).parents[2] / "docs" / "command-queue.md").read_text()
    table = cq.record_table_markdown()
    assert table in doc, ("the record table in docs/command-queue.md is out of date with "
                          "arch/command_queue.py: paste the output of `simtgpu command-queue`")
    cores = cq.core_counter_table_markdown()
    assert cores in doc, "the per-core counter table in docs/command-queue.md is out of date"
    assert main(["command-queue"]) == 0
    assert capsys.readouterr().out == table + "\n" + cores
    assert "| 0x24 | BARRIERS | BARRIERS (0xAC) |" in cores
    # The table is derived, not typed: every field's word range and rule is in it.
    assert "| w3..w5 | grid x, y, z | 15:0 | 1..65535 | LAUNCH |" in table
    assert "| w10 | param size | 15:0 | at most 65532, multiple of 4 | LAUNCH |" in table
    assert "| w15 | reserved | none | 0 | all |" in table


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


def test_update_rewrites_a_stale_table_in_place(tmp_path):
    doc = tmp_path / "cq.md"
    table = cq.record_table_markdown()
    cores = cq.core_counter_table_markdown()
    stale = table.replace("| w1 | fence | 31:0 |", "| w1 | fence | 7:0 |")
    stale_cores = cores.replace("| 0x04 |", "| 0x08 |")
    doc.write_text("intro\n\n" + stale + "\nmiddle\n\n" + stale_cores + "\nafter\n")
    assert main(["command-queue", "--update", str(doc)]) == 0
    assert doc.read_text() == "intro\n\n" + table + "\nmiddle\n\n" + cores + "\nafter\n"
