"""Module reuse in the Verilog export (rtl/reuse.py, rtlsim/module_reuse.py): identical units
are written once and instantiated, per-instance constants become ports, and the shared
Verilog is the same logic as the flat one (yosys proves the two equivalent)."""

import re

import pytest
from amaranth.back import rtlil
from amaranth.hdl import ClockDomain, ClockSignal, Module, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from simtgpu.rtl import reuse
from simtgpu.rtl.configs import get_rtl_config
from simtgpu.rtl.shared_memory import SharedMemory
from simtgpu.rtlsim import synth
from simtgpu.rtlsim.harness import SimHarness
from simtgpu.rtlsim.module_reuse import component_ports, shared_module_bytes, shared_modules
from simtgpu.rtlsim.verilator_runner import HIER_MIN_BYTES, hier_blocks, hierarchical
from simtgpu.rtlsim.verilog_export import export, timed_verilog


class _Acc(wiring.Component):
    """Registers a + b + its index (an elaboration-time constant, read through reuse.param)."""

    a: In(8)
    b: In(8)
    y: Out(8)

    def __init__(self, index: int, read_param: bool = True):
        self.index, self.read_param = index, read_param
        super().__init__()

    def elaborate(self, platform) -> Module:
        m = Module()
        k = reuse.param(self, "index", self.index) if self.read_param else self.index
        m.d.sync += self.y.eq(self.a + self.b + k)
        return m


class _Top(wiring.Component):
    x: In(8)
    y: Out(8)

    def __init__(self, read_param: bool = True):
        self.read_param = read_param
        super().__init__()

    def elaborate(self, platform) -> Module:
        m = Module()
        prev = self.x
        for i in range(3):
            u = _Acc(i, self.read_param)
            m.submodules[f"acc{i}"] = reuse.shared(u, (), {"index": (i, 2)})
            m.d.comb += [u.a.eq(prev), u.b.eq(self.x)]
            prev = u.y
        m.d.comb += self.y.eq(prev)
        return m


def test_shared_export_writes_the_unit_once_and_is_equivalent_to_the_flat_one(tmp_path):
    shared, _ = export(_Top(), "gate")
    flat, _ = export(_Top(), "gold", reuse=False)
    assert len(re.findall(r"^module _Acc_u0\(", shared, re.M)) == 1
    assert len(re.findall(r"^\s*_Acc_u0 acc\d ", shared, re.M)) == 3
    assert "_Acc_u" not in flat and len(re.findall(r"^module ", flat, re.M)) == 4
    (tmp_path / "gate.v").write_text(shared)
    (tmp_path / "gold.v").write_text(flat)
    # the three instances add 0, 1 and 2: a shared module that lost its index port (or
    # carried one value to every instance) fails the proof
    synth.run_yosys(EQUIV.format(gold="gold", gate="gate"), tmp_path)


EQUIV = """\
read_verilog {gold}.v
hierarchy -top {gold}
proc
flatten
memory_map
opt_clean
design -stash gold
read_verilog {gate}.v
hierarchy -top {gate}
proc
flatten
memory_map
opt_clean
design -stash gate
design -copy-from gold -as {gold} {gold}
design -copy-from gate -as {gate} {gate}
equiv_make {gold} {gate} equiv
hierarchy -top equiv
equiv_simple -seq 2
equiv_induct
equiv_status -assert
"""
"""yosys proves two Verilog designs (files ``<name>.v``, top module ``<name>``) equivalent."""


def test_a_parameter_the_unit_never_reads_is_an_error():
    with pytest.raises(TypeError, match="never reads its shared-module parameter"):
        export(_Top(read_param=False), "top")


def test_without_an_export_the_design_is_flat():
    unit = _Acc(0)
    assert reuse.shared(unit, ()) is unit and reuse.param(unit, "index", 5) == 5
    unit._MustUse__silence = True


def test_the_hierarchical_build_takes_its_blocks_from_the_shared_modules():
    shared, _ = export(_Top(), "gate")
    flat, _ = export(_Top(), "gold", reuse=False)
    assert shared_modules(shared) == ["_Acc_u0"] and shared_modules(flat) == []
    # full (4 x 32 lanes) is built hierarchically; tiny and small stay flat
    assert [hierarchical(get_rtl_config(n)) for n in ("tiny", "small", "full")] == [
        False, False, True]
    # _Acc is far smaller than HIER_MIN_BYTES: inlined, not verilated on its own
    assert hier_blocks(get_rtl_config("full"), shared) == []
    # a shared module's size counts the private modules of its units (\\Big_u1.part)
    big = "module Big_u1(a);\n" + "  wire x;\n" * 1000 + "endmodule\n"
    part = "module \\Big_u1.part (a);\n" + "  wire y;\n" * 1000 + "endmodule\n"
    text = shared + big + part
    sizes = shared_module_bytes(text)
    # _Acc_u0 is written last in ``shared``, after the top
    assert sizes == {"_Acc_u0": len(shared) - shared.index("module _Acc_u0("),
                     "Big_u1": len(big) + len(part)}
    assert len(big) < HIER_MIN_BYTES <= len(big) + len(part)
    assert hier_blocks(get_rtl_config("full"), text) == ["Big_u1"]
    # the matrix unit is inlined however large (its handshake with the core is combinational)
    matrix = big.replace("Big_u1", "MatrixUnit_u2") + part.replace("Big_u1", "MatrixUnit_u2")
    assert hier_blocks(get_rtl_config("full"), text + matrix) == ["Big_u1"]
    # and so are the shared-memory banks (many small blocks cost the model's speed)
    banks = big.replace("Big_u1", "SharedBank_u3") + part.replace("Big_u1", "SharedBank_u3")
    assert hier_blocks(get_rtl_config("full"), text + banks) == ["Big_u1"]
    assert hier_blocks(get_rtl_config("small"), text) == []


def test_shared_memory_banks_as_one_module_are_the_flat_banks(tmp_path):
    """The banks of a shared memory are one module whose bank index is a port
    (rtl/shared_memory.py ``SharedBank``); yosys proves that export equivalent to the flat
    one, where each bank compares with its own constant."""
    shared, _ = export(SharedMemory(4, 64), "gate")
    flat, _ = export(SharedMemory(4, 64), "gold", reuse=False)
    assert shared_modules(shared) == ["SharedBank_u0"]
    (tmp_path / "gate.v").write_text(shared)
    (tmp_path / "gold.v").write_text(flat)
    synth.run_yosys(EQUIV.format(gold="gold", gate="gate"), tmp_path)


def test_the_flat_export_of_tiny_has_no_combinational_loop():
    """Amaranth checks the whole flat design for combinational cycles, which the shared
    export's separate modules hide: a gated unit's clock (rtl/stages.py ``gated_domain``) must
    not depend on a register of its own domain (the SFU's ``done`` once did, through the SFU
    sequencer's next pass). The harness holds every gated unit, the memory model's too.
    Amaranth's netlist builder makes the check, so the RTLIL is enough (no yosys run)."""
    cfg = get_rtl_config("tiny")
    design = SimHarness(cfg, storage="verilog", registered_reset=True)  # as the export's
    text = rtlil.convert(design, name="harness", ports=component_ports(design), emit_src=False)
    assert cfg.clock_gating and "_u0" not in text
    assert re.search(r"^module \\harness$", text, re.M)


class _SignedIn(wiring.Component):
    """A shared unit with a signed port: its RTLIL declares it ``input N signed``."""

    a: In(signed(8))
    y: Out(8)

    def elaborate(self, platform) -> Module:
        m = Module()
        m.d.sync += self.y.eq(self.a >> 1)
        return m


class _TwoSigned(wiring.Component):
    x: In(signed(8))
    y: Out(8)

    def elaborate(self, platform) -> Module:
        m = Module()
        units = [_SignedIn(), _SignedIn()]
        for i, u in enumerate(units):
            m.submodules[f"u{i}"] = reuse.shared(u, ())
            m.d.comb += u.a.eq(self.x + i)
        m.d.comb += self.y.eq(units[0].y ^ units[1].y)
        return m


def test_a_signed_port_of_a_shared_unit_is_connected(tmp_path):
    shared, _ = export(_TwoSigned(), "gate", jobs=2)
    flat, _ = export(_TwoSigned(), "gold", reuse=False)
    assert shared_modules(shared) == ["_SignedIn_u0"]
    assert len(re.findall(r"\.a\(", shared)) == 2
    (tmp_path / "gate.v").write_text(shared)
    (tmp_path / "gold.v").write_text(flat)
    synth.run_yosys(EQUIV.format(gold="gold", gate="gate"), tmp_path)


class _OnOuterClock(wiring.Component):
    """Registers on a domain its parent defines: its module would need that clock as a port
    outside its signature."""

    a: In(8)
    y: Out(8)

    def elaborate(self, platform) -> Module:
        m = Module()
        m.d.outer += self.y.eq(self.a)
        return m


class _Outer(wiring.Component):
    y: Out(8)

    def elaborate(self, platform) -> Module:
        m = Module()
        m.domains.outer = ClockDomain("outer", local=True)
        m.d.comb += ClockSignal("outer").eq(ClockSignal())
        u = _OnOuterClock()
        m.submodules.u = reuse.shared(u, ())
        m.d.comb += self.y.eq(u.y)
        return m


def test_a_unit_on_its_parents_clock_domain_cannot_be_shared():
    with pytest.raises(TypeError, match=r"_OnOuterClock uses clock domain\(s\) defined outside "
                                        r"it \(outer\): it cannot be shared"):
        export(_Outer(), "top")


class _Nest(wiring.Component):
    """Shared units inside shared units, of different sizes: three ``_Top`` (each of three
    ``_Acc``), beside two ``_TwoSigned``."""

    x: In(8)
    y: Out(8)

    def elaborate(self, platform) -> Module:
        m = Module()
        tops = [_Top() for _ in range(3)]
        pairs = [_TwoSigned() for _ in range(2)]
        for i, u in enumerate(tops + pairs):
            m.submodules[f"u{i}"] = reuse.shared(u, ())
            m.d.comb += u.x.eq(self.x + i)
        y = 0
        for u in tops + pairs:
            y = y ^ u.y
        m.d.comb += self.y.eq(y)
        return m


def test_the_export_is_the_same_converted_here_or_in_children():
    """The modules convert in forked children, each as soon as it is elaborated
    (rtlsim/fork_pool.py); the text must not depend on it, nor on the order they finish in."""
    here, times_here = export(_Nest(), "top", jobs=1)
    forked, times_forked = export(_Nest(), "top", jobs=3)
    assert (times_here["jobs"], times_forked["jobs"]) == (1, 3)
    # a module is written once its units are: the order they were elaborated in
    assert shared_modules(here) == ["_Acc_u1", "_Top_u0", "_SignedIn_u3", "_TwoSigned_u2"]
    assert here == forked


@pytest.mark.long
def test_tinys_core_is_the_same_converted_here_or_in_children():
    cfg = get_rtl_config("tiny")
    here, _ = timed_verilog(cfg, "core", jobs=1)
    forked, _ = timed_verilog(cfg, "core", jobs=3)
    assert len(shared_modules(here)) >= 6 and here == forked
