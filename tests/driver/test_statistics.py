"""``simtgpu run --stats/--json/--stats-json/--plot`` on the ISS: the JSON against the ISS's
own counts (LaunchStats through LaunchResult), the text report, and the picture."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
from simtgpu.arch.command_queue import CoreCounter
from simtgpu.arch.config import CONFIGS
from simtgpu.assembler.examples import example_asm
from simtgpu.cli.main import main
from simtgpu.driver_model.device import Device
from simtgpu.driver_model.statistics import (
    SCHEMA,
    launch_statistics,
    plot_statistics,
    render_statistics,
)

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
    small = CONFIGS["small"]
    assert stats["config"] == {"name": "small", "cores": small.cores,
                               "warps_per_core": small.warps_per_core, "lanes": small.lanes}
    assert stats["grid"] == [4, 1, 1] and stats["block"] == [32, 1, 1]
    # the ISS has no cycles: no IPC, no stalls, and it says so
    assert stats["cycles"] is None and stats["ipc"] is None and stats["stalls"] is None
    assert stats["timeline"] is None and "no cycles" in stats["notes"][0]
    # nor per-core figures: the ISS has no per-core counters (RTL-only), marked null
    assert stats["per_core"] is None and res.per_core is None
    assert "per-core figures" in stats["notes"][0]


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


def _per_core_result():
    """A 2-core launch's counters, made by hand: core 0 busy, core 1 idle throughout."""
    dev, res = _direct()
    zero = {c.name.lower(): 0 for c in CoreCounter}
    res.per_core = [
        {**zero, "instructions": 300, "thread_instructions": 2400, "stall_scoreboard": 20,
         "stall_memory": 60, "stall_structural": 20, "mem_transactions": 12},
        {**zero, "stall_idle": 400},
    ]
    res.cycles = 400
    res.instructions = 300
    for c in CoreCounter:  # the GPU-wide counters are the sums
        res.counters[c.name.lower()] = sum(pc[c.name.lower()] for pc in res.per_core)
    return dev, res


def test_per_core_figures_from_counters(tmp_path) -> None:
    """Per-core IPC and shares, by hand, and the table of ``--stats``."""
    dev, res = _per_core_result()
    s = launch_statistics(res, dev.config)
    c0, c1 = s["per_core"]
    assert c0["core"] == 0 and c0["ipc"] == 0.75 and c0["scheduler_slots"] == 400
    assert c0["shares_percent"] == {"issue": 75.0, "scoreboard": 5.0, "memory": 15.0,
                                    "barrier": 0.0, "structural": 5.0, "idle": 0.0}
    assert c0["mem_transactions"] == 12 and c0["thread_instructions"] == 2400
    assert c1["ipc"] == 0.0 and c1["shares_percent"]["idle"] == 100.0
    # the total: 800 slots, of which 300 issued and 400 idle
    assert s["shares_percent"]["issue"] == 37.5 and s["shares_percent"]["idle"] == 50.0
    assert "per_core: each core's own counters" in s["notes"][0]
    text = render_statistics(s)
    rows = {line.split()[0]: line.split() for line in text.splitlines()[-3:]}
    assert rows["0"] == ["0", "0.750", "75.00", "5.00", "15.00", "0.00", "5.00", "0.00", "400"]
    assert rows["1"][1:3] == ["0.000", "0.00"] and rows["1"][-2:] == ["100.00", "400"]
    assert rows["all"] == ["all", "0.750", "37.50", "2.50", "7.50", "0.00", "2.50", "50.00",
                           "800"]
    png = tmp_path / "cores.png"
    assert "per core" in plot_statistics(s, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_schema_table_in_docs_names_every_key() -> None:
    """docs/statistics.md's schema table lists exactly the keys of the JSON, and its
    ``per_core`` row every key of a core's object."""
    doc = (Path(__file__).parents[2] / "docs" / "statistics.md").read_text()
    assert f"## JSON schema (`{SCHEMA}`)" in doc
    table = doc[doc.index("| key | type | meaning |"):].split("\n\n")[0].splitlines()[2:]
    rows = {}
    for line in table:
        cells = line.split(" | ")
        for key in re.findall(r"`(\w+)`", cells[0]):
            rows[key] = cells[2]
    dev, res = _per_core_result()
    stats = launch_statistics(res, dev.config)
    assert set(rows) == set(stats)
    for key in stats["per_core"][0]:
        assert f"`{key}`" in rows["per_core"], key


def test_plot_must_be_png(capsys):
    assert main(["run", str(example_asm("vector_add")), *ARGS, "--plot", "x.svg"]) != 0
    assert "--plot x.svg: name a .png file" in capsys.readouterr().err
