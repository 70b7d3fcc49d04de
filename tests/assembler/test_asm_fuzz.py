"""Whatever the input, the assembler answers with an object or with SourceErrors, never with
another exception (a traceback would be a bug, not a user mistake); whatever it or the object
loader accepts, the disassembler writes back as source that assembles to the same file."""

from __future__ import annotations

from fuzzing import fuzz_target
from hypothesis import given
from hypothesis import strategies as st
from simtgpu.assembler import ObjectFile, ObjectFormatError, assemble, disassemble_object
from simtgpu.assembler.examples import EXAMPLES_ASM
from simtgpu.errors import SourceErrors

EXAMPLES = sorted(EXAMPLES_ASM.glob("*.s"))
OBJECTS = [assemble(p.read_text(), p.name).to_bytes() for p in EXAMPLES]


def _round_trips(obj: ObjectFile) -> None:
    again = assemble(disassemble_object(obj), "disassembly.s")
    assert again.to_bytes() == obj.to_bytes()

WORDS = ["add", "addi", "li", "la", "ldg", "stg", "atom.cas", "bra", "ssy", "sel", "s2r",
         "ldparam", "jmp", "ret", "pset", ".kernel", ".end", ".param", ".shared", ".regs",
         ".equ", ".data", ".text", ".word", ".float", ".byte", ".space", ".align", "r1", "r31",
         "r32", "p0", "pt", "!p1", "tid.x", "x", "k", "L", "ptr", "f32", "0", "-1", "5000",
         "0x10", "1.5", "inf", "nan", "1e39", ".", "@p0", "@!p2", "[", "]", "(", ")", "+",
         "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "~", ",", ":", ";", "//", "\t", "#"]

line = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)


@fuzz_target(400)
@given(st.lists(line, max_size=12))
def test_no_crash_on_arbitrary_input(lines: list[str]) -> None:
    try:
        obj = assemble("\n".join(lines))
    except SourceErrors as e:
        assert e.errors
        for err in e.errors:
            assert err.loc.line >= 1 and err.loc.col >= 1 and err.message
        return
    _round_trips(obj)


@fuzz_target(200)
@given(st.text(max_size=200))
def test_no_crash_on_arbitrary_text(text: str) -> None:
    try:
        assemble(text)
    except SourceErrors:
        pass


@fuzz_target(300)
@given(st.sampled_from(range(len(OBJECTS))),
       st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), min_size=1,
                max_size=4))
def test_corrupted_object_is_refused_or_round_trips(which: int, edits) -> None:
    blob = bytearray(OBJECTS[which])
    for pos, value in edits:
        blob[pos % len(blob)] = value
    try:
        obj = ObjectFile.from_bytes(bytes(blob), "corrupt.sgo")
    except ObjectFormatError as e:
        assert str(e).startswith("corrupt.sgo: ")
        return
    _round_trips(obj)
