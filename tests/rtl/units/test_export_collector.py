"""The Verilog export converts each module with Python's cycle collector paused
(``verilog_export._cycle_collector_paused``: a third less CPU for ``full``) and turns it back on
afterwards, also when the conversion fails, so an in-process export (one job) leaves the
interpreter as it found it."""

import gc

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from simtgpu.rtlsim import verilog_export


class _Reg(wiring.Component):
    a: In(4)
    y: Out(4)

    def elaborate(self, platform) -> Module:
        m = Module()
        m.d.sync += self.y.eq(self.a)
        return m


def test_the_collector_is_off_while_converting_and_on_again_after(monkeypatch):
    seen = []
    convert = verilog_export.rtlil.convert_fragment

    def recording(*args, **kwargs):
        seen.append(gc.isenabled())
        return convert(*args, **kwargs)

    monkeypatch.setattr(verilog_export.rtlil, "convert_fragment", recording)
    assert gc.isenabled()
    text, _ = verilog_export.export(_Reg(), "top", reuse=False, jobs=1)
    assert "module top(" in text
    assert seen == [False] and gc.isenabled()


def test_a_failed_conversion_turns_the_collector_back_on(monkeypatch):
    def failing(*args, **kwargs):
        raise RuntimeError("conversion failed")

    monkeypatch.setattr(verilog_export.rtlil, "convert_fragment", failing)
    with pytest.raises(RuntimeError, match="conversion failed"):
        verilog_export.export(_Reg(), "top", reuse=False, jobs=1)
    assert gc.isenabled()
