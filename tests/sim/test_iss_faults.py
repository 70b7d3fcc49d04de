"""Every fault kind stops the launch with a record that names the block, warp, lanes, PC,
cause and instruction; host-side misuse raises IssError."""

import numpy as np
import pytest
from sim_harness import GID, kernel, run
from simtgpu.isa import FaultCause
from simtgpu.sim import GlobalMemory, Iss, IssError, KernelFault, MemoryAccessError


def fault_of(src: str, **kw):
    kw.setdefault("params", [("out", np.zeros(64, np.uint32))])
    with pytest.raises(KernelFault) as e:
        run(src, **kw)
    return e.value.record


# gid 77 in a grid of 4 blocks of 32 threads, warps of 8: block 2, warp 1, lane 5
ONE_LANE = GID + """
    movi r8, 77
    isetp.eq p0, r1, r8
    li r3, {addr}
@p0 {op}
"""


@pytest.mark.parametrize("addr, op, cause", [
    (0x0, "ldg r4, [r3]", FaultCause.OUT_OF_RANGE),
    (0xFFC, "ldg r4, [r3]", FaultCause.OUT_OF_RANGE),
    (1 << 20, "stg [r3], r1", FaultCause.OUT_OF_RANGE),
    ((1 << 20) - 4, "stg [r3+4], r1", FaultCause.OUT_OF_RANGE),
    (0x2002, "ldg r4, [r3]", FaultCause.MISALIGNED),
    (0x2001, "atom.add r4, [r3], r1", FaultCause.MISALIGNED),
    (0x0, "atom.exch r4, [r3], r1", FaultCause.OUT_OF_RANGE),
    (64, "lds r4, [r3]", FaultCause.OUT_OF_RANGE),
    (60, "sts [r3+4], r1", FaultCause.OUT_OF_RANGE),
    (6, "lds r4, [r3]", FaultCause.MISALIGNED),
    (64, "atoms.add r4, [r3], r1", FaultCause.OUT_OF_RANGE),
])
def test_memory_faults_name_the_lane(addr, op, cause):
    rec = fault_of(kernel(ONE_LANE.format(addr=addr, op=op), shared=64), warp_size=8,
                   grid=(4, 1, 1), block=(32, 1, 1))
    assert rec.cause is cause
    assert rec.block == (2, 0, 0) and rec.warp == 1 and rec.lane_mask == 1 << 5
    assert rec.instruction.split()[1] == op.split()[0]
    assert rec.instruction.startswith("@p0 ")
    text = str(rec)
    assert text.startswith(f"fault: {cause.name} at pc 0x{rec.pc:04x} ({rec.instruction}) "
                           "block (2,0,0) warp 1 lanes 0x00000020")


def test_guarded_off_lanes_never_fault():
    src = kernel(GID + "    movi r3, 0\n    isetp.lt p0, r1, r0\n@p0 ldg r4, [r3]\n"
                 "@p0 stg [r3], r4\n@p0 atom.add r4, [r3], r4\n@p0 lds r4, [r3+1000]\n")
    res = run(src, params=[("out", np.zeros(1, np.uint32))])
    assert res.stats.global_loads == 0


def test_param_offset_past_the_block():
    rec = fault_of(kernel("    ldparam r3, 8\n", "out a:i32"), warp_size=4, block=(8, 1, 1),
                   params=[("out", np.zeros(1, np.uint32)), ("a", 3)])
    assert rec.cause is FaultCause.OUT_OF_RANGE
    assert rec.lane_mask == 0xF and rec.warp == 0


def test_illegal_instruction_only_when_executed():
    src = ".kernel k\n    exit\n    .word 0\n    .word 0xffffffff\n.end\n"
    run(src)  # the words after exit never execute
    src = ".kernel k\n    nop\n    .word 0xffffffff\n    exit\n.end\n"
    rec = fault_of(src, warp_size=8, block=(12, 1, 1))
    assert rec.cause is FaultCause.ILLEGAL_INSTRUCTION
    assert rec.pc == 4 and rec.lane_mask == 0xFF


def test_pc_out_of_range():
    rec = fault_of(".kernel k\n    nop\n    nop\n.end\n", warp_size=4, block=(6, 1, 1))
    assert rec.cause is FaultCause.PC_OUT_OF_RANGE
    assert rec.pc == 8 and rec.instruction == ""


def test_stack_underflow():
    rec = fault_of(".kernel k\n    sync\n    exit\n.end\n", warp_size=4)
    assert rec.cause is FaultCause.STACK_UNDERFLOW and rec.pc == 0


def test_stack_overflow():
    rec = fault_of(".kernel k\nL:\n    ssy L\n    bra L\n.end\n", warp_size=4, stack_depth=5)
    assert rec.cause is FaultCause.STACK_OVERFLOW and rec.pc == 0


def test_watchdog_stops_a_runaway_kernel():
    rec = fault_of(".kernel k\nL:\n    nop\n    bra L\n.end\n", warp_size=8, block=(16, 1, 1),
                   budget=1001)
    assert rec.cause is FaultCause.WATCHDOG
    assert rec.warp == 1  # warp 0 retired the 1001st instruction; warp 1 would exceed


def test_kernel_fault_renders_its_record():
    rec_err = None
    try:
        run(".kernel k\n    sync\n.end\n", warp_size=4)
    except KernelFault as e:
        rec_err = e
    assert rec_err is not None
    assert rec_err.render() == str(rec_err.record)
    assert "STACK_UNDERFLOW" in rec_err.render()


@pytest.mark.parametrize("kw, words", [
    ({"warp_size": 6}, "warp_size"), ({"warp_size": 64}, "warp_size"),
    ({"stack_depth": 0}, "stack_depth"), ({"instruction_budget": 0}, "instruction_budget"),
    ({"num_cores": 0}, "num_cores"),
])
def test_bad_configuration(kw, words):
    with pytest.raises(IssError, match=words):
        Iss(GlobalMemory(1 << 16), **kw)


@pytest.mark.parametrize("kw, words", [
    ({"grid": (0, 1, 1)}, "grid"), ({"block": (1, -1, 1)}, "block"), ({"entry": 2}, "entry"),
    ({"shared_bytes": -4}, "shared_bytes"), ({"code": b"\x01\x00"}, "code"),
])
def test_bad_launch(kw, words):
    args = dict(code=b"\x02\x00\x00\x00", entry=0, grid=(1, 1, 1), block=(4, 1, 1),
                param_addr=0x1000, param_size=0, shared_bytes=0)
    args.update(kw)
    with pytest.raises(IssError, match=words):
        Iss(GlobalMemory(1 << 16), warp_size=4).launch(**args)


def test_global_memory_host_api():
    mem = GlobalMemory(0x3000)
    assert mem.size == 0x3000
    mem.write(0x1001, b"\x01\x02\x03\x04\x05")
    assert mem.read(0x1000, 8) == b"\x00\x01\x02\x03\x04\x05\x00\x00"
    assert mem.read_words(0x1000, 2).tolist() == [0x03020100, 0x0504]  # little-endian
    mem.write_words(0x2000, np.array([1.5], np.float32))
    assert mem.read(0x2000, 4) == np.float32(1.5).tobytes()
    mem.write_words(0x2004, np.array([-1], np.int32))
    assert mem.read_words(0x2004, 1)[0] == 0xFFFFFFFF
    for bad in (lambda: mem.read(0xFFC, 4), lambda: mem.write(0x2FFE, b"abc"),
                lambda: mem.read_words(0x1002, 1), lambda: mem.read_words(0x2FFC, 2)):
        with pytest.raises(MemoryAccessError):
            bad()
    mem.write_words(0x2008, np.array([-2, 7], np.int64))
    assert mem.read_words(0x2008, 2).tolist() == [0xFFFFFFFE, 7]
    with pytest.raises(IssError, match="float32"):
        mem.write_words(0x2000, np.array([1.5]))
    for size in (100, 0x1001, 0x1000):
        with pytest.raises(IssError):
            GlobalMemory(size)
