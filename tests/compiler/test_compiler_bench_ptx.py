"""The side-by-side bench (compiler_backend/bench_ptx.py): reading ptxas and SASS on saved,
hand-counted samples, the table, the message without Triton, and one kernel end to end
where Triton is installed."""

import importlib.util
import sys

import pytest
from simtgpu.cli.bench import main as bench_main
from simtgpu.compiler_backend import bench_ptx as b

# a cuobjdump -sass excerpt: 7 instructions, a NOP, the closing self-branch; a loop from
# 0x0020 to the backward branch at 0x0060 (4 instructions, the NOP not counted); one
# 128-bit and one 64-bit access
SASS = """
        code for sm_90a
                Function : k
        /*0000*/                   LDC R1, c[0x0][0x28] ;                /* 0x00000a00ff017b82 */
                                                                         /* 0x000e220000000800 */
        /*0010*/                   S2R R0, SR_TID.X ;                    /* 0x0000000000007919 */
        /*0020*/                   LDG.E.128 R4, desc[UR4][R2.64] ;      /* 0x0000000402047981 */
        /*0030*/                   FFMA R8, R4, R5, R8 ;                 /* 0x0000000504087223 */
        /*0040*/                   NOP;                                  /* 0x0000000000007918 */
        /*0050*/                   STS.64 [R0], R8 ;                     /* 0x0000000800007388 */
        /*0060*/              @!P0 BRA 0x20 ;                            /* 0xfffffffc00a08947 */
        /*0070*/                   EXIT ;                                /* 0x000000000000794d */
        /*0080*/                   BRA 0x80;                             /* 0xfffffffc00fc7947 */
"""
PTXAS_V = """ptxas info    : Compiling entry function 'k' for 'sm_90a'
ptxas info    : Function properties for k
    0 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 37 registers, used 1 barriers, 32 bytes smem
"""


def test_sass_and_ptxas_figures_from_saved_samples():
    assert b.parse_sass(SASS) == (7, 2, [4])
    assert b.parse_ptxas(PTXAS_V) == (37, 20)


def test_table_from_saved_figures():
    case = b.CASES[0]
    rows = [b.Row(case, b.Sass(50, 20, 0, 1, [10]), b.Sass(100, 30, 4, 2, [20, 5]),
                  triton_aligned=b.Sass(25, 16, 0, 3)),
            b.Row(b.CASES[-1], b.Sass(9, 8, 0, 0), None, "no Triton form")]
    text = b.render(rows, {"commit": "abc", "date": "today"}, "3.9.0")
    assert "| vector_add | BLOCK_SIZE=1024 | 50 / 100 | 0.50 | 20 / 30 | 0 / 4 | 1 / 2 | " \
           "10 / 20, 5 |" in text
    assert "| transpose | TILE=32, BLOCK_ROWS=8 | 9 / - | - |" in text
    assert "Geometric mean of the SASS instruction ratio over 1 kernels: **0.50**" in text
    assert "transpose: no Triton form." in text
    assert "| vector_add | 50 / 25 | 2.00 | 20 / 16 | 1 / 3 | 10 / - |" in text
    assert "Geometric mean against aligned Triton: **2.00**" in text


def test_without_triton_the_part_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "triton", None)  # import triton raises ImportError
    with pytest.raises(b.BenchUnavailable, match=r"pip install 'simtgpu\[bench\]'"):
        b.tools()
    assert bench_main(["--part", "ptx", "--no-write"]) == 1
    assert "the ptx bench needs Triton" in capsys.readouterr().err


@pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                    reason="triton is not installed (pip install 'simtgpu[bench]')")
def test_vector_add_side_by_side():
    (row,) = b.rows(b.CASES[:1])
    for s in (row.ours, row.triton):
        assert s.instructions > 10 and s.registers > 0 and s.spill_bytes == 0
        assert s.loops == []
