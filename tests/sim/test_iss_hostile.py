"""The simulator's own API under hostile arguments: each call below once raised a foreign
exception (TypeError, MemoryError), or silently truncated a number; now each is an
IssError that names the argument. A kernel fault names the core as well as the block,
warp, lanes and PC."""

from __future__ import annotations

import numpy as np
import pytest
from simtgpu.assembler import assemble
from simtgpu.sim import GlobalMemory, Iss, IssError, KernelFault

CODE = assemble(".kernel k\n    nop\n    exit\n.end\n").code


def _launch(**kw):
    args = dict(code=CODE, entry=0, grid=(1, 1, 1), block=(4, 1, 1), param_addr=0x1000,
                param_size=0, shared_bytes=0)
    args.update(kw)
    return Iss(GlobalMemory(1 << 16), warp_size=4).launch(**args)


@pytest.mark.parametrize("kw, words", [
    ({"code": "nop"}, "code must be bytes"),
    ({"code": None}, "code must be bytes"),
    ({"code": [2, 0, 0, 0]}, "code must be bytes"),
    ({"shared_bytes": None}, "shared_bytes must be an integer"),
    ({"shared_bytes": 4.5}, "shared_bytes must be an integer"),
    ({"shared_bytes": 1 << 40}, "shared_bytes must be an integer from 0 to 2\\*\\*32 - 1"),
    ({"param_addr": -4, "param_size": 4}, "param_addr must be an integer"),
    ({"param_size": "4"}, "param_size must be an integer"),
    ({"grid": (1.5, 1, 1)}, "grid must be 1 to 3 positive integers"),
    ({"block": (4.9,)}, "block must be 1 to 3 positive integers"),
    ({"block": (True, 1, 1)}, "block must be 1 to 3 positive integers"),
    ({"trace": "t.jsonl"}, "trace must be a writable text file, not str"),
])
def test_bad_launch_arguments_are_named(kw, words) -> None:
    with pytest.raises(IssError, match=words):
        _launch(**kw)


def test_numpy_integers_are_integers() -> None:
    stats = _launch(grid=np.int64(2), block=(np.int32(4),), entry=np.int64(0))
    assert stats.warp_instructions == 2 * 2


@pytest.mark.parametrize("kw, words", [
    ({"stack_depth": "1"}, "stack_depth must be an integer"),
    ({"num_cores": "x"}, "num_cores must be an integer"),
    ({"instruction_budget": "x"}, "instruction_budget must be positive, not 'x'"),
    ({"instruction_budget": 1.5}, "instruction_budget must be positive, not 1.5"),
    ({"warp_size": 4.0}, "warp_size must be a power of two"),
])
def test_bad_configuration_is_named(kw, words) -> None:
    kw.setdefault("warp_size", 4)
    with pytest.raises(IssError, match=words):
        Iss(GlobalMemory(1 << 16), **kw)


def test_a_launch_too_big_for_the_host_is_an_error_not_a_memory_error() -> None:
    iss = Iss(GlobalMemory(1 << 16), warp_size=4, stack_depth=1 << 50)
    with pytest.raises(IssError, match="too little memory to simulate 1 block.*stack depth"):
        iss.launch(CODE, 0, (1, 1, 1), (4, 1, 1), 0x1000, 0, 0)
    iss.stack_depth = 16  # the simulator is still usable
    iss.launch(CODE, 0, (1, 1, 1), (4, 1, 1), 0x1000, 0, 0)


def test_fault_names_core_block_warp_lanes_and_pc() -> None:
    # block 3 of a grid on 2 cores runs on core 1; its warps branch to a sync with nothing
    # on the reconvergence stack
    iss = Iss(GlobalMemory(1 << 16), warp_size=4, num_cores=2)
    code = assemble(".kernel k\n    s2r r1, ctaid.x\n    movi r2, 3\n"
                    "    isetp.eq p0, r1, r2\n@p0 bra BAD\n    exit\nBAD:\n    sync\n"
                    "    exit\n.end\n").code
    with pytest.raises(KernelFault) as e:
        iss.launch(code, 0, (4, 1, 1), (8, 1, 1), 0x1000, 0, 0)
    assert e.value.record.core == 1
    assert e.value.render().startswith(
        "fault: STACK_UNDERFLOW at pc 0x0014 (sync) block (3,0,0) warp 0 lanes 0x0000000f "
        "on core 1: ")
