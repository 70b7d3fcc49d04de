"""The driver's rtl backend: launches through the command queue and the MMIO host interface
of the Verilator model, results checked against NumPy, faults reported as on the ISS."""

from __future__ import annotations

import numpy as np
import pytest
from simtgpu.assembler.examples import example_asm
from simtgpu.driver_model.device import Device
from simtgpu.driver_model.errors import DriverError
from simtgpu.sim import KernelFault
from simtgpu.sim.trace import per_warp
from simtgpu.verification.compare import program_order
from simtgpu.verification.directed import FAULT_AFTER_WORK


@pytest.fixture(scope="module")
def dev():
    with Device(backend="rtl", config="tiny") as d:
        yield d


def test_vector_add_and_counters(dev):
    k = dev.load_module(example_asm("vector_add")).kernel("vector_add")
    rng = np.random.default_rng(3)
    n = 37
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    da, db, dc = dev.to_device(a), dev.to_device(b), dev.empty(n, np.float32)
    res = dev.launch(k, grid=-(-n // 8), block=8, args=(da, db, dc, n))
    assert np.array_equal(dc.to_host().view(np.uint32), (a + b).view(np.uint32))
    assert res.backend == "rtl" and res.cycles > 0
    # Same counts as the ISS runs the same launch.
    with Device(backend="iss", config="tiny") as iss:
        ki = iss.load_module(example_asm("vector_add")).kernel("vector_add")
        ia, ib, ic = iss.to_device(a), iss.to_device(b), iss.empty(n, np.float32)
        ri = iss.launch(ki, grid=-(-n // 8), block=8, args=(ia, ib, ic, n))
    assert (res.instructions, res.thread_instructions) == (ri.instructions,
                                                           ri.thread_instructions)


def test_fault_is_reported(dev):
    src = """
        .kernel bad
        .param  p, ptr
        movi    r1, 16
        ldg     r2, [r1]
        exit
        .end
"""
    k = dev.load_module(src).kernel("bad")
    with pytest.raises(KernelFault) as info:
        dev.launch(k, grid=1, block=4, args=(0,))
    assert info.value.record.cause.name == "OUT_OF_RANGE"
    assert info.value.record.pc % 4 == 0
    # The queue works again after the fault.
    test_vector_add_and_counters(dev)


def _fault_trace(dev):
    """Run FAULT_AFTER_WORK on ``dev`` with a trace; its fault record and trace lines (pcs
    from the module's start: the devices load it at different places)."""
    import io

    from simtgpu.sim.trace import read_trace

    mod = dev.load_module(FAULT_AFTER_WORK)
    out = dev.empty(8, np.int32)
    sink = io.StringIO()
    with pytest.raises(KernelFault) as info:
        dev.launch(mod.kernel("late"), grid=1, block=8, args=(out,), trace=sink)
    lines = read_trace(io.StringIO(sink.getvalue()))
    return info.value.record, [{**ln, "pc": ln["pc"] - mod.code_base} for ln in lines]


def test_fault_trace_keeps_the_older_instructions(dev):
    """An illegal word behind a store and two adds still in flight: the GPU stops at the
    fault, then drains, and the older instructions retire (as on the ISS), so the rtl
    backend's trace has every line the ISS's has, per warp in program order."""
    rtl_rec, rtl = _fault_trace(dev)
    with Device(backend="iss", config="tiny") as iss:
        iss_rec, want = _fault_trace(iss)
    assert (rtl_rec.cause, rtl_rec.warp, rtl_rec.lane_mask) == \
        (iss_rec.cause, iss_rec.warp, iss_rec.lane_mask)
    got_w, want_w = per_warp(rtl), per_warp(want)
    assert set(got_w) == set(want_w)
    for key, lines in want_w.items():
        want_pcs, got_pcs = (
            [ln["pc"] for ln in t] for t in program_order(lines, got_w[key]))
        assert got_pcs == want_pcs, key


def test_run_trace_matches_the_iss(tmp_path, capsys):
    """``simtgpu run --backend rtl --trace`` writes the ISS's trace format; per warp, in
    program order, the lines equal the ISS's (docs/trace-format.md)."""
    from simtgpu.cli.main import main
    from simtgpu.sim.trace import first_difference, read_trace

    traces = {}
    for backend in ("iss", "rtl"):
        path = tmp_path / f"{backend}.jsonl"
        assert main(["run", str(example_asm("vector_add")), "-k", "vector_add", "--grid", "3",
                     "--block", "8", "--config", "tiny", "--backend", backend,
                     "--arg", "a=f32[20]:rand", "b=f32[20]:rand", "c=f32[20]", "n=i32:20",
                     "--trace", str(path)]) == 0
        traces[backend] = read_trace(open(path))
    iss, rtl = traces["iss"], traces["rtl"]
    assert len(iss) == len(rtl) == 3 * 2 * 19
    ordered = []
    for key, lines in per_warp(iss).items():
        ordered += program_order(lines, per_warp(rtl)[key])[1]
    assert first_difference(iss, ordered, keys=("pc", "mask", "exec", "op", "rd", "values",
                                                "pd", "pvalues")) is None
    # the budget is the ISS's watchdog; the RTL refuses it rather than ignore it
    assert main(["run", str(example_asm("vector_add")), "-k", "vector_add", "--grid", "1",
                 "--block", "8", "--config", "tiny", "--backend", "rtl", "--budget", "10",
                 "--arg", "a=f32[8]:rand", "b=f32[8]:rand", "c=f32[8]", "n=i32:8"]) == 1
    assert "no instruction budget" in capsys.readouterr().err



NO_EXIT = """
        .kernel no_exit
        .param  p, ptr
""" + "        nop\n" * 16 + "        .end\n"
STORES_42 = """
        .kernel stores_42
        .param  p, ptr
        ldparam r1, p
        movi    r2, 42
        stg     [r1], r2
        exit
        .end
"""
JUMPS_BACK = """
        .kernel jumps_back
        .param  p, ptr
        bra     -64
        exit
        .end
"""
# more ways out (the ISA has no register-indirect jump): a branch past the end into the module
# loaded next, a reconvergence point outside the module reached by sync, and a divergent
# branch that sends lanes 0 and 1 out while 2 and 3 wait on the stack
JUMPS_AHEAD = """
        .kernel jumps_ahead
        .param  p, ptr
        bra     64
        exit
""" + "        nop\n" * 14 + "        .end\n"  # 64 bytes, the code alignment
SYNCS_OUT = """
        .kernel syncs_out
        .param  p, ptr
        ssy     64
        sync
        exit
        .end
"""
DIVERGES_OUT = """
        .kernel diverges_out
        .param  p, ptr
        movi    r2, 2
        s2r     r1, tid
        isetp.lt p0, r1, r2
   @p0  bra     64
        exit
        .end
"""


def _leave_module(d: Device) -> list[tuple[str, int, int]]:
    """A kernel without `exit` loaded just before one that stores 42, and a kernel that
    branches back before its module: each must fault when its pc leaves its module."""
    first, second = d.load_module(NO_EXIT), d.load_module(STORES_42)
    assert second.code_base == first.code_base + len(first.obj.code)  # it would fall in
    back = d.load_module(JUMPS_BACK)
    ahead, after = d.load_module(JUMPS_AHEAD), d.load_module(STORES_42)
    assert after.code_base == ahead.code_base + len(ahead.obj.code)  # bra 64 lands in it
    out = d.to_device(np.zeros(1, np.int32))
    seen = []
    for module, name in ((first, "no_exit"), (back, "jumps_back"), (ahead, "jumps_ahead"),
                         (d.load_module(SYNCS_OUT), "syncs_out"),
                         (d.load_module(DIVERGES_OUT), "diverges_out")):
        with pytest.raises(KernelFault) as info:
            d.launch(module.kernel(name), grid=1, block=4, args=(out,))
        # pcs relative to the module: the devices may have loaded other modules before
        seen.append((info.value.record.cause.name, info.value.record.pc - module.code_base,
                     int(out.to_host()[0])))
    return seen


def test_a_kernel_cannot_leave_its_module(dev):
    with Device(backend="iss", config="tiny") as iss:
        want = _leave_module(iss)
    assert want == [("PC_OUT_OF_RANGE", 0x40, 0),  # the word after the 16 nops
                    ("PC_OUT_OF_RANGE", -64, 0),  # 64 bytes before the module
                    ("PC_OUT_OF_RANGE", 64, 0),  # the next module's first word
                    ("PC_OUT_OF_RANGE", 64, 0),  # the ssy target
                    ("PC_OUT_OF_RANGE", 64, 0)]  # the taken lanes' target
    assert _leave_module(dev) == want
    test_vector_add_and_counters(dev)  # the device works on


def test_memory_settings_on_one_build(dev):
    """The DRAM model's settings on the driver's tiny model: the same results at every
    setting, slower memory costs cycles, and the bytes moved per cycle never exceed the
    setting's peak. Each setting reprograms the running model (no rebuild)."""
    from simtgpu.arch.config import memory_settings

    n = 256
    rng = np.random.default_rng(5)
    src = rng.integers(0, 1 << 31, 4 * n).astype(np.uint32)
    idx = rng.integers(0, 4 * n, n).astype(np.int32)
    cycles = {}
    k = dev.load_module(example_asm("gather")).kernel("gather")
    ds, di = dev.to_device(src), dev.to_device(idx)
    line = 4 * dev.config.lanes
    try:
        for name, memory in memory_settings(dev.config).items():
            dev.backend.sim.set_memory_timing(memory)
            do = dev.zeros(n, np.uint32)
            res = dev.launch(k, grid=n // 8, block=8, args=(ds, di, do, n))
            assert np.array_equal(do.to_host(), src[idx]), name
            moved = res.counters["mem_transactions"] * line
            assert moved / res.cycles <= memory.peak_bytes_per_cycle(line), name
            cycles[name] = res.cycles
    finally:
        dev.backend.sim.set_memory_timing(dev.config.memory_timing)  # back to ideal
    assert cycles["ideal"] < cycles["vortex"] < cycles["realistic"], cycles


def test_memory_setting_unknown():
    with pytest.raises(DriverError, match="unknown memory setting 'hbm'"):
        Device(backend="rtl", config="tiny", memory="hbm")


def test_run_cli_memory_option(capsys):
    from simtgpu.cli.main import main

    rc = main(["run", str(example_asm("vector_add")), "-k", "vector_add", "--grid", "2",
               "--block", "8", "--config", "tiny", "--backend", "rtl", "--memory", "realistic",
               "--arg", "a=f32[16]:arange", "b=f32[16]:fill(1)", "c=f32[16]", "n=i32:16",
               "--print", "c[:3]", "--stats"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "c[:3] = [1. 2. 3.]" in out
    assert "device memory        realistic: 50 cycles, 8 B/cycle, 32 in flight" in out


def test_hgemm_mma_on_the_matrix_unit(dev):
    """examples/asm/hgemm_mma.s on the RTL: bit for bit the reference order of numerics.mma
    (the ISS run and the float64 check are in tests/driver/test_hgemm_mma.py)."""
    from simtgpu.rtlsim.workload import hgemm_mma, hgemm_mma_reference

    rng = np.random.default_rng(5)
    a = rng.uniform(-2, 2, (8, 16)).astype(np.float16)
    b = rng.uniform(-2, 2, (16, 16)).astype(np.float16)
    got, res = hgemm_mma(dev, a, b)
    assert got.view(np.uint32).tolist() == hgemm_mma_reference(a, b, 4).tolist()
    assert res.backend == "rtl"


def test_random_mma_tiles_on_the_matrix_unit(dev):
    """A sample of verification/mma_check.py's random tiles (fp16 and bf16, specials and
    subnormals mixed in) through the RTL's mma, bit for bit against numerics.mma; the
    million-tile run is behind SIMTGPU_LONG=1 (test_million_mma_tiles)."""
    from simtgpu.verification.mma_check import check_mma_tiles

    r = check_mma_tiles(dev, 64, seed=1, batch=32)
    assert r["tiles"] == 64 and r["mismatches"] == 0, r["first"]


@pytest.mark.long  # the million-tile run, minutes
def test_million_mma_tiles():
    from simtgpu.verification.mma_check import check_mma_tiles

    with Device(backend="rtl", config="small") as d:
        r = check_mma_tiles(d, 1_000_000)
    assert r["mismatches"] == 0, r["first"]


def test_launch_watchdog_names_no_instruction(dev, capsys):
    """A kernel that never ends runs into the host interface's launch watchdog (2**24 cycles
    on ``tiny``), which stops the launch rather than an instruction: the record names none,
    and the report says so instead of disassembling the zero word at pc 0 (it had printed
    ``pc 0x0000 .word 0x00000000 ; illegal instruction`` with an empty lane mask). The device
    is usable afterwards."""
    from simtgpu.cli.run_cmd import fault_report
    from simtgpu.isa import FaultCause

    k = dev.load_module(".kernel spin\nL:  addi r1, r1, 1\n    bra L\n.end\n").kernel("spin")
    with pytest.raises(KernelFault) as e:
        dev.launch(k, grid=1, block=4)
    rec = e.value.record
    assert rec.cause is FaultCause.WATCHDOG and rec.lane_mask == 0 and rec.instruction == ""
    assert "watchdog of 16,777,216 cycles" in rec.detail
    report = fault_report(e.value)
    assert "pc" not in report and "illegal" not in report and "16,777,216 cycles" in report
    assert str(e.value).startswith("fault: WATCHDOG: in spin(); the launch ran longer")
    test_vector_add_and_counters(dev)


def test_an_unwritable_waveform_is_refused_before_the_run(tmp_path):
    """The model's tracer cannot report a file it failed to open (the run had ended with
    rc 0 and no waveform): the backend tries the path first and names it."""
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(DriverError, match=r"--waves .*a_file/w\.fst: cannot write it"):
        Device(backend="rtl", config="tiny", waves=blocker / "w.fst")
