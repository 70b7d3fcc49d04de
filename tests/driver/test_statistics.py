"""``simtgpu run --stats/--json/--stats-json/--plot`` on the ISS: the JSON against the ISS's
own counts (LaunchStats through LaunchResult), the text report, and the picture."""

from __future__ import annotations

import json

import numpy as np
from simtgpu.assembler.examples import example_asm
from simtgpu.cli.main import main
from simtgpu.driver_model.device import Device
from simtgpu.driver_model.statistics import SCHEMA, launch_statistics

ARGS = ["-k", "vector_add", "--grid", "4", "--block", "32", "--config", "small", "--seed", "2",
        "--arg", "a=f32[100]:rand", "b=f32[100]:rand", "c=f32[100]", "n=i32:100"]


def _direct():
    """The same launch through the driver: the reference counts."""
    dev = Device(backend="iss", config="small")
    k = dev.load_module(example_asm("vector_add")).kernel("vector_add")
    rng = np.random.default_rng(2)
    a = dev.to_device(rng.uniform(0, 1, 100).astype(np.float32))
    b = dev.to_device(rng.uniform(0, 1, 100).astype(np.float32))
    return dev, dev.launch(k, 4, 32, (a, b, dev.zeros(100, np.float32), 100))


def test_json_on_stdout_matches_the_iss_counts(capsys):
    assert main(["run", str(example_asm("vector_add")), *ARGS, "--json", "--print",
                 "c[:2]"]) == 0
    cap = capsys.readouterr()
    stats = json.loads(cap.out)  # stdout is the JSON alone
    assert "vector_add: done" in cap.err and "c[:2]" in cap.err
    _, res = _direct()
    iss = res.details  # the ISS's LaunchStats fields
    assert stats["schema"] == SCHEMA and stats["backend"] == "iss"
    assert stats["warp_instructions"] == res.instructions == iss["warp_instructions"] > 0
    assert stats["thread_instructions"] == iss["thread_instructions"]
    assert stats["per_opcode"] == iss["per_opcode"]
    assert sum(stats["per_opcode"].values()) == stats["warp_instructions"]
    assert stats["divergence_events"] == iss["divergence_events"]
    assert stats["config"] == {"name": "small", "cores": 2, "warps_per_core": 4, "lanes": 8}
    assert stats["grid"] == [4, 1, 1] and stats["block"] == [32, 1, 1]
    # the ISS has no cycles: no IPC, no stalls, and it says so
    assert stats["cycles"] is None and stats["ipc"] is None and stats["stalls"] is None
    assert stats["timeline"] is None and "no cycles" in stats["notes"][0]


def test_stats_json_file_and_plot(tmp_path, capsys):
    js, png = tmp_path / "s.json", tmp_path / "s.png"
    assert main(["run", str(example_asm("vector_add")), *ARGS, "--stats", "--stats-json",
                 str(js), "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "IPC, stall shares     n/a" in out and "instruction mix" in out
    assert json.loads(js.read_text())["warp_instructions"] == _direct()[1].instructions
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_shares_and_ipc_from_counters() -> None:
    """The arithmetic of the RTL figures, on hand-made counter deltas."""
    dev, res = _direct()
    res.cycles = 400
    res.instructions = 300
    res.counters.update(stall_scoreboard=200, stall_memory=250, stall_barrier=0,
                        stall_structural=50, stall_idle=0)
    s = launch_statistics(res, dev.config)
    assert s["ipc"] == 0.75 and s["ipc_per_core"] == 0.375
    assert s["scheduler_slots"] == 800
    assert s["shares_percent"] == {"issue": 37.5, "scoreboard": 25.0, "memory": 31.25,
                                   "barrier": 0.0, "structural": 6.25, "idle": 0.0}


def test_plot_must_be_png(capsys):
    assert main(["run", str(example_asm("vector_add")), *ARGS, "--plot", "x.svg"]) != 0
    assert "--plot x.svg: name a .png file" in capsys.readouterr().err
