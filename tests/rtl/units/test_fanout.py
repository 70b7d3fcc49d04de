"""The fan-out split before placing (rtlsim/fanout.py): on hand-made netlists, every load sees
the value it saw before (a LUT evaluator over random inputs, before and after), no driver
keeps more than the limit, and clocks and packed-with-the-driver loads stay where they are;
on a unit through yosys and nextpnr, the placed netlist has the copies and the report says so."""

import copy
import json
import random

import pytest
from amaranth import Module, Signal
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from simtgpu.cli import synth_cmd
from simtgpu.rtlsim import synth
from simtgpu.rtlsim.fanout import split_fanout

_IN = {"A": "input", "B": "input", "C": "input", "D": "input", "Z": "output"}
_FF = {"CLK": "input", "CE": "input", "DI": "input", "LSR": "input", "Q": "output"}


def _lut(init: int, a: int, b: int, c: int, d: int, z: int) -> dict:
    return {"type": "LUT4", "parameters": {"INIT": format(init, "016b")},
            "port_directions": dict(_IN),
            "connections": {"A": [a], "B": [b], "C": [c], "D": [d], "Z": [z]}}


def _ff(clk: int, ce: int, di: int, q: int) -> dict:
    return {"type": "TRELLIS_FF", "parameters": {"GSR": "DISABLED"},
            "port_directions": dict(_FF),
            "connections": {"CLK": [clk], "CE": [ce], "DI": [di], "LSR": ["0"], "Q": [q]}}


def _netlist(loads: int) -> dict:
    """Inputs 2..5 (bit 2 the clock); a LUT (bit 10) and a flip-flop (bit 11) each driving
    ``loads`` flip-flop enables and data; a PFUMX on the LUT; a gated clock (bit 12) clocking
    ``loads`` flip-flops."""
    cells = {"and": _lut(0x8888, 3, 4, 5, "0", 10),
             "src": _ff(2, "1", 3, 11),
             "gate": _lut(0xEEEE, 2, 4, "0", "0", 12),
             "mux": {"type": "PFUMX", "parameters": {}, "attributes": {},
                     "port_directions": {"ALUT": "input", "BLUT": "input", "C0": "input",
                                         "Z": "output"},
                     "connections": {"ALUT": [10], "BLUT": [11], "C0": [3], "Z": [13]}}}
    bit = 100
    for i in range(loads):
        cells[f"reg.bits[{i}]"] = _ff(2, 10, 11, bit)
        cells[f"gated.bits[{i}]"] = _ff(12, "1", 3, bit + 1)
        bit += 2
    nets = {"clk": [2], "a": [3], "b": [4], "c": [5], "en": [10], "src": [11], "gclk": [12],
            "mux": [13]}
    return {"modules": {"top": {
        "attributes": {"top": "00000000000000000000000000000001"},
        "ports": {n: {"direction": "input", "bits": nets[n]} for n in ("clk", "a", "b", "c")},
        "cells": cells,
        "netnames": {n: {"hide_name": 0, "bits": b, "attributes": {}} for n, b in nets.items()}}}}


def _load_values(netlist: dict, inputs: dict[int, int]) -> dict[tuple[str, str], int]:
    """The value at every cell input, LUTs evaluated from their INIT, flip-flop outputs as
    ``inputs`` gives them (a flip-flop copy takes its original's value: the same cell)."""
    top = netlist["modules"]["top"]
    cells = top["cells"]
    driver = {c["connections"][p][0]: (n, p) for n, c in cells.items()
              for p, d in c["port_directions"].items() if d == "output"}

    def value(bit) -> int:
        if isinstance(bit, str):
            return int(bit)
        if bit not in driver:
            return inputs[bit]
        name, _ = driver[bit]
        cell = cells[name]
        original = name.split("$fanout")[0]  # a copy's state is its original's
        if cell["type"] == "TRELLIS_FF":
            return inputs[cells[original]["connections"]["Q"][0]]
        if cell["type"] == "PFUMX":
            con = cell["connections"]
            return value(con["BLUT"][0] if value(con["C0"][0]) else con["ALUT"][0])
        con, init = cell["connections"], cell["parameters"]["INIT"]
        index = sum(value(con[p][0]) << i for i, p in enumerate("ABCD"))
        return int(init[15 - index])

    return {(n, p): value(c["connections"][p][0]) for n, c in cells.items()
            for p, d in c["port_directions"].items() if d == "input"}


def test_every_load_sees_the_same_value_and_no_driver_keeps_too_many() -> None:
    before = _netlist(loads=10)
    after = copy.deepcopy(before)
    splits = split_fanout(after, max_fanout=3)
    # the LUT: 10 enables + the PFUMX (which stays) -> 11 loads; the flip-flop: 10 data + the
    # PFUMX's other input; the gated clock is not split
    assert {(s.net, s.cell_type, s.loads) for s in splits} == {("en", "LUT4", 11),
                                                              ("src", "TRELLIS_FF", 11)}
    # the original keeps 3 (the PFUMX one), its copies 3, 3 and 2
    assert all(s.copies == 3 for s in splits)
    rng = random.Random(5)
    ffq = [c["connections"]["Q"][0] for c in before["modules"]["top"]["cells"].values()
           if c["type"] == "TRELLIS_FF"]
    for _ in range(20):
        inputs = {b: rng.getrandbits(1) for b in [2, 3, 4, 5, *ffq]}
        seen, was = _load_values(after, inputs), _load_values(before, inputs)
        assert {k: seen[k] for k in was} == was  # (the copies' own inputs: their originals')
    cells = after["modules"]["top"]["cells"]
    users: dict[int, int] = {}
    for c in cells.values():
        for p, d in c["port_directions"].items():
            if d == "input":
                for b in c["connections"][p]:
                    users[b] = users.get(b, 0) + 1
    drivers = [c["connections"]["Z" if c["type"] == "LUT4" else "Q"][0] for c in cells.values()
               if c["type"] in ("LUT4", "TRELLIS_FF")]
    clock = cells["gate"]["connections"]["Z"][0]
    assert max(users.get(b, 0) for b in drivers if b != clock) <= 3
    assert users[clock] == 10  # the clock keeps its one driver
    assert cells["mux"]["connections"]["ALUT"] == [10]  # packed with its LUT: stays
    # neighbouring bits of one register share a copy (grouped by name, in index order)
    assert cells["reg.bits[2]"]["connections"]["CE"] == cells["reg.bits[4]"]["connections"]["CE"]
    assert cells["reg.bits[4]"]["connections"]["CE"] != cells["reg.bits[5]"]["connections"]["CE"]
    assert split_fanout(copy.deepcopy(before), max_fanout=20) == []
    with pytest.raises(ValueError, match="at least 2"):
        split_fanout(copy.deepcopy(before), max_fanout=1)


class _WideEnable(wiring.Component):
    """A 48-bit register loaded under one enable worked out from two inputs: a LUT with 48
    flip-flop enables."""

    a: In(1)
    b: In(1)
    d: In(48)
    q: Out(48)

    def elaborate(self, platform) -> Module:
        m = Module()
        a, b, d = Signal(), Signal(), Signal(48)
        m.d.sync += [a.eq(self.a), b.eq(self.b), d.eq(self.d)]
        with m.If(a ^ b):
            m.d.sync += self.q.eq(d)
        return m


def test_the_flow_places_the_split_netlist_and_reports_it(tmp_path) -> None:
    text = verilog.convert(_WideEnable(), name="top", emit_src=False)
    res = synth.synthesize_verilog("wide", text, "top", tmp_path, freq_mhz=50,
                                   progress=lambda s: None, max_fanout=16, pack_only=True)
    assert res.max_fanout == 16
    enable = [f for f in res.fanout if f.loads >= 48]
    assert enable and enable[0].copies == 2, res.fanout  # 48 loads: the original and 2 copies
    placed = json.loads((tmp_path / synth.FANOUT_NETLIST).read_text())
    yosys = json.loads((tmp_path / "netlist.json").read_text())
    count = sum(len(m["cells"]) for m in placed["modules"].values())
    assert count == sum(len(m["cells"]) for m in yosys["modules"].values()) \
        + sum(f.copies for f in res.fanout)
    # nextpnr packed the copies: its LUT count is yosys' and the LUT copies
    luts = res.cells["LUT4"] + sum(f.copies for f in res.fanout if f.cell_type == "LUT4")
    assert res.packed["TRELLIS_COMB"][0] >= luts
    again = synth.load_result("wide", "top", tmp_path)
    assert (again.max_fanout, again.fanout) == (16, res.fanout)
    note = "\n".join(synth_cmd._fanout_note(again))
    assert "more than 16 loads" in note and "2 copies of 1 driver," in note, note
    off = synth.synthesize_verilog("wide", text, "top", tmp_path / "off", freq_mhz=50,
                                   progress=lambda s: None, max_fanout=None, pack_only=True)
    assert off.fanout == [] and not (tmp_path / "off" / synth.FANOUT_NETLIST).exists()
    assert off.packed["TRELLIS_COMB"][0] < res.packed["TRELLIS_COMB"][0]


def test_a_limit_of_one_load_is_refused() -> None:
    from simtgpu.cli.main import main

    with pytest.raises(SystemExit, match="2 or more"):
        main(["synth", "--max-fanout", "1"])
    with pytest.raises(ValueError, match="2 or more"):
        synth.synthesize_verilog("x", "", "top", synth.Path("/nonexistent"), max_fanout=1)

