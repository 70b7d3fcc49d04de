"""verification/waves.py on a small hand-written VCD: parsing, sampling per cycle, the
pipeline decode of stage-boundary registers, the Kanata log and the PNGs."""

from __future__ import annotations

import pytest
from simtgpu.verification.waves import (
    STAGES,
    StageSample,
    WaveError,
    plot_pipeline,
    plot_signals,
    read_vcd,
    write_kanata,
)

VCD = """$timescale 1ps $end
$scope module TOP $end
$scope module harness $end
$var wire 1 ! clk $end
$scope module core0 $end
$var wire 1 " mem_wb.valid $end
$var wire 32 # mem_wb.pc [31:0] $end
$upscope $end
$upscope $end
$upscope $end
$enddefinitions $end
#0
0!
0"
b0 #
#5
1!
#10
0!
1"
b100 #
#15
1!
#20
0!
0"
#25
1!
"""


@pytest.fixture
def vcd(tmp_path):
    p = tmp_path / "t.vcd"
    p.write_text(VCD)
    return read_vcd(p)


def test_parse_and_sample(vcd):
    assert vcd.find("core0.mem_wb.pc") == "TOP.harness.core0.mem_wb.pc"
    assert vcd.sample("mem_wb.valid", [4, 14, 24]) == [0, 1, 0]
    assert vcd.sample("mem_wb.pc", [9, 10, 30]) == [0, 4, 4]
    with pytest.raises(WaveError, match="no signal"):
        vcd.find("nothere")


def test_fst_is_refused(tmp_path):
    with pytest.raises(WaveError, match="FST"):
        read_vcd(tmp_path / "x.fst")


def test_kanata_follows_an_instruction_through_the_stages(tmp_path):
    empty = StageSample(0, 0, 0)
    # one instruction (warp 1, pc 8) enters if at cycle 0 and moves one stage per cycle
    stages = {s: [empty] * 9 for s in STAGES}
    for k, s in enumerate(STAGES):
        stages[s] = [StageSample(1, 1, 8) if c == k else empty for c in range(9)]
    text = write_kanata(stages, tmp_path / "p.kanata").read_text().splitlines()
    assert text[0] == "Kanata\t0004"
    starts = [ln.split("\t")[3] for ln in text if ln.startswith("S\t")]
    assert starts == list(STAGES)
    assert sum(ln.startswith("I\t") for ln in text) == 1
    assert [ln for ln in text if ln.startswith("R\t")] == ["R\t0\t0\t0"]
    assert sum(ln == "C\t1" for ln in text) == 8
    png = plot_pipeline(list(range(9)), stages, tmp_path / "p.png")
    assert png.stat().st_size > 1000


def test_plot_signals(vcd, tmp_path):
    png = plot_signals(vcd, ["clk", "mem_wb.valid", "mem_wb.pc"], tmp_path / "s.png")
    assert png.read_bytes()[:4] == b"\x89PNG"
