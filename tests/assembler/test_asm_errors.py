"""Every kind of user mistake is reported with its line, 1-based column and a clear message,
and all mistakes of a file come back together."""

from __future__ import annotations

import pytest
from simtgpu.assembler import assemble
from simtgpu.errors import SourceErrors


def errors(text: str) -> list[tuple[int, int, str]]:
    with pytest.raises(SourceErrors) as info:
        assemble(text, "k.s")
    for e in info.value.errors:
        assert e.loc.file == "k.s"
    return [(e.loc.line, e.loc.col, e.message) for e in info.value.errors]


def one(text: str) -> tuple[int, int, str]:
    errs = errors(text)
    assert len(errs) == 1, errs
    return errs[0]


def test_unknown_mnemonic_suggests_a_close_match() -> None:
    assert one("  isetp.lx p1, r2, r3") == (
        1, 3, "unknown mnemonic 'isetp.lx' (did you mean 'isetp.lt'?)")


@pytest.mark.parametrize("src, col, msg", [
    ("add r1, r32, r2", 9, "bad register 'r32' (registers are r0..r31)"),
    ("add r1, x5, r2", 9, "expected a register r0..r31, got 'x5'"),
    ("ldg r1, [r40]", 10, "bad register 'r40' (registers are r0..r31)"),
    ("isetp.eq p7, r1, r2", 10, "bad predicate 'p7': expected a predicate p0..p6 or pt, "
     "got 'p7'"),
    ("s2r r1, tid.w", 9, "unknown special register 'tid.w' (one of tid.x, tid.y, tid.z, "
     "ntid.x, ntid.y, ntid.z, ctaid.x, ctaid.y, ctaid.z, nctaid.x, nctaid.y, nctaid.z, "
     "laneid, warpid, nwarps, warpsize, clock, clockhi, coreid, tid)"),
])
def test_bad_registers(src: str, col: int, msg: str) -> None:
    assert one(src) == (1, col, msg)


def test_wrong_operand_count_and_kind() -> None:
    assert one("addi r1, r2") == (1, 1, "addi takes 3 operands (addi rd, rs1, imm), got 2")
    assert one("nop r1") == (1, 5, "nop takes 0 operands (nop), got 1")
    assert one("add r1, r2, 5") == (1, 13, "expected a register r0..r31, got '5'")
    assert one("addi r1, r2, r3") == (1, 14, "register r3 where a constant is expected")
    assert one("ldg r1, r2") == (1, 9, "expected a memory operand [rN], [rN+offset] or "
                                       "[rN-offset], got 'r2'")
    assert one("atom.add r1, [r2+4], r3") == (
        1, 17, "this instruction takes no address offset: write [rN]")
    assert one("mov r1") == (1, 1, "mov takes 2 operands (mov rd, rs), got 1")


@pytest.mark.parametrize("src, col, msg", [
    ("addi r1, r2, 5000", 14, "immediate 5000 out of range -1024..1023 for addi"),
    ("addi r1, r2, -1025", 14, "immediate -1025 out of range -1024..1023 for addi"),
    ("movi r1, 40000", 10, "immediate 40000 out of range -32768..32767 for movi"),
    ("lui r1, -1", 9, "immediate -1 out of range 0..65535 for lui"),
    ("ldg r1, [r2+1024]", 12, "offset 1024 out of range -1024..1023 for ldg"),
    ("li r1, 0x100000000", 8, "constant 4294967296 out of range -2147483648..4294967295 "
     "for li"),
    ("li r1, 1e39", 8, "float constant 1e39 is out of range for binary32 (largest finite "
     "3.4028235e38; write inf)"),
])
def test_immediate_out_of_range_names_the_range(src: str, col: int, msg: str) -> None:
    assert one(src) == (1, col, msg)


def test_undefined_and_duplicate_labels() -> None:
    assert errors("loop: nop\n  bra lop\nloop: nop\n") == [
        (2, 7, "undefined label 'lop' (did you mean 'loop'?)"),
        (3, 1, "duplicate label 'loop' (first defined at line 1)"),
    ]


def test_branch_target_out_of_range_and_misaligned() -> None:
    assert one("bra 0x800000") == (1, 5, "branch target 0x800000 out of range (2097152 words "
                                         "from the branch; allowed -1048576..1048575)")
    assert one("bra 6") == (1, 5, "branch target 0x6 is not 4-byte aligned")


def test_bad_directive_and_directive_in_wrong_place() -> None:
    assert one(".kernal k") == (1, 1, "unknown directive '.kernal' (did you mean '.kernel'?)")
    assert one(".param a, ptr") == (1, 1, ".param outside a kernel (it belongs between "
                                          ".kernel and .end)")
    assert one(".shared 16") == (1, 1, ".shared outside a kernel (it belongs between .kernel "
                                       "and .end)")
    assert one(".end") == (1, 1, ".end outside a kernel (it belongs between .kernel and .end)")
    assert one(".kernel k\nnop\n.param a, ptr\n.end") == (
        3, 1, ".param after the kernel's first instruction (parameters come first)")
    assert one(".kernel k\n.param a, vec4\nnop\n.end") == (
        2, 11, "unknown parameter type 'vec4' (one of ptr, i32, u32, f32)")
    assert one(".kernel k\n.kernel j\nnop\n.end") == (
        2, 1, ".kernel inside kernel 'k' (missing .end)")
    assert one(".data\nadd r1, r2, r3") == (
        2, 1, "instruction 'add' in the .data section (write .text first)")
    assert one(".kernel k\n.regs 33\nnop\n.end") == (2, 7, ".regs 33 out of range 1..32")
    assert one(".kernel k\n.regs 2\nadd r5, r0, r0\n.end") == (
        2, 7, ".regs 2 but kernel 'k' uses r5")
    assert one(".kernel k\n.end") == (2, 1, "kernel 'k' has no instructions")
    assert one("@p1 .word 3") == (1, 1, "a directive (.word) cannot have a guard")
    assert one("jmp@p1") == (1, 4, "unexpected '@' in expression")


def test_kernel_never_ended() -> None:
    assert one("nop\n  .kernel k\n  nop\n") == (
        2, 11, "kernel 'k' is never ended (missing .end)")


def test_unaligned_data() -> None:
    assert one(".data\n.byte 1\n.word 2\n") == (
        3, 1, "unaligned data: .word at data offset 1 is not 4-byte aligned (add .align 4)")
    assert one(".space 2") == (1, 8, ".space 2 in .text would leave code unaligned "
                                     "(use a multiple of 4)")


def test_data_labels_need_la() -> None:
    assert one("li r1, d\n.data\nd: .word 1") == (
        1, 8, "li cannot load data label 'd' (its address is set at load time); use la")
    assert one("la r1, 5") == (1, 8, "la needs a data label (use li for constants)")
    assert one("addi r1, r1, d\n.data\nd: .word 1") == (
        1, 14, "data label 'd' has no address until the program is loaded; use la to put "
               "its address in a register")
    assert one("la r1, d*2\n.data\nd: .word 1") == (
        1, 9, "operator '*' cannot take the data label 'd' (its address is fixed at load "
              "time; use la)")


def test_lexical_and_expression_errors() -> None:
    assert one("addi r1, r2, 12abc") == (1, 14, "bad number '12abc'")
    assert one("addi r1, r2, (1 + 2") == (1, 14, "missing ')'")
    assert one("addi r1, r2, 1 / 0") == (1, 16, "division by zero")
    assert one("add r1, , r2") == (1, 9, "empty operand before ','")
    assert one("@p9 nop") == (1, 2, "bad guard: expected a predicate p0..p6 or pt, got 'p9'")
    assert one("addi r1, r2, 1.5") == (1, 14, "float constant 1.5 where an integer is expected")
    assert one("nop # hi") == (1, 5, "unexpected character '#'")
    assert one(".equ A, B\n.equ B, A\nli r1, A") == (
        2, 9, "'.equ A' is defined in terms of itself")


def test_all_errors_of_a_file_are_reported_in_order() -> None:
    errs = errors("""\
        .kernel k
        addi r1, r2, 5000
        foo r1
        add r1, r2, r99
        bra nowhere
        .end
""")
    assert [(line, col) for line, col, _ in errs] == [(2, 22), (3, 9), (4, 21), (5, 13)]


def test_error_render_points_at_the_column() -> None:
    with pytest.raises(SourceErrors) as info:
        assemble("\taddi r1, r2, 5000\n", "t.s")
    text = info.value.render()
    # a tab counts to the next multiple of 8, so the caret lines up under the rendered line
    lines = text.splitlines()
    assert lines[0] == "t.s:1:22: error: immediate 5000 out of range -1024..1023 for addi"
    assert lines[2].index("^") == lines[1].index("5000")
