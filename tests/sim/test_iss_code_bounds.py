"""A kernel runs only its own module's code: a PC that leaves [code_start, end of module)
faults with PC_OUT_OF_RANGE on the ISS, whether it falls off the end or branches back into
the module loaded before it; fault PCs are 32-bit, as the RTL's."""

from __future__ import annotations

import numpy as np
import pytest
from simtgpu.assembler import assemble
from simtgpu.isa import FaultCause
from simtgpu.sim import GlobalMemory, Iss, KernelFault

STORES_42 = assemble(".kernel k\n    li r1, 42\n    li r2, 0x2000\n    stg [r2], r1\n    exit\n"
                     ".end\n", "a.s").code
NO_EXIT = assemble(".kernel k\n    nop\n    nop\n.end\n", "b.s").code
BACK = assemble(".kernel k\n    bra -64\n.end\n", "c.s").code


def _run(imem: bytes, start: int, end: int):
    mem = GlobalMemory(1 << 16)
    iss = Iss(mem, warp_size=4)
    with pytest.raises(KernelFault) as info:
        iss.launch(imem[:end], start, (1, 1, 1), (4, 1, 1), 0, 0, 0, code_start=start)
    assert mem.read_words(0x2000, 1)[0] == 0  # the other module's store never ran
    return info.value.record


def test_falling_off_the_end_does_not_run_the_next_module() -> None:
    imem = NO_EXIT + STORES_42  # the next module sits right after the kernel's last word
    rec = _run(imem + bytes(64), 0, len(NO_EXIT))
    assert rec.cause is FaultCause.PC_OUT_OF_RANGE and rec.pc == len(NO_EXIT)
    assert "outside the launched module's code [0x0, 0x8)" in rec.detail


def test_branching_back_does_not_run_the_module_before() -> None:
    base = 64
    imem = STORES_42.ljust(base, b"\0") + BACK
    rec = _run(imem, base, base + len(BACK))
    assert rec.cause is FaultCause.PC_OUT_OF_RANGE and rec.pc == 0  # 64 - 64


# Other ways out of a module (the ISA has no register-indirect jump): a branch forward past
# the end into the next module, a reconvergence target (ssy) outside it reached by sync, and
# a divergent branch that sends only some lanes out. Each names the pc it left to.
LEAVES = {
    "bra_forward": (".kernel k\n    bra 8\n    exit\n.end\n", 8),
    "ssy_sync": (".kernel k\n    ssy 64\n    sync\n    exit\n.end\n", 64),
    "divergent_bra": (".kernel k\n    s2r r1, tid\n    movi r2, 2\n    isetp.lt p0, r1, r2\n"
                      "@p0 bra 64\n    exit\n.end\n", 64),
}


@pytest.mark.parametrize("name", LEAVES)
def test_other_ways_out_of_the_module_fault(name: str) -> None:
    src, target = LEAVES[name]
    code = assemble(src, f"{name}.s").code
    rec = _run(code + STORES_42, 0, len(code))
    assert rec.cause is FaultCause.PC_OUT_OF_RANGE and rec.pc == target
    assert f"[0x0, {len(code):#x})" in rec.detail


def test_a_negative_pc_is_reported_as_the_32_bit_pc() -> None:
    rec = _run(BACK, 0, len(BACK))
    assert rec.pc == 0xFFFF_FFC0 and "pc 0xffffffc0" in rec.detail
    assert "0x-" not in str(rec)


def test_code_start_must_not_pass_the_entry() -> None:
    from simtgpu.sim import IssError

    with pytest.raises(IssError, match="code_start"):
        Iss(GlobalMemory(1 << 16), warp_size=4).launch(
            BACK, 0, 1, 4, 0, 0, 0, code_start=4)


def test_inside_the_module_runs_normally() -> None:
    mem = GlobalMemory(1 << 16)
    Iss(mem, warp_size=4).launch(STORES_42, 0, 1, 4, 0, 0, 0, code_start=0)
    assert np.array_equal(mem.read_words(0x2000, 1), [42])
