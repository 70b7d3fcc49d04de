"""The driver's rtl backend: launches through the command queue and the MMIO host interface
of the Verilator model, results checked against NumPy, faults reported as on the ISS."""

from __future__ import annotations

import numpy as np
import pytest
from simtgpu.assembler.examples import example_asm
from simtgpu.driver_model.device import Device
from simtgpu.sim import KernelFault
from simtgpu.sim.trace import per_warp


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


def test_run_trace_matches_the_iss(tmp_path, capsys):
    """``simtgpu run --backend rtl --trace`` writes the ISS's trace format; per warp, in
    program order, the lines equal the ISS's (docs/trace-format.md)."""
    from simtgpu.cli.main import main
    from simtgpu.sim.trace import first_difference, read_trace
    from simtgpu.verification.compare import program_order

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

