"""Every instruction of the ISA table decodes into an executable operation, and the few
instructions with no data effect (nop, fence) really have none."""

import numpy as np
import pytest
from sim_harness import GID, kernel, run
from simtgpu.isa import INSTRUCTIONS, Sem, encode
from simtgpu.sim.program import Op
from simtgpu.sim.semantics import SETS_PC


@pytest.mark.parametrize("instr", INSTRUCTIONS, ids=lambda i: i.mnemonic)
def test_every_instruction_has_semantics(instr):
    op = Op(0, encode(instr, {}), 0)
    assert callable(op.run)
    if instr.sem in (Sem.INT, Sem.INT_IMM, Sem.MUL, Sem.ICMP, Sem.PLOGIC, Sem.FP, Sem.FCMP,
                     Sem.CVT, Sem.SFU):
        assert callable(op.fn)
    assert op.sets_pc == (instr.sem in (Sem.BRANCH, Sem.BARRIER) or instr.mnemonic == "exit")
    assert (instr.mnemonic in SETS_PC) == op.sets_pc


def test_nop_and_fence_change_nothing():
    body = GID + """
    addi r5, r1, 3
    nop
    fence
@p3 nop
    ldparam r6, out
    add r6, r6, r2
    stg [r6], r5
    fence
    ldg r7, [r6]
    addi r7, r7, 1
    stg [r6+128], r7
"""
    res = run(kernel(body), warp_size=8, params=[("out", np.zeros(64, np.uint32))])
    assert res.out["out"].tolist() == list(range(3, 35)) + list(range(4, 36))
    assert res.stats.per_opcode["nop"] == 8 and res.stats.per_opcode["fence"] == 8
