"""The .sgo object format: exact round trip, and a clear error for every kind of damage."""

from __future__ import annotations

import struct

import pytest
from simtgpu.assembler import (
    KernelInfo,
    ObjectFile,
    ObjectFormatError,
    ParamInfo,
    Relocation,
    Symbol,
    assemble,
)
from simtgpu.assembler.objfile import HEADER, KERNEL, PARAM, RELOC, SYMBOL

SOURCE = """
        .kernel first
        .param  a, ptr
        .param  n, i32
        .param  s, f32
        .shared 64
        ldparam r1, a
        la      r2, table+4
loop:   addi    r1, r1, -1
        bra     loop
        .end
        .kernel second
        .regs   9
        ret
        .end
        .data
        .align  16
table:  .word   1, 2, 3
bytes:  .byte   9
"""


@pytest.fixture
def obj() -> ObjectFile:
    return assemble(SOURCE)


def test_assembled_metadata(obj: ObjectFile) -> None:
    assert obj.kernels["first"] == KernelInfo(
        "first", 0, 20,
        [ParamInfo("a", "ptr", 0), ParamInfo("n", "i32", 4), ParamInfo("s", "f32", 8)],
        64, 3)
    assert obj.kernels["second"] == KernelInfo("second", 20, 24, [], 0, 9)
    assert obj.symbols == {"loop": Symbol("loop", "code", 12),
                           "table": Symbol("table", "data", 0),
                           "bytes": Symbol("bytes", "data", 12)}
    assert obj.relocations == [Relocation(4, "hi16", 4), Relocation(8, "lo16", 4)]
    assert obj.data_align == 16 and len(obj.data) == 13


def test_round_trip(obj: ObjectFile) -> None:
    blob = obj.to_bytes()
    assert blob[:4] == b"SGPU"
    back = ObjectFile.from_bytes(blob)
    assert back == obj
    assert back.to_bytes() == blob
    assert ObjectFile.from_bytes(ObjectFile().to_bytes()) == ObjectFile()


def test_file_helpers(obj: ObjectFile, tmp_path) -> None:
    path = tmp_path / "k.sgo"
    obj.write(path)
    assert ObjectFile.from_file(path) == obj
    with pytest.raises(ObjectFormatError, match="cannot read"):
        ObjectFile.from_file(tmp_path / "missing.sgo")


def test_relocate_alignment_and_range(obj: ObjectFile) -> None:
    with pytest.raises(ObjectFormatError, match="not aligned to 16"):
        obj.relocate(0x1008)
    with pytest.raises(ObjectFormatError, match="outside 32 bits"):
        obj.relocate(0x1_0000_0000)
    assert obj.relocate(0) == obj.code  # the code is stored as if data sat at address 0


def test_kernel_lookup(obj: ObjectFile) -> None:
    with pytest.raises(ObjectFormatError, match=r"no kernel named 'third' \(kernels: first, "
                       r"second\)"):
        obj.kernel("third")


def _patch(blob: bytes, offset: int, fmt: str, *values) -> bytes:
    b = bytearray(blob)
    struct.pack_into(fmt, b, offset, *values)
    return bytes(b)


def _table_offset(blob: bytes, table: int) -> int:
    return struct.unpack_from("<I", blob, 16 + 8 * table)[0]


def load_error(blob: bytes) -> str:
    with pytest.raises(ObjectFormatError) as info:
        ObjectFile.from_bytes(blob, "k.sgo")
    msg = str(info.value)
    assert msg.startswith("k.sgo: ")
    return msg[len("k.sgo: "):]


def test_bad_magic_and_version(obj: ObjectFile) -> None:
    blob = obj.to_bytes()
    assert load_error(b"ELF\x7f" + blob[4:]) == (
        "bad magic b'ELF\\x7f' (expected b'SGPU'): not a simtgpu object file")
    assert load_error(b"") == "bad magic b'' (expected b'SGPU'): not a simtgpu object file"
    assert load_error(_patch(blob, 4, "<H", 2)) == (
        "unsupported object format version 2 (this tool reads version 1)")
    assert load_error(_patch(blob, 6, "<H", 1)) == "unknown flags 0x0001 (none are defined)"


def test_truncation_at_every_cut_point(obj: ObjectFile) -> None:
    blob = obj.to_bytes()
    for cut in range(len(blob)):
        msg = load_error(blob[:cut])
        assert msg.startswith(("truncated", "bad magic")), (cut, msg)
    assert load_error(blob + b"\0") == (
        f"trailing bytes: the header says {len(blob)} bytes, the file has {len(blob) + 1}")


def test_out_of_range_tables(obj: ObjectFile) -> None:
    blob = obj.to_bytes()
    # the symbol table's count pushed far past the end of the file
    msg = load_error(_patch(blob, 16 + 8 * 3 + 4, "<I", 1000))
    assert msg.startswith("symbol table at offset") and "lies outside the file" in msg
    assert load_error(_patch(blob, 16, "<I", 4)).startswith("code at offset 4 with")
    assert load_error(_patch(blob, 12, "<I", 12)) == (
        "data alignment 12 is not a power of two >= 4")


def test_out_of_range_entries(obj: ObjectFile) -> None:
    blob = obj.to_bytes()
    sym, kern, par, rel = (_table_offset(blob, t) for t in (3, 4, 5, 6))
    # symbol 'loop' (first) at a code offset past the end / unaligned
    assert load_error(_patch(blob, sym + 8, "<I", 400)) == (
        "symbol 'loop': offset 400 outside or misaligned in the code section (24 bytes)")
    assert load_error(_patch(blob, sym + 8, "<I", 2)).endswith("(24 bytes)")
    assert load_error(_patch(blob, sym + 4, "<B", 5)) == "symbol 'loop': unknown section 5"
    assert load_error(_patch(blob, sym, "<I", 10_000)).startswith(
        "symbol 0: name offset 10000 outside the string table")
    # kernel 'first': entry/end outside the code, bad register count, parameter range
    assert load_error(_patch(blob, kern + 8, "<I", 28)) == (
        "kernel 'first': code range 0..28 is empty, misaligned or outside the code (24 bytes)")
    assert load_error(_patch(blob, kern + 4, "<I", 20)).startswith(
        "kernel 'first': code range 20..20 is empty")
    assert load_error(_patch(blob, kern + 16, "<I", 40)) == (
        "kernel 'first': register count 40 not in 1..32")
    assert load_error(_patch(blob, kern + 24, "<I", 7)) == (
        "kernel 'first': parameters 0..7 outside the parameter table (3 entries)")
    # parameter: bad type, wrong offset
    assert load_error(_patch(blob, par + 4, "<B", 9)) == "parameter 'a': unknown type code 9"
    assert load_error(_patch(blob, par + PARAM.size + 8, "<I", 8)) == (
        "kernel 'first': parameter 'n' has offset 8, expected 4")
    # relocation: past the code, past the data, unknown kind, not an imm16 instruction
    assert load_error(_patch(blob, rel, "<I", 24)) == (
        "relocation 0: code offset 24 outside or misaligned in the code (24 bytes)")
    assert load_error(_patch(blob, rel + 8, "<I", 14)) == (
        "relocation 0: data offset 14 outside the data section (13 bytes)")
    assert load_error(_patch(blob, rel + 4, "<B", 3)) == "relocation 0: unknown kind 3"
    assert load_error(_patch(blob, rel, "<I", 0)) == (
        "relocation 0: the word at code offset 0 has no 16-bit immediate to patch")


def test_string_table_damage(obj: ObjectFile) -> None:
    blob = obj.to_bytes()
    strtab, size = struct.unpack_from("<II", blob, 16 + 8 * 2)
    # remove the final NUL: the last name runs off the table
    bad = _patch(blob, strtab + size - 1, "<B", ord("x"))
    assert "is not NUL-terminated" in load_error(bad)
    bad = _patch(blob, strtab + 1, "<B", 0xFF)
    assert "is not UTF-8" in load_error(bad)


def test_entry_sizes_are_documented() -> None:
    # docs/object-format.md gives these sizes; keep them in step
    assert (HEADER.size, SYMBOL.size, KERNEL.size, PARAM.size, RELOC.size) == (72, 12, 28, 12, 12)


def _kernel_with(**changes) -> bytes:
    """A one-kernel object file whose kernel record has ``changes`` written over it."""
    obj = assemble(".kernel k\n.shared 16\naddi r5, r0, 1\nexit\n.end\n", "k.s")
    info = obj.kernels["k"]
    fields = {"name": info.name, "regs": info.regs, "shared": info.shared_bytes}
    fields.update(changes)
    obj.kernels = {fields["name"]: KernelInfo(fields["name"], info.entry, info.end,
                                              info.params, fields["shared"], fields["regs"])}
    return obj.to_bytes()


@pytest.mark.parametrize(("changes", "message"), [
    ({"name": ""}, "'' is not a name"),
    ({"name": "two words"}, "'two words' is not a name"),
    ({"name": "9lives"}, "'9lives' is not a name"),
    ({"regs": 5}, "register count 5, but its code uses r5"),
    ({"shared": 1 << 31}, "shared size 2147483648 over 2147483647"),
])
def test_loader_refuses_what_the_assembler_never_writes(changes, message) -> None:
    with pytest.raises(ObjectFormatError, match=message):
        ObjectFile.from_bytes(_kernel_with(**changes), "k.sgo")


def test_loader_accepts_the_same_kernel_unchanged() -> None:
    loaded = ObjectFile.from_bytes(_kernel_with(), "k.sgo")
    assert (loaded.kernels["k"].regs, loaded.kernels["k"].shared_bytes) == (6, 16)
