"""The synthesis flow (``simtgpu synth``) on one small unit: yosys ``synth_ecp5``, what the
memories become, nextpnr-ecp5 out of context, Fmax and the critical path; and the report
helpers on hand-made inputs. The whole GPU is ``make synth``'s (minutes), not the regression's."""

import json
import re

import pytest
from amaranth import Module, Signal
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from simtgpu.cli import synth_cmd
from simtgpu.rtl.alu import Alu
from simtgpu.rtl.multiplier import Multiplier
from simtgpu.rtl.regfile import RegFile
from simtgpu.rtl.replica import replicas
from simtgpu.rtl.scheduler import RoundRobin
from simtgpu.rtl.shared_memory import SharedMemory
from simtgpu.rtlsim import path_estimate, synth


def test_shared_memory_banks_become_block_ram(tmp_path) -> None:
    # 4 banks of 256 words x 32 bits: one DP16KD (as 512 x 36) each, no RAM word in flip-flops
    text = verilog.convert(SharedMemory(4, 4096), name="shared", emit_src=False)
    res = synth.synthesize_verilog("shared", text, "shared", tmp_path, place=False,
                                   progress=lambda s: None)
    assert dict(res.memories) == {f"bank{b}.ram": "block RAM (DP16KD, 512 x 36 pseudo-dual-port)"
                                  for b in range(4)}
    assert res.cells["DP16KD"] == 4
    assert res.cells.get("TRELLIS_FF", 0) < 4 * 256  # far fewer than one per RAM bit
    assert res.fmax_mhz is None and set(res.stage_seconds) == {"yosys"}
    # nothing to place, so only the per-unit synthesis ran: its totals are the design's
    assert not res.flattened and res.cells == res.unit_cells
    assert not (tmp_path / "netlist.json").exists()
    # --report-only reads the same figures back from the work directory
    again = synth.load_result("shared", "shared", tmp_path)
    assert (again.cells, again.units, again.memories) == (res.cells, res.units, res.memories)
    # --paths needs the flattened netlist, which a run that places (or --synth-only) writes
    from argparse import Namespace

    from simtgpu.cli.synth_cmd import _print_paths
    with pytest.raises(SystemExit, match="--paths needs the flattened netlist"):
        _print_paths(tmp_path, res, Namespace(freq=100.0, paths=5))


class _Registered(wiring.Component):
    """A round-robin picker between registers: the smallest design with a sub-unit on its
    critical path."""
    request: In(8)
    grant: Out(3)

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.sch = rr = RoundRobin(8)
        req = Signal(8)
        m.d.sync += [req.eq(self.request), self.grant.eq(rr.grant)]
        m.d.comb += [rr.request.eq(req), rr.advance.eq(rr.found)]
        return m


def test_place_and_route_gives_fmax_and_path(tmp_path) -> None:
    text = verilog.convert(_Registered(), name="top", emit_src=False)
    res = synth.synthesize_verilog("rr", text, "top", tmp_path, freq_mhz=50,
                                   progress=lambda s: None)
    assert dict(res.units)["sch"].get("TRELLIS_FF", 0) >= 3  # the round-robin pointer
    assert res.fmax_mhz is not None and 50 < res.fmax_mhz < 1000
    # the path's delays add up to the clock period nextpnr reports
    assert abs(sum(s.delay_ns for s in res.path) - 1000 / res.fmax_mhz) < 0.05
    assert "sch" in {s.unit for s in res.path}
    assert set(res.stage_seconds) == {"yosys", "nextpnr"}
    # the placer weighed timing as the flow sets it, and a report of the run says so again
    assert res.timing_weight == synth.PLACER_TIMING_WEIGHT
    assert synth.load_result("rr", "top", tmp_path).timing_weight == synth.PLACER_TIMING_WEIGHT
    assert res.speed_grade == synth.load_result("rr", "top", tmp_path).speed_grade == 6
    # the slack histogram's worst bin starts at the critical path's slack, and the report's
    # count of endpoints slower than a clock agrees with the Fmax on both sides of it
    worst_ps = 1e6 / res.target_mhz - 1e6 / res.fmax_mhz
    assert abs(res.slack[0].lo_ps - worst_ps) < 10, (res.slack[0], worst_ps)
    assert res.endpoints_slower_than(res.fmax_mhz * 0.99) == (0, 0)
    assert res.endpoints_slower_than(res.fmax_mhz * 1.01)[1] >= 1
    assert res.endpoints[0] >= 3  # the pointer's flip-flops at least (a path from a register)
    # the latest endpoint of any unit is the critical path's end: it lands within the period
    # (its setup after it), and later than every other unit's
    period = 1000 / res.fmax_mhz
    assert res.slowest and period - 1.0 < res.slowest[0].arrival_ns <= period + 0.01
    assert res.slowest == synth.load_result("rr", "top", tmp_path).slowest
    # nextpnr placed the flattened netlist (one module, the round robin's logic inside it),
    # whose flip-flops are counted (the per-unit synthesis named the sub-unit: above)
    netlist = json.loads((tmp_path / "netlist.json").read_text())["modules"]
    design = {m for m, v in netlist.items()
              if not {"blackbox", "whitebox"} & set(v.get("attributes", {}))}
    assert res.flattened and design == {"top"}
    assert res.cells["TRELLIS_FF"] == res.unit_cells["TRELLIS_FF"] >= 8 + 3
    # the estimate before placement ranks the same netlist's paths: its slowest is within a
    # factor of two of the routed one, and ends at a register nextpnr's path could end at
    ends = path_estimate.estimate_file(tmp_path / "netlist.json")
    assert 0.5 < ends[0].arrival / (1000 / res.fmax_mhz) < 2, (ends[0], res.fmax_mhz)
    assert ends[0].kind == "FF" and ends[0].levels >= 2


_SLACK_LOG = """\
Info: Slack histogram:
Info:  legend: * represents 10 endpoint(s)
Info:          + represents [1,10) endpoint(s)
Info: [ -3000,  -1000) |**+
Info: [ -1000,   1000) |*
Info: [  1000,   3000) |***
Info: [  3000,   5000) |+

Info: Program finished normally.
"""


def test_slowest_units_name_the_paths_behind_the_critical_one() -> None:
    """Each unit's (and stage's) latest arrival, latest first, from the detailed timing
    report's [routing delay, arrival] pairs (hand-made here); a report whose delays are single
    numbers (no arrival) gives none; the report prints each as a row."""
    report = {"detailed_net_timings": [
        {"net": "a", "endpoints": [
            {"cell": "core0.lsu.x_TRELLIS_FF_Q", "delay": [0.5, 7.0]},
            {"cell": "l2.bank0.y_TRELLIS_FF_Q", "delay": [2.0, 8.5]}]},
        {"net": "b", "endpoints": [
            {"cell": "core0.lsu.z_TRELLIS_FF_Q", "delay": [0.1, 9.25]},
            {"cell": "host.w_TRELLIS_FF_Q", "delay": [0.3, 3.0]}]}]}
    got = synth.slowest_units(report, "gpu", count=2)
    assert [(a.unit, a.endpoint, a.arrival_ns) for a in got] == [
        ("core0.lsu", "core0.lsu.z_TRELLIS_FF_Q", 9.25),
        ("l2.bank0", "l2.bank0.y_TRELLIS_FF_Q", 8.5)]
    assert [a.unit for a in synth.slowest_units(report, "gpu")] == [
        "core0.lsu", "l2.bank0", "host"]
    res = synth.SynthResult("tiny", "ecp5", {}, [], [], target_mhz=100.0, fmax_mhz=90.0,
                            slowest=got)
    text = synth_cmd.render(res, "simtgpu synth", {"commit": "c", "date": "d"})
    assert (f"| `core0.lsu` | {got[0].stage} | `core0.lsu.z_TRELLIS_FF_Q` | 9.25 | 108.1 |"
            in text)
    report["detailed_net_timings"][0]["endpoints"][0]["delay"] = 7.0
    assert synth.slowest_units(report, "gpu") == []


def test_slack_histogram_counts_the_endpoints_slower_than_a_clock() -> None:
    """A histogram of a run constrained to 100 MHz (10 ns), counted by hand: 21 to 29
    endpoints between 3 and 1 ns behind, 10 within 1 ns, 30 ahead by 1 to 3 ns, 1 to 9 more."""
    bins = synth.slack_histogram("Info: Slack histogram:\n(after placing)\n" + _SLACK_LOG)
    assert bins == [synth.SlackBin(-3000, -1000, 21, 29), synth.SlackBin(-1000, 1000, 10, 10),
                    synth.SlackBin(1000, 3000, 30, 30), synth.SlackBin(3000, 5000, 1, 9)]
    res = synth.SynthResult("t", "ecp5", {}, [], [], target_mhz=100.0, fmax_mhz=77.0,
                            slack=bins)
    assert res.endpoints == (62, 78)
    # 100 MHz: the first bin is behind, the second straddles the line (0 ps)
    assert res.endpoints_slower_than(100) == (21, 39)
    # 1e6/12000 MHz (12 ns): the line is at -2 ns, inside the first bin
    assert res.endpoints_slower_than(1e6 / 12000) == (0, 29)
    # 1e6/13000 MHz (13 ns): the line is at the first bin's start: none slower
    assert res.endpoints_slower_than(1e6 / 13000) == (0, 0)
    # 1e6/9000 MHz (9 ns): the line is at +1 ns, the end of the straddling bin
    assert res.endpoints_slower_than(1e6 / 9000) == (31, 39)
    assert synth.slack_histogram("Info: Program finished normally.\n") == []
    # the report's table of clocks: 100, 90 (11.1 ns: line at -1.1 ns), 84.7 (1.1 x Fmax:
    # 11.8 ns, line at -1.8 ns), 80 (12.5 ns: line at -2.5 ns); 70 MHz is below the Fmax
    res.config, res.routed = "tiny", True
    text = synth_cmd.render(res, "simtgpu synth", {"commit": "c", "date": "d"})
    assert "of 62 to 78 in all" in text and "bins 2000 ps wide" in text
    table = text.split("| clock | endpoints slower | share |")[1].split("\n\n")[0]
    assert [r.split(" | ")[:2] for r in table.strip().splitlines()[1:]] == [
        ["| 100.0 MHz", "21 to 39"], ["| 90.0 MHz", "0 to 29"], ["| 84.7 MHz", "0 to 29"],
        ["| 80.0 MHz", "0 to 29"]]


def test_the_speed_grade_reaches_nextpnr(tmp_path) -> None:
    """The same design, seed and constraint timed at the fastest grade (-8) closes faster
    than at the slowest (-6), and each run records and reports its grade."""
    text = verilog.convert(_Registered(), name="top", emit_src=False)
    runs = {g: synth.synthesize_verilog("rr", text, "top", tmp_path / str(g), freq_mhz=50,
                                        progress=lambda s: None, speed=g) for g in (6, 8)}
    assert runs[8].fmax_mhz > runs[6].fmax_mhz * 1.05, {g: r.fmax_mhz for g, r in runs.items()}
    assert synth.load_result("rr", "top", tmp_path / "8").speed_grade == 8
    runs[8].config = "tiny"
    assert "--speed 8" in synth_cmd.render(runs[8], "c", {"commit": "c", "date": "d"})
    assert synth.nextpnr_options(50, 1)[:3] == ["--85k", "--speed", "6"]
    with pytest.raises(ValueError, match="speed must be one of"):
        synth.synthesize_verilog("rr", text, "top", tmp_path / "5", speed=5)
    assert not (tmp_path / "5").exists()  # refused before anything was written


def test_the_placed_netlist_can_be_mapped_by_abc9(tmp_path) -> None:
    """``mapper="abc9"``: the flattened netlist by synth_ecp5's ABC9 (its log says so), the
    area by unit still ABC's; the choice is recorded, read back and named in the report."""
    text = verilog.convert(_Registered(), name="top", emit_src=False)
    res = synth.synthesize_verilog("rr", text, "top", tmp_path, place=False, flatten=True,
                                   progress=lambda s: None, mapper="abc9")
    assert res.mapper == "abc9" and res.flattened and res.cells.get("LUT4", 0) > 0
    flat_log = (tmp_path / "yosys_flat.log").read_text()
    unit_log = (tmp_path / "yosys.log").read_text()
    assert "Executing ABC9_EXE pass" in flat_log and "Executing ABC pass" not in flat_log
    assert "Executing ABC pass" in unit_log and "Executing ABC9_EXE pass" not in unit_log
    assert synth.load_result("rr", "top", tmp_path).mapper == "abc9"
    res.config = "tiny"
    assert "mapped by ABC9" in synth_cmd.render(res, "c", {"commit": "c", "date": "d"})
    plain = synth.synthesize_verilog("rr", text, "top", tmp_path, place=False, flatten=True,
                                     progress=lambda s: None)
    assert plain.mapper == "abc" and synth.load_result("rr", "top", tmp_path).mapper == "abc"
    with pytest.raises(ValueError, match="mapper must be one of"):
        synth.synthesize_verilog("rr", text, "top", tmp_path / "x", mapper="abc10")
    with pytest.raises(synth.SynthError, match="the generic flow .* maps none"):
        synth.synthesize_verilog("rr", text, "top", tmp_path / "x", flow="generic",
                                 mapper="abc9")


def test_nextpnr_is_asked_to_weigh_timing() -> None:
    """The placer's timing weight reaches nextpnr's command line (its log does not echo it)."""
    opts = synth.nextpnr_options(50, 2)
    i = opts.index("--placer-heap-timingweight")
    assert opts[i + 1] == str(synth.PLACER_TIMING_WEIGHT) != "10"  # nextpnr's own default
    assert opts[opts.index("--seed") + 1] == "2" and "--no-route" not in opts
    opts = synth.nextpnr_options(50, 1, timing_weight=12, route=False)
    assert opts[opts.index("--placer-heap-timingweight") + 1] == "12" and "--no-route" in opts


def _cell(kind: str, **conn) -> dict:
    dirs = {"LUT4": {"Z"}, "CCU2C": {"S0", "S1", "COUT"}, "TRELLIS_FF": {"Q"},
            "DP16KD": {"DOA0"}, "ALU54B": {"R0"}}[kind]
    return {"type": kind, "connections": {k: v for k, v in conn.items()},
            "port_directions": {k: "output" if k in dirs else "input" for k in conn}}


def _netlist() -> dict:
    """FF a -> LUT -> LUT -> carry cell -> (chain) carry cell -> FF b; the second LUT also
    addresses a block RAM, whose output feeds FF c; FF b drives the output port."""
    cells = {
        "a_TRELLIS_FF_Q": _cell("TRELLIS_FF", CLK=[2], DI=[3], CE=["1"], LSR=["0"], Q=[4]),
        "x_LUT4_Z": _cell("LUT4", A=[4], B=[3], C=["0"], D=["0"], Z=[5]),
        "y_LUT4_Z": _cell("LUT4", A=[5], B=[4], C=["0"], D=["0"], Z=[6]),
        "s_CCU2C": _cell("CCU2C", A0=[6], B0=["0"], C0=["0"], D0=["0"], A1=["0"], B1=["0"],
                         C1=["0"], D1=["0"], CIN=["0"], COUT=[7], S0=[8], S1=[9]),
        "t_CCU2C": _cell("CCU2C", A0=["0"], B0=["0"], C0=["0"], D0=["0"], A1=["0"],
                         B1=["0"], C1=["0"], D1=["0"], CIN=[7], COUT=[13], S0=[11], S1=[14]),
        "b_TRELLIS_FF_Q_3": _cell("TRELLIS_FF", CLK=[2], DI=[11], CE=["1"], LSR=["0"],
                                  Q=[10]),
        "ram": _cell("DP16KD", CLKA=[2], ADA0=[6], DOA0=[12]),
        "c_TRELLIS_FF_Q": _cell("TRELLIS_FF", CLK=[2], DI=[12], CE=["1"], LSR=["0"], Q=[15]),
    }
    ports = {"clk": {"direction": "input", "bits": [2]}, "din": {"direction": "input",
                                                                  "bits": [3]},
             "dout": {"direction": "output", "bits": [10]}}
    names = {"a": {"bits": [4]}, "mid": {"bits": [5, 6]}, "b": {"bits": [10]}}
    return {"modules": {"top": {"attributes": {"top": "00000000000000000000000000000001"},
                                "ports": ports, "cells": cells, "netnames": names}}}


def test_path_estimate_adds_the_model_delays_along_each_path() -> None:
    d = path_estimate.Delays()
    ends = {e.name: e for e in path_estimate.estimate(_netlist())}
    a = d.clk_to_q
    lut2 = max(a + d.route + d.lut, a) + d.route + d.lut  # through both LUTs
    chain = lut2 + d.route + d.carry_in + d.carry_sum  # into the first cell, along the chain
    assert ends["b"].arrival == pytest.approx(chain + d.route)
    assert ends["b"].levels == 4
    assert ends["b"].path[0] == "a" and ends["b"].path[-1] == "b"
    assert ends["ram"].kind == "BRAM"
    assert ends["ram"].arrival == pytest.approx(lut2 + d.route + d.setup_bram)
    assert ends["c"].arrival == pytest.approx(d.bram_clk_to_out + d.route)
    assert ends["dout"].arrival == pytest.approx(a + d.route)
    # an input port starts at zero: FF a's data comes straight from it
    assert ends["a"].arrival == pytest.approx(d.route) and ends["a"].levels == 0
    ranked = path_estimate.estimate(_netlist())
    assert [e.name for e in ranked][:2] == ["b", "c"]  # slowest first
    text = path_estimate.render(ranked, "top", 5.0, count=3)
    assert "2 of 5 endpoints" in text and "`b`" in text and "`dout`" not in text


def test_path_estimate_names_what_it_cannot_read() -> None:
    bad = _netlist()
    bad["modules"]["top"]["cells"]["x_LUT4_Z"]["type"] = "ALU54B"  # a cell it has no model of
    with pytest.raises(path_estimate.NetlistError, match="ALU54B"):
        path_estimate.estimate(bad)
    two = _netlist()
    two["modules"]["other"] = two["modules"]["top"]
    with pytest.raises(path_estimate.NetlistError, match="one top module"):
        path_estimate.estimate(two)


def test_place_only_gives_the_fit_and_an_estimate(tmp_path) -> None:
    # --place-only: nextpnr --no-route, whose report has no Fmax; the estimate it printed
    # after placing and its packed utilisation come from its log, also on --report-only
    text = verilog.convert(_Registered(), name="top", emit_src=False)
    res = synth.synthesize_verilog("rr", text, "top", tmp_path, freq_mhz=50, route=False,
                                   progress=lambda s: None)
    assert not res.routed and res.path == [] and res.target_mhz == 50
    assert res.fmax_mhz is not None and 50 < res.fmax_mhz < 1000
    used, cap = res.packed["TRELLIS_COMB"]
    assert 0 < used < 200 and cap == synth.ECP5_85F["LUT4"]
    assert res.packed["TRELLIS_FF"][0] >= 3 + 8  # the pointer and the request register
    again = synth.load_result("rr", "top", tmp_path)
    assert (again.fmax_mhz, again.routed, again.target_mhz, again.packed) == \
        (res.fmax_mhz, False, 50, res.packed)


def test_pack_only_gives_the_fit_without_a_placement(tmp_path) -> None:
    # --pack-only: nextpnr stops after packing; the packed cells (the fit) come from its log,
    # there is no Fmax, and a report of the same directory says so again
    text = verilog.convert(_Registered(), name="top", emit_src=False)
    res = synth.synthesize_verilog("rr", text, "top", tmp_path, freq_mhz=50, pack_only=True,
                                   progress=lambda s: None)
    assert not res.placed and not res.routed and res.fmax_mhz is None and res.path == []
    assert "--pack-only" in synth.nextpnr_options(50, 1, pack_only=True)
    used, cap = res.packed["TRELLIS_COMB"]
    assert 0 < used < 200 and cap == synth.ECP5_85F["LUT4"]
    assert res.packed["TRELLIS_FF"][0] >= 3 + 8  # the pointer and the request register
    again = synth.load_result("rr", "top", tmp_path)
    assert (again.placed, again.fmax_mhz, again.packed) == (False, None, res.packed)
    again.config = "tiny"  # the table's heading describes a configuration
    info = {"commit": "c", "date": "d"}
    body = synth_cmd.render(again, "simtgpu synth --pack-only", info)
    assert "**Packed, not placed** (`--pack-only`): the design fits" in body
    assert synth_cmd._fit_status(again, "tiny") == 0
    again.packed["TRELLIS_COMB"] = (90_000, cap)
    body = synth_cmd.render(again, "simtgpu synth --pack-only", info)
    assert f"**does not fit** (TRELLIS_COMB 90,000 of {cap:,})" in body
    assert synth_cmd._fit_status(again, "tiny") == 1  # the command's exit status


def test_the_flow_stops_at_one_step() -> None:
    from simtgpu.cli.main import main

    with pytest.raises(SystemExit, match="give one"):
        main(["synth", "--pack-only", "--place-only"])


def test_a_design_that_does_not_place_is_named(tmp_path, monkeypatch) -> None:
    # nextpnr's "no legal placement" becomes an error naming the design and the overfull cells
    log = ("Info: Device utilisation:\nInfo: \t        TRELLIS_COMB:   86172/  83640   103%\n"
           "Info: \t          TRELLIS_FF:   17677/  83640    21%\n\n"
           "ERROR: Unable to find legal placement for all cells, design is probably at "
           "utilisation limit.\n")

    def fake_run(cmd, path, what):
        path.write_text(log)
        raise synth.SynthError(f"{what} failed (exit 255)")

    monkeypatch.setattr(synth, "_run", fake_run)
    monkeypatch.setattr(synth, "_tool", lambda name: [name])
    res = synth.SynthResult("tiny", "ecp5", {"LUT4": 80_000}, [], [])
    with pytest.raises(synth.SynthError, match=r"tiny does not fit the ECP5-85F: nextpnr found "
                       r"no legal placement \(TRELLIS_COMB 86,172 of 83,640 \(103.0 %\)\)"):
        synth._pnr_stage(res, "tiny", "gpu", tmp_path, 100.0, 1, lambda s: None,
                         lambda *a: None, max_fanout=None)


def test_register_file_read_ports_are_ram_copies(tmp_path) -> None:
    # 3 read ports, 1 write port: each lane's RAM is held three times (one copy per read
    # port), generic synthesis shows the words as memories, not registers
    text = verilog.convert(RegFile(2, 4), name="regfile", emit_src=False)
    res = synth.synthesize_verilog("regfile", text, "regfile", tmp_path, flow="generic",
                                   progress=lambda s: None)
    assert res.cells.get("$mem_v2", 0) == 4  # one per lane, 64 words each
    assert res.fmax_mhz is None


class _Copies(wiring.Component):
    """One byte registered twice for two readers: as replicas, or as two plain registers."""
    a: In(8)
    o0: Out(8)
    o1: Out(8)

    def __init__(self, replicated: bool):
        self.replicated = replicated
        super().__init__()

    def elaborate(self, platform) -> Module:
        m = Module()
        if self.replicated:
            r0, r1 = replicas(m, self.a, 2, "a_q")
        else:
            r0, r1 = Signal(8), Signal(8)
            m.d.sync += [r0.eq(self.a), r1.eq(self.a)]
        m.d.comb += [self.o0.eq(r0), self.o1.eq(r1)]
        return m


@pytest.mark.parametrize("replicated, flip_flops", [(False, 8), (True, 16)])
def test_register_replicas_survive_synthesis(tmp_path, replicated, flip_flops) -> None:
    # yosys merges two registers with the same input; the flow keeps marked replicas apart
    text = verilog.convert(_Copies(replicated), name="copies", emit_src=False)
    res = synth.synthesize_verilog("copies", text, "copies", tmp_path, place=False,
                                   progress=lambda s: None)
    assert res.cells["TRELLIS_FF"] == flip_flops


def test_replicas_need_a_copy() -> None:
    with pytest.raises(ValueError, match="copies must be at least 1"):
        replicas(Module(), Signal(), 0, "x")


def test_hierarchy_totals_sum_sub_units() -> None:
    stat = {"modules": {
        "\\top": {"num_cells_by_type": {"LUT4": 2, "\\top.a": 1, "\\top.b": 1}},
        "\\top.a": {"num_cells_by_type": {"LUT4": 5, "TRELLIS_FF": 1, "\\top.a.c": 2}},
        "\\top.a.c": {"num_cells_by_type": {"LUT4": 3}},
        "\\top.b": {"num_cells_by_type": {"DP16KD": 1}},
    }}
    total, units = synth.hierarchy_totals(stat, "top")
    assert total == {"LUT4": 2 + 5 + 2 * 3, "TRELLIS_FF": 1, "DP16KD": 1}
    assert dict(units) == {"a": {"LUT4": 11, "TRELLIS_FF": 1}, "a.c": {"LUT4": 3},
                           "b": {"DP16KD": 1}}


def test_shared_modules_count_every_copy() -> None:
    """A module the export writes once (``Core_u0``, ``Fpu_u1``) is listed with all its
    copies: two cores of two FPUs each, plus one FPU of the top's own, are five FPUs."""
    stat = {"modules": {
        "\\top": {"num_cells_by_type": {"\\Core_u0": 2, "\\Fpu_u1": 1}},
        "\\Core_u0": {"num_cells_by_type": {"LUT4": 10, "\\Fpu_u1": 2}},
        "\\Fpu_u1": {"num_cells_by_type": {"LUT4": 3, "\\Fpu_u1.align": 1}},
        "\\Fpu_u1.align": {"num_cells_by_type": {"LUT4": 1}},
    }}
    assert synth.module_copies(stat, "top") == {"top": 1, "Core_u0": 2, "Fpu_u1": 5,
                                                "Fpu_u1.align": 5}
    total, units = synth.hierarchy_totals(stat, "top")
    assert total == {"LUT4": 2 * (10 + 2 * 4) + 4}
    assert dict(units) == {"Core_u0": {"LUT4": 2 * 18}, "Fpu_u1": {"LUT4": 5 * 4},
                           "Fpu_u1.align": {"LUT4": 5}}
    from simtgpu.cli.synth_cmd import group_units

    rows = {name: (n, cells["LUT4"]) for name, n, cells in
            group_units(units, synth.module_copies(stat, "top"))}
    assert rows == {"Core_u0": (2, 36), "Fpu_u1": (5, 20), "Fpu_u1.align": (5, 5)}


def test_the_area_table_names_a_nested_module_of_this_run() -> None:
    """The area table's note on nesting names this run's modules (the numbers after ``_u``
    change with the export), and says nothing when the run has no shared core."""
    note = synth_cmd._nesting_example(
        ["Core_u0", "L1Cache_u13", "HalfUnit_u4", "HalfUnit_u4.seg_a", "Fpu_u7"])
    assert note == ": `Core_u0`'s row includes its lanes' `HalfUnit_u4`"
    assert synth_cmd._nesting_example(["Core_u3", "Fpu_u1"]).endswith("`Fpu_u1`")
    assert synth_cmd._nesting_example(["core0", "l2", "Fpu_u1"]) == ""


def test_fit_counts_carry_and_ram_sites() -> None:
    """tiny without its L2 (2026-11-24): yosys' 64,329 LUT4 fit the 83,640 LUTs, but with
    its carry cells and distributed RAMs nextpnr counted 83,785 LUT4 and could not place it."""
    cells = {"LUT4": 64_329, "CCU2C": 8_468, "TRELLIS_DPR16X4": 420, "TRELLIS_FF": 17_398,
             "DP16KD": 27, "MULT18X18D": 60}
    assert synth.lut_equivalents(cells) == 83_785
    assert not synth.fits_ecp5(cells)
    assert synth.fits_ecp5({**cells, "CCU2C": 8_000})


@pytest.mark.parametrize("net, unit, stage", [
    ("core0.lsu.shared.bank2_row", "core0.lsu.shared", "mem"),
    ("core0.regfile.rvalid1", "core0.regfile", "is/rr (read), wb"),
    ("core0.fpu3.align.unpack.x_nan", "core0.fpu3.align.unpack", "rr..ex2"),
    ("core0.ex2_mem.ex2_mem.valid", "core0.ex2_mem", "ex2/mem"),
    ("core0.ex1_result", "core0", "ex1"),
    ("host.state", "host", "host"),
    ("clk", "gpu", "top"),
])
def test_net_names_map_to_unit_and_stage(net, unit, stage) -> None:
    units = ["core0", "core0.lsu", "core0.lsu.shared", "core0.regfile", "core0.fpu3",
             "core0.fpu3.align", "core0.fpu3.align.unpack", "core0.ex2_mem", "host"]
    assert synth.unit_stage(net, "gpu", units) == (unit, stage)
    assert synth.unit_stage("$flatten\\" + net.replace(".", ".\\", 1), "gpu",
                            units) == (unit, stage)


def test_a_core_named_by_its_module_among_the_units_is_found_by_its_instance() -> None:
    """The area's units name a module written once by module (``Core_u0``), not by instance
    (``core0``): a routed GPU's path through core 0 was reported as the GPU's top level."""
    units = ["l2", "l2.buffer", "Core_u0", "CoreMemPath_u12"]
    assert synth.unit_stage("core0.ex1__a__3[10]", "gpu", units) == ("core0", "ex1")
    assert synth.unit_stage("core0.alu3.diff[25]", "gpu", units) == ("core0.alu3", "ex1")
    assert synth.unit_stage("l2.buffer.rd2", "gpu", units) == ("l2.buffer", "l2")


def test_datapath_shells_cover_the_shared_units() -> None:
    """--shell replaces every pipelined datapath unit of the exported core, which writes the
    lane units and the SFU lanes once as shared modules (``Sfu_u7``): a pattern written for
    the flat names (``sfu.sfu0``) left the SFU in the loop, whose own path then was the
    critical one (31.3 MHz, 137 nets inside ``sfu.sfu0``)."""
    from simtgpu.rtlsim.verilog_export import generate_verilog

    text = generate_verilog(synth.fpga_rtl_config("tiny"), "core")
    _, replaced = synth.register_shells(text)
    kinds = {re.sub(r"_u\d+$", "", n) for n in replaced}
    # the matrix unit is a shared module too since 7fc3a88: the flat name's pattern
    # (``matrix``) had stopped matching it, and this test caught it
    assert {"Fpu", "HalfUnit", "Multiplier", "Sfu", "MatrixUnit"} <= kinds


def test_datapath_shells_cover_the_l2_adder() -> None:
    """The L2's atomic adder (``atom.fadd``'s, the same unit as the LSU's, which --shell
    replaces) is a shell too: missed by a pattern for the LSU's alone, its own stage was the
    worst path of a whole-``tiny`` run (seed 3 at 0acace6, 63.20 MHz: `bc_q` -> `cd_q`, the
    path of the unit placed alone)."""
    from simtgpu.rtlsim.verilog_export import generate_verilog

    text = generate_verilog(synth.fpga_rtl_config("tiny"), "gpu")
    _, replaced = synth.register_shells(text)
    assert any(n.endswith("l2.atom_fpu") for n in replaced), replaced


def test_missing_tools_name_the_extra(monkeypatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_yowasp(name, *args, **kwargs):
        if name.startswith("yowasp_"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_yowasp)
    with pytest.raises(synth.SynthError, match=re.escape("pip install -e '.[synth]'")):
        synth.synthesize_verilog("x", "module x(); endmodule", "x", None)


def test_the_fpga_build_has_one_clock() -> None:
    # the simulation models register the half unit's operands on a gated clock; the FPGA
    # flow's build of the same configuration must clock everything from clk
    from simtgpu.rtlsim.verilog_export import generate_verilog

    clocks = sorted(set(re.findall(r"posedge (\w+)", generate_verilog(
        synth.fpga_rtl_config("tiny"), "gpu"))))
    assert clocks == ["clk"]
    assert synth.fpga_rtl_config("tiny").clock_gating is False


class _Multiply(wiring.Component):
    """A pipelined multiplier between registers: the smallest design with a datapath unit
    that ``--shell`` replaces."""
    a: In(32)
    b: In(32)
    y: Out(32)

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.mul = mul = Multiplier(latency=2)
        m.submodules.alu = alu = Alu()
        m.d.sync += [mul.a.eq(self.a), mul.b.eq(self.b), alu.a.eq(self.a), alu.b.eq(self.b),
                     self.y.eq(mul.result ^ alu.result)]
        m.d.comb += mul.en.eq(1)
        return m


def _ports(text: str, module: str) -> list[tuple[str, str, str]]:
    body = text[text.index(f"module \\{module}"):]
    body = body[:body.index("endmodule")]
    return sorted(re.findall(r"^\s*(input|output)\s+(\[\d+:0\]\s*)?(\S+)\s*;", body, re.M))


def test_register_shell_keeps_ports_and_drops_the_unit(tmp_path) -> None:
    text = verilog.convert(_Multiply(), name="top", emit_src=False)
    shelled, replaced = synth.register_shells(text, [r"top\.mul"])
    assert replaced == ["top.mul"]
    assert _ports(shelled, "top.mul") == _ports(text, "top.mul")
    assert _ports(shelled, "top.alu") == _ports(text, "top.alu")  # not matched: unchanged
    whole = synth.synthesize_verilog("mul", text, "top", tmp_path / "whole", place=False,
                                     progress=lambda s: None)
    shell = synth.synthesize_verilog("mul", shelled, "top", tmp_path / "shell", place=False,
                                     progress=lambda s: None)
    assert whole.cells.get("MULT18X18D", 0) >= 1 and shell.cells.get("MULT18X18D", 0) == 0
    # the shell: one flip-flop per output bit of the multiplier, beside the design's own 96
    assert dict(shell.units)["mul"].get("TRELLIS_FF", 0) == 32
    assert shell.cells["TRELLIS_FF"] == 96 + 32
    # a unit without a clock (the combinational ALU) cannot be a register shell
    with pytest.raises(synth.SynthError, match="top.alu has no clock input"):
        synth.register_shells(text, [r"top\.alu"])


def test_a_unit_alone_has_its_ports_registered(tmp_path) -> None:
    """``simtgpu synth --unit``: the unit's every input and output bit in a flip-flop (so its
    paths are register to register and timed), an Fmax whose period is the worst path's
    delay, and the table row."""
    from simtgpu.rtlsim.synth_units import render_units, synthesize_unit

    r = synthesize_unit("fcompare", tmp_path, progress=lambda s: None)
    assert r.port_bits == 3 + 32 + 32 + 1  # the condition, a, b; the predicate
    assert r.result.cells["TRELLIS_FF"] >= r.port_bits
    assert r.result.fmax_mhz is not None
    assert abs(r.path_ns - 1000 / r.result.fmax_mhz) < 0.05
    table = render_units([r], "simtgpu synth --unit fcompare", {"commit": "c", "date": "d"})
    assert f"| {r.result.fmax_mhz:.1f} |" in table and "| `fcompare` |" in table
    assert "speed grade -6" in table  # the flow's default grade, named


def test_an_unknown_unit_is_named(capsys) -> None:
    from simtgpu.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["synth", "--unit", "gpu"])
    assert "unknown unit 'gpu'" in str(e.value) and "dot-tree" in str(e.value)
    with pytest.raises(SystemExit, match="takes no .*--paths"):
        main(["synth", "--unit", "alu", "--paths", "5"])
    with pytest.raises(SystemExit, match="takes no .*--mapper"):
        main(["synth", "--unit", "alu", "--mapper", "abc9"])
    with pytest.raises(SystemExit, match="--paths must be a count"):
        main(["synth", "--paths", "-1"])
