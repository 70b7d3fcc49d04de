"""The allocation rounds of a spilling kernel (general registers and predicates) carry their
live ranges and the linear scan's state from one round to the next (isa_codegen._Positions).
Reference: the same kernels with every round starting afresh (the carried state dropped),
which must give the same code."""

import pytest
from simtgpu.compiler_backend import isa_codegen
from simtgpu.compiler_backend.bench_compile import compile_one

# spills to shared memory, to local memory (with parallel copies), a kernel with loops and
# one that spills predicates (27 of its 1024 elements' masks)
CASES = ["03 matmul 32x16x8", "03 matmul 32x32x16", "06 attention 16x16 d=16 causal",
         "01 add BLOCK_SIZE=1024"]


@pytest.mark.parametrize("name", CASES)
def test_carried_allocation_state_gives_the_code_of_fresh_rounds(name, monkeypatch):
    carried = compile_one(name)
    assert carried.n_spills > 0  # (the rounds this test is about happened)
    # without respill the next round finds its code unknown and rescans all of it
    monkeypatch.setattr(isa_codegen._Positions, "respill", lambda self, *a, **k: None)
    fresh = compile_one(name)
    assert carried.asm == fresh.asm
