"""``make demo`` on the RTL: the Verilator model runs vector add through the command queue,
its memory equals the ISS's, and an FST waveform is left under build/ with viewer layouts
whose every signal is in the dump."""

from __future__ import annotations

import re

from simtgpu.cli import demo
from simtgpu.verification.waves import open_dump


def test_demo_runs_on_rtl_and_writes_a_waveform(capsys, tmp_path, monkeypatch):
    # the test's own waveform file: the one a user's `make demo` left stays where it is
    monkeypatch.setattr(demo, "WAVES", tmp_path / "build" / "demo" / "vector_add.fst")
    assert demo.main(["--size", "37", "--config", "tiny", "--backend", "iss",
                      "--backend", "rtl"]) == 0
    out = capsys.readouterr().out
    assert "RTL matches NumPy (all 37 elements bit-exact)" in out
    assert "RTL memory matches the ISS" in out
    assert f"waveform: {demo.WAVES}" in out
    assert demo.WAVES.read_bytes()[:1] == b"\x00"  # an FST header block, not VCD text
    gtkw = demo.WAVES.with_suffix(".gtkw")
    surfer = demo.WAVES.with_name("vector_add.surfer.txt")
    assert f"gtkwave {demo.WAVES} {gtkw}" in out and f"-c {surfer}" in out
    dump = open_dump(demo.WAVES)
    assert not [n for n in dump.vars if "$" in n]  # only named signals
    shown = [ln for ln in gtkw.read_text().splitlines() if ln.startswith("TOP.")]
    assert len(shown) > 40 and surfer.read_text().count("variable_add_from_scope ") == len(shown)
    missing = [n for n in (re.sub(r"\[\d+:0\]$", "", s) for s in shown) if n not in dump.vars]
    assert not missing, missing
    for stage in ("sch_if_d", "sch_if", "if_id", "is_rr_d", "is_rr", "rr_ex1", "ex1_ex2",
                  "ex2_mem", "mem_wb"):
        assert f"TOP.harness.gpu.core0.{stage}.valid" in shown
    assert "TOP.harness.gpu.core0.w1_wait[2:0]" in shown
