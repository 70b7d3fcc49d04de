"""Whatever the input, the assembler answers with an object or with SourceErrors, never with
another exception (a traceback would be a bug, not a user mistake)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from simtgpu.assembler import assemble
from simtgpu.errors import SourceErrors

WORDS = ["add", "addi", "li", "la", "ldg", "stg", "atom.cas", "bra", "ssy", "sel", "s2r",
         "ldparam", "jmp", "ret", "pset", ".kernel", ".end", ".param", ".shared", ".regs",
         ".equ", ".data", ".text", ".word", ".float", ".byte", ".space", ".align", "r1", "r31",
         "r32", "p0", "pt", "!p1", "tid.x", "x", "k", "L", "ptr", "f32", "0", "-1", "5000",
         "0x10", "1.5", "inf", "nan", "1e39", ".", "@p0", "@!p2", "[", "]", "(", ")", "+",
         "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "~", ",", ":", ";", "//", "\t", "#"]

line = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(line, max_size=12))
def test_no_crash_on_arbitrary_input(lines: list[str]) -> None:
    try:
        assemble("\n".join(lines))
    except SourceErrors as e:
        assert e.errors
        for err in e.errors:
            assert err.loc.line >= 1 and err.loc.col >= 1 and err.message


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_no_crash_on_arbitrary_text(text: str) -> None:
    try:
        assemble(text)
    except SourceErrors:
        pass
