"""The driver model's Python API under hostile input, on the ISS.

Each case below once raised a foreign exception (TypeError, ValueError, a NumPy warning),
silently stored something else than it was given (1.7 as 1, 2**40 as 0, -1 as 4294967295,
text as a device buffer) or gave a misleading message; now each is a DriverError (or an
IssError for the simulator's own options) that changes nothing. A kernel fault of every
kind names its cause, core, block, warp, lanes and PC.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from simtgpu.assembler.examples import EXAMPLES_ASM
from simtgpu.driver_model import Device, DriverError
from simtgpu.errors import SimtgpuError
from simtgpu.isa import FaultCause
from simtgpu.sim import KernelFault


@pytest.fixture(scope="module")
def dev():
    with Device(config="tiny") as d:
        yield d


def _escape(text: str) -> str:
    return "".join("\\" + c if c in "()[]*+?.^$|{}" else c for c in text)


@pytest.mark.parametrize("kw, message", [
    ({"queue_entries": "8"}, "queue_entries must be a power of two from 2 to 4096, not '8'"),
    ({"queue_entries": 8.0}, "queue_entries must be a power of two from 2 to 4096, not 8.0"),
    ({"instruction_budget": "x"}, "instruction_budget must be positive, not 'x'"),
    ({"instruction_budget": 1.5}, "instruction_budget must be positive, not 1.5"),
])
def test_bad_device_options_are_named(kw, message) -> None:
    with pytest.raises(SimtgpuError, match=_escape(message)):
        Device(config="tiny", **kw)


@pytest.mark.parametrize("dtype, values, message", [
    (np.float32, "abcdefgh", "<U8 values are not numbers"),
    (np.float32, [object()] * 8, "object values are not numbers"),
    (np.float32, [[1, 2], [3]], "not an array of numbers"),
    (np.float32, np.ones(8, complex), "complex128 values are not numbers"),
    (np.float32, np.full(8, 1e39), "1e+39 cannot be stored exactly as float32"),
    (np.int32, np.full(8, 1.7), "1.7 cannot be stored exactly as int32"),
    (np.int32, np.full(8, np.nan), "nan cannot be stored exactly as int32"),
    (np.int32, np.full(8, 2 ** 40), "1099511627776 cannot be stored exactly as int32"),
    (np.uint32, np.arange(-1, 7), "-1 cannot be stored exactly as uint32"),
])
def test_copy_from_host_refuses_what_the_buffer_cannot_hold(dev, dtype, values, message):
    buf = dev.to_device(np.arange(8, dtype=dtype))
    with pytest.raises(DriverError, match=_escape(message)):
        buf.copy_from_host(values)
    np.testing.assert_array_equal(buf.to_host(), np.arange(8, dtype=dtype))  # nothing written
    buf.free()


def test_copy_from_host_still_converts_exact_values(dev) -> None:
    ints = dev.zeros(4, np.int32)
    ints.copy_from_host(np.array([1.0, -2.0, 3.0, 2.0 ** 31 - 1]))  # whole numbers in range
    assert ints.to_host().tolist() == [1, -2, 3, 2 ** 31 - 1]
    floats = dev.zeros(3, np.float32)
    floats.copy_from_host([0.1, np.inf, np.nan])  # float64 rounds to float32, as NumPy does
    got = floats.to_host()
    assert got[0] == np.float32(0.1) and np.isposinf(got[1]) and np.isnan(got[2])
    ints.free()
    floats.free()


def test_copy_from_a_device_array_says_to_copy_to_the_host(dev) -> None:
    a, b = dev.zeros(4), dev.zeros(4)
    with pytest.raises(DriverError, match="the source is a DeviceArray .* to_host"):
        a.copy_from_host(b)
    a.free()
    b.free()


@pytest.mark.parametrize("value, kind", [
    ("hello", "text"), (b"hello", "byte strings"), (np.array(["ab", "cd"]), "text"),
    (np.array(["2020-01-01"], dtype="datetime64[D]"), "dates"),
])
def test_to_device_refuses_what_no_kernel_can_use(dev, value, kind) -> None:
    before = dev.memory_stats()
    with pytest.raises(DriverError, match=f"to_device\\(\\): .* values \\({kind}\\)"):
        dev.to_device(value)
    assert dev.memory_stats() == before


def test_load_module_says_what_the_path_is(dev, tmp_path) -> None:
    (tmp_path / "dir.s").mkdir()
    os.mkfifo(tmp_path / "pipe.sgo")
    with pytest.raises(DriverError, match="dir.s: is a directory, not a file"):
        dev.load_module(tmp_path / "dir.s")
    with pytest.raises(DriverError, match="pipe.sgo: is not a regular file"):
        dev.load_module(tmp_path / "pipe.sgo")
    with pytest.raises(DriverError, match="load_module: the path is empty"):
        dev.load_module("")


def test_kernel_name_must_be_text(dev) -> None:
    mod = dev.load_module(EXAMPLES_ASM / "vector_add.s")
    with pytest.raises(DriverError, match="kernel\\(\\) takes a kernel name .* not NoneType"):
        mod.kernel(None)
    mod.unload()


GID = """
    s2r r1, ctaid.x
    s2r r2, ntid.x
    mul r1, r1, r2
    s2r r2, tid.x
    add r1, r1, r2
"""
# kernel, the faulting block, warp, lanes and pc; launched as 3 blocks of 8 threads (two
# warps of 4) on the tiny configuration (one core)
FAULTS = {
    FaultCause.ILLEGAL_INSTRUCTION: (".kernel k\n    nop\n    .word 0xffffffff\n    exit\n"
                                     ".end\n", (0, 0, 0), 0, 0xF, 0x4),
    FaultCause.OUT_OF_RANGE: (".kernel k\n    movi r3, 0\n    ldg r4, [r3]\n    exit\n.end\n",
                              (0, 0, 0), 0, 0xF, 0x4),
    FaultCause.MISALIGNED: (".kernel k\n    li r3, 0x2002\n    ldg r4, [r3]\n    exit\n.end\n",
                            (0, 0, 0), 0, 0xF, 0x4),
    FaultCause.BARRIER_DEADLOCK: (".kernel k\n    s2r r3, warpid\n    isetp.eq p0, r3, r0\n"
                                  "@p0 exit\n    bar\n    exit\n.end\n", (0, 0, 0), 1, 0xF, 0xC),
    FaultCause.DIVERGENT_BARRIER: (".kernel k\n" + GID + "    andi r3, r1, 1\n"
                                   "    isetp.ne p0, r3, r0\n    ssy J\n@p0 bra ODD\n    bar\n"
                                   "    sync\nODD:\n    sync\nJ:\n    exit\n.end\n",
                                   (0, 0, 0), 0, 0x5, 0x24),
    FaultCause.STACK_OVERFLOW: (".kernel k\nL:\n    ssy L\n    bra L\n.end\n",
                                (0, 0, 0), 0, 0xF, 0x0),
    FaultCause.STACK_UNDERFLOW: (".kernel k\n    sync\n    exit\n.end\n", (0, 0, 0), 0, 0xF, 0),
    FaultCause.WATCHDOG: (".kernel k\n    s2r r1, ctaid.x\n    movi r2, 2\n"
                          "    isetp.eq p0, r1, r2\n@p0 bra L\n    exit\nL:\n    bra L\n.end\n",
                          (2, 0, 0), 0, 0xF, 0x14),
    FaultCause.PC_OUT_OF_RANGE: (".kernel k\n    nop\n    nop\n.end\n", (0, 0, 0), 0, 0xF, 0x8),
}


@pytest.mark.parametrize("cause", list(FAULTS), ids=lambda c: c.name)
def test_every_fault_names_core_block_warp_lanes_and_pc(cause) -> None:
    from simtgpu.cli.run_cmd import fault_report

    src, block, warp, lanes, pc = FAULTS[cause]
    with Device(config="tiny", instruction_budget=2000) as d:
        k = d.load_module(src).kernel("k")
        with pytest.raises(KernelFault) as e:
            d.launch(k, 3, 8)
        rec = e.value.record
        assert (rec.cause, rec.block, rec.warp, rec.lane_mask, rec.pc, rec.core) == \
            (cause, block, warp, lanes, pc, 0)
        text = e.value.render()  # what an uncaught fault prints: one line with everything
        assert text.startswith(f"fault: {cause.name} at pc 0x{pc:04x}")
        assert f"block ({block[0]},0,0) warp {warp} lanes 0x{lanes:08x} on core 0: in k()" \
            in text
        report = fault_report(e.value)  # simtgpu run's report
        assert f"block       ({block[0]}, 0, 0)   core 0" in report
        assert report.splitlines()[1].rstrip() == report.splitlines()[1]  # (no blank tail)
        # the device is usable after the fault
        d.launch(d.load_module(".kernel ok\n    exit\n.end\n").kernel("ok"), 1, 4)


def test_launch_dimensions_may_be_a_numpy_vector(dev) -> None:
    k = dev.load_module(".kernel ok\n    exit\n.end\n").kernel("ok")
    res = dev.launch(k, np.array([2, 1]), np.arange(4, 5))
    assert (res.grid, res.block) == ((2, 1, 1), (4, 1, 1))
    with pytest.raises(DriverError, match="grid must be an int or 1 to 3 dimensions"):
        dev.launch(k, np.ones(4, int), 4)
    k.module.unload()


def test_copies_after_close_name_the_call() -> None:
    d = Device(config="tiny")
    a = d.zeros(4)
    d.close()
    with pytest.raises(DriverError, match=r"^to_host\(\) of DeviceArray.*: the device is closed"):
        a.to_host()
    with pytest.raises(DriverError, match=r"^copy_from_host\(\) of .*: the device is closed"):
        a.copy_from_host(np.zeros(4, np.float32))


@pytest.mark.parametrize("value", [2 ** 2000, np.longdouble("1e4000"), -(10 ** 400)],
                         ids=["2**2000", "longdouble-1e4000", "-10**400"])
def test_f32_argument_too_large_for_a_double_is_out_of_range(dev, value) -> None:
    k = dev.load_module(".kernel k\n.param s, f32\n    exit\n.end\n").kernel("k")
    with pytest.raises(DriverError, match=r"argument 's' of k\(s: f32\): out of range for f32 "
                       r"\(got \w+ .{0,60}\)$"):
        dev.launch(k, 1, 4, (value,))
    dev.launch(k, 1, 4, (float("inf"),))  # infinity itself is an f32 value
    k.module.unload()


@pytest.mark.parametrize("spec", ["s=f32:1e400", "s=f32:-1e400", "a=f32[4]:fill(1e400)",
                                  "a=i32[4]:fill(-1e999)"])
def test_arg_number_too_large_for_a_double_is_not_infinity(spec) -> None:
    from simtgpu.driver_model.argspec import parse_arg

    with pytest.raises(DriverError, match="is out of range \\(too large for any float\\)"):
        parse_arg(spec)
    assert parse_arg("s=f32:-Infinity").value == float("-inf")


def test_trace_to_a_closed_or_read_only_file(dev, tmp_path) -> None:
    import io

    k = dev.load_module(".kernel ok\n    exit\n.end\n").kernel("ok")
    closed = open(tmp_path / "t.jsonl", "w")  # noqa: SIM115 - closed on purpose
    closed.close()
    with pytest.raises(DriverError, match="the file .*t.jsonl is closed"):
        dev.launch(k, 1, 4, trace=closed)
    with open(tmp_path / "t.jsonl") as read_only, \
            pytest.raises(DriverError, match="t.jsonl is not open for writing"):
        dev.launch(k, 1, 4, trace=read_only)

    class Full(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    with pytest.raises(DriverError, match="No space left on device \\(the launch ran"):
        dev.launch(k, 1, 4, trace=Full())
    mine = io.StringIO()
    dev.launch(k, 1, 4, trace=mine)  # the caller's file is written, and left open
    assert len(mine.getvalue().splitlines()) == 1 and not mine.closed
    k.module.unload()
