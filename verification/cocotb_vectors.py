"""cocotb test module: play input vectors into a unit on Verilator and record its outputs.

The vectors and the playing mode come from files written by :mod:`simtgpu.verification.units`
(``SIMTGPU_VECTORS``: an ``.npz`` of input arrays plus a JSON ``spec``); the outputs go back to
``$SIMTGPU_RUN_DIR/outputs.pkl``. The module knows nothing of what a unit should compute: the
Python side compares the recorded outputs with the reference model, so one player serves the
ALU, the multiplier, the FPU and the SFU.

Modes:

* ``comb``: a combinational unit, one vector per nanosecond.
* ``pipe``: a pipelined unit with an ``en`` input and a fixed ``latency``: one vector per
  cycle, the result of vector ``i`` is sampled ``latency`` cycles later.
* ``start_done``: a multi-cycle unit that takes ``start`` and pulses ``done``, one vector at
  a time.
* ``cycle``: a stateful unit, one vector per cycle and every output sampled every cycle.
  Vector ``i`` is driven on the falling edge that opens cycle ``i`` (the first after reset);
  the outputs are sampled 1 ns later, well before the rising edge that ends the cycle. So
  sample ``i`` is the combinational response to vector ``i`` with the state that the rising
  edges before it left (registered outputs show what edge ``i - 1`` stored); the edge after
  the sample commits vector ``i``. A Python cycle model that computes "outputs of cycle
  ``i``, then the next state" lines up with the samples one to one.

Inputs are driven on the falling clock edge, so both sides of every rising edge are
unambiguous. Ports wider than 64 bits (flattened structs and arrays) arrive as Python ints.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge, Timer


def _load() -> tuple[dict, dict[str, np.ndarray]]:
    # wide columns are object arrays of Python ints, which np.savez pickles
    data = np.load(os.environ["SIMTGPU_VECTORS"], allow_pickle=True)
    spec = json.loads(str(data["spec"]))
    return spec, {name: data[name] for name in spec["inputs"]}


def _save(spec: dict, outputs: dict[str, list[int]]) -> None:
    """Outputs as Python ints (a port may be wider than 64 bits, e.g. a control word)."""
    out = Path(os.environ["SIMTGPU_RUN_DIR"]) / "outputs.pkl"
    with open(out, "wb") as fh:
        pickle.dump(outputs, fh)


@cocotb.test()
async def play_vectors(dut) -> None:
    """Drive every vector, record every output."""
    spec, inputs = _load()
    n = len(next(iter(inputs.values())))
    names_in = list(spec["inputs"])
    names_out = list(spec["outputs"])
    ports_in = [getattr(dut, name) for name in names_in]
    ports_out = [getattr(dut, name) for name in names_out]
    cols = [inputs[name].tolist() for name in names_in]
    outputs: dict[str, list[int]] = {name: [] for name in names_out}
    mode = spec["mode"]
    for name, value in spec["defaults"].items():  # inputs not driven, at their declared init
        getattr(dut, name).value = value

    def drive(i: int) -> None:
        for port, col in zip(ports_in, cols, strict=True):
            port.value = col[i]

    def sample() -> None:
        for name, port in zip(names_out, ports_out, strict=True):
            outputs[name].append(int(port.value))

    async def drive_and_sample(i: int) -> None:
        drive(i)
        await Timer(1, "ns")
        sample()

    if mode == "comb":
        for i in range(n):
            await drive_and_sample(i)
        _save(spec, outputs)
        return

    clk = dut.clk
    cocotb.start_soon(Clock(clk, 10, "ns").start())
    dut.rst.value = 1
    for port in ports_in:
        port.value = 0
    await FallingEdge(clk)
    await FallingEdge(clk)
    dut.rst.value = 0

    if mode == "pipe":
        latency = int(spec["latency"])
        dut.en.value = 1
        for i in range(n + latency):
            await FallingEdge(clk)
            if i >= latency:
                sample()
            if i < n:
                drive(i)
        _save(spec, outputs)
        return

    if mode == "start_done":
        latency = int(spec.get("latency", 0))
        cycles = []
        for i in range(n):
            await FallingEdge(clk)
            drive(i)
            dut.start.value = 1
            await FallingEdge(clk)
            dut.start.value = 0
            waited = 1
            while not int(dut.done.value):
                await RisingEdge(clk)
                await FallingEdge(clk)
                waited += 1
                assert waited < 10_000, f"vector {i}: done never rose"
            cycles.append(waited)
            sample()
        outputs["_cycles"] = cycles
        if latency:
            assert all(c == cycles[0] for c in cycles), "latency differs between vectors"
        _save(spec, outputs)
        return

    if mode == "cycle":
        for i in range(n):
            await FallingEdge(clk)
            await drive_and_sample(i)
        _save(spec, outputs)
        return

    raise AssertionError(f"unknown mode {mode!r}")
