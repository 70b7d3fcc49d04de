"""``simtgpu waves`` and the RTL's own traces, on a real dump: vector add on ``tiny`` through
the driver with an FST waveform and a retire trace, checked against the ISS, the assembler
and the dump itself; plus the VCD path on a small hand-written file."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from simtgpu.assembler import disassemble_word
from simtgpu.assembler.examples import example_asm
from simtgpu.cli.main import main as cli
from simtgpu.driver_model.device import Device
from simtgpu.driver_model.errors import DriverError
from simtgpu.rtl.configs import get_rtl_config
from simtgpu.sim.trace import KEYS, per_warp, read_trace
from simtgpu.verification.compare import program_order
from simtgpu.verification.waves import (
    STAGES,
    WaveError,
    konata_records,
    layout_signals,
    open_dump,
    pipeline,
    plot_signals,
    write_gtkw,
    write_konata,
    write_surfer,
)

N = 37
BLOCKS = (8, 4)  # vector add with two warps per block, then one


def _collatz(v: int) -> int:
    if v <= 0:
        return -1
    steps = 0
    while v != 1 and steps < 255:
        v = v // 2 if v % 2 == 0 else (3 * v + 1) & 0xFFFFFFFF
        steps += 1
    return steps


def _launches(dev, traces) -> dict[int, bytes]:
    """Vector add twice, then the divergence example with one warp per block (its branches
    stop fetch with fetches in flight: those are dropped). Returns {code base: code}."""
    va = dev.load_module(example_asm("vector_add"))
    rng = np.random.default_rng(5)
    a = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    for block, trace in zip(BLOCKS, traces[:len(BLOCKS)], strict=True):
        da, db, dc = dev.to_device(a), dev.to_device(b), dev.empty(N, np.float32)
        dev.launch(va.kernel("vector_add"), grid=-(-N // block), block=block,
                   args=(da, db, dc, N), trace=trace)
        assert np.array_equal(dc.to_host().view(np.uint32), (a + b).view(np.uint32))
    dv = dev.load_module(example_asm("divergence"))
    x = np.array([-1, 0, 1, 2, 3, 6, 7, 9, 27, 5, 4, 1], dtype=np.int32)
    dx, dout = dev.to_device(x), dev.empty(x.size, np.int32)
    dev.launch(dv.kernel("classify"), grid=3, block=4, args=(dx, dout, x.size),
               trace=traces[-1])
    assert dout.to_host().tolist() == [_collatz(int(v)) if v != 1 else 0 for v in x]
    return {m.code_base: m.obj.code for m in (va, dv)}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The dump and the RTL's and the ISS's retire traces of the launches."""
    d = tmp_path_factory.mktemp("waves")
    rtl = [d / f"rtl{i}.jsonl" for i in range(len(BLOCKS) + 1)]
    with Device(backend="rtl", config="tiny", waves=d / "va.fst") as dev:
        code = _launches(dev, rtl)
    iss = [io.StringIO() for _ in rtl]
    with Device(backend="iss", config="tiny") as dev:
        _launches(dev, iss)
    return {"dump": d / "va.fst", "dir": d, "code": code,
            "rtl": [read_trace(open(p)) for p in rtl],
            "iss": [read_trace(io.StringIO(s.getvalue())) for s in iss]}


def test_rtl_retire_trace_matches_the_iss(run):
    """Same lines per warp, in program order (the step-and-compare's rule), on every key
    both write; the RTL's ``mem`` is null and its ``seq`` counts its lines."""
    for rtl, iss in zip(run["rtl"], run["iss"], strict=True):
        assert len(rtl) == len(iss) > 0
        assert [ln["seq"] for ln in rtl] == list(range(len(rtl)))
        assert all(list(ln) == list(KEYS) and ln["mem"] is None for ln in rtl)
        wr, wi = per_warp(rtl), per_warp(iss)
        assert set(wr) == set(wi)
        for key in wi:
            want, got = program_order(wi[key], wr[key])
            assert len(got) == len(want)
            for w, g in zip(want, got, strict=True):
                assert {k: g[k] for k in KEYS if k not in ("seq", "core", "mem")} == \
                    {k: w[k] for k in KEYS if k not in ("seq", "core", "mem")}


def test_dump_holds_named_signals_once(run):
    dump = open_dump(run["dump"])
    assert dump.path.read_bytes()[:1] == b"\x00"  # FST
    assert not [n for n in dump.vars if "$" in n]
    # the stage registers appear as the core's fields, not again inside the Stage instance
    assert not [n for n in dump.vars if re.search(r"\.(\w+)\.\1(_d)?\.", n)]
    assert "TOP.harness.gpu.core0.mem_wb.pc" in dump.vars
    cfg = get_rtl_config("tiny")
    got = dump.config()
    assert (got.cores, got.warps, got.lanes) == (cfg.cores, cfg.warps, cfg.lanes)


def test_konata_one_record_per_instruction(run):
    """Records = retired instructions (the ISS's count) + the fetches ``id`` dropped; every
    label is the assembler's disassembly of the word at that pc."""
    dump = open_dump(run["dump"])
    pipe = pipeline(dump, 0)
    path, recs = write_konata(pipe, run["dir"] / "va.kanata")
    retired = [r for r in recs if r.retired]
    squashed = [r for r in recs if not r.retired]
    assert len(retired) == sum(len(t) for t in run["iss"])
    dropped = sum(1 for i in range(len(pipe.cycles))
                  if pipe.stages["id"][i] is not None and not pipe.accept[i])
    assert len(squashed) == dropped > 0
    assert all(r.stages[-1][0] == "id" for r in squashed)
    text = path.read_text().splitlines()
    assert text[0] == "Kanata\t0004"
    labels = [ln.split("\t", 3)[3] for ln in text if ln.startswith("L\t") and ln.split("\t")[2]
              == "0"]
    assert len(labels) == len(recs)
    for r in recs:
        base = max(b for b in run["code"] if b <= r.pc)
        off = r.pc - base
        word = int.from_bytes(run["code"][base][off:off + 4], "little") if off < len(
            run["code"][base]) else 0  # a fetch past the end (dropped)
        assert r.word == word
        if r.retired:
            assert f"w{r.warp} {r.pc:04x}: {disassemble_word(word, r.pc)}" in labels
    for r in retired:
        names = [s for s, _ in r.stages]
        back = names[:-1] if names[-1] == "lwb" else names  # lwb: a late write-back
        assert names[:2] == ["if", "id"] and back[-5:] == ["rr", "ex1", "ex2", "mem", "wb"]
    assert sum(ln.startswith("R\t") for ln in text) == len(recs)
    # a load waits for its data after wb, and the add that needs it waits in is
    assert any(s == "lwb" for r in retired for s, _ in r.stages)
    assert any(s == "memory" for r in retired for s, _ in r.stages)
    assert len(konata_records(pipe)) == len(recs)


def test_pictures_and_cli(run, tmp_path, capsys):
    out = tmp_path / "pipe.png"
    assert cli(["waves", "pipeline", str(run["dump"]), "-o", str(out), "--konata",
                str(tmp_path / "k.kanata"), "--cycles", "80"]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert "squashed" in capsys.readouterr().out
    dump = open_dump(run["dump"])
    png = plot_signals(dump, ["clk", "core0.is_rr.valid", "core0.is_rr.pc", "w0_wait"],
                       tmp_path / "s.png", first=300, last=360)
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert cli(["waves", "info", str(run["dump"])]) == 0
    assert "1 core(s), 2 warps x 4 lanes" in capsys.readouterr().out
    with pytest.raises(WaveError, match="outside the dump"):
        plot_signals(dump, ["clk"], tmp_path / "x.png", first=10**9)
    assert cli(["waves", "info", str(tmp_path / "none.fst")]) == 1


def test_viewer_layouts_name_signals_of_the_dump(run, tmp_path):
    """Every signal of the GTKWave save file (with GTKWave's [msb:0] for buses) and of the
    Surfer command file is in the dump with that width; the pipeline comes in stage order."""
    dump = open_dump(run["dump"])
    gtkw = write_gtkw(dump, tmp_path / "va.gtkw")
    surfer = write_surfer(dump, tmp_path / "va.surfer.txt")
    shown = [ln for ln in gtkw.read_text().splitlines() if ln.startswith("TOP.")]
    assert len(shown) > 40
    for name in shown:
        m = re.fullmatch(r"(.*?)(?:\[(\d+):0\])?", name)
        assert m.group(1) in dump.vars, name
        assert dump.width(m.group(1)) == (int(m.group(2)) + 1 if m.group(2) else 1), name
    added, scope = [], None
    for ln in surfer.read_text().splitlines():
        cmd, _, arg = ln.partition(" ")
        assert cmd in ("divider_add", "scope_select", "variable_add_from_scope", "zoom_fit")
        if cmd == "scope_select":
            scope = arg
        elif cmd == "variable_add_from_scope":
            added.append(f"{scope}.{arg}")
    assert added == [re.sub(r"\[\d+:0\]$", "", n) for n in shown]
    groups = [g for g, _ in layout_signals(dump)]
    assert groups[1:10] == [f"core0 {s}" for s in STAGES]
    assert {"core0 warp 0", "core0 warp 1", "core0 stalls"} <= set(groups)
    filt = (tmp_path / "va.wait.txt").read_text().split("\n")
    assert filt[2] == "2 barrier" and filt[4] == "4 memory"


def test_vcd_is_read_by_the_same_reader(tmp_path):
    vcd = tmp_path / "t.vcd"
    vcd.write_text(
        "$timescale 1ns $end\n$scope module TOP $end\n$var wire 1 ! clk $end\n"
        "$scope module core0 $end\n$var wire 32 # mem_wb.pc [31:0] $end\n$upscope $end\n"
        "$upscope $end\n$enddefinitions $end\n#0\n0!\nb0 #\n#5\n1!\n#10\n0!\nb100 #\n#15\n1!\n"
        "#20\n0!\n#25\n1!\n")
    dump = open_dump(vcd)
    assert dump.find("core0.mem_wb.pc") == "TOP.core0.mem_wb.pc"
    assert dump.sample("mem_wb.pc", [9, 10, 30]) == [0, 4, 4]
    assert dump.edges() == [5, 15, 25]
    with pytest.raises(WaveError, match="no signal"):
        dump.find("nothere")
    with pytest.raises(WaveError, match="not a dump of the simtgpu harness"):
        dump.config()


def test_wave_file_names():
    with pytest.raises(DriverError, match=r"\*\.fst"):
        Device(backend="rtl", config="tiny", waves="build/x.wave")
