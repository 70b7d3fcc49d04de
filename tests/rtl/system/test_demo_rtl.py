"""``make demo`` on the RTL: the Verilator model runs vector add through the command queue,
its memory equals the ISS's, and a waveform is left under build/."""

from __future__ import annotations

from simtgpu.cli import demo


def test_demo_runs_on_rtl_and_writes_a_waveform(capsys, tmp_path, monkeypatch):
    # the test's own waveform file: the one a user's `make demo` left stays where it is
    monkeypatch.setattr(demo, "WAVES", tmp_path / "build" / "demo" / "vector_add.vcd")
    assert demo.main(["--size", "37", "--config", "tiny", "--backend", "iss",
                      "--backend", "rtl"]) == 0
    out = capsys.readouterr().out
    assert "RTL matches NumPy (all 37 elements bit-exact)" in out
    assert "RTL memory matches the ISS" in out
    assert f"waveform: {demo.WAVES}" in out
    text = demo.WAVES.read_text(errors="replace")
    assert "$enddefinitions" in text and "#1" in text  # a real VCD with time steps
