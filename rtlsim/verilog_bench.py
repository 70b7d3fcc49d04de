"""How long Verilog generation takes and how large the Verilog is, with module reuse (the
export's default, rtlsim/module_reuse.py) and flat (every instance its own module): the
figures of ``python -m simtgpu.cli.bench --part verilog``."""

from __future__ import annotations

import os

from simtgpu.rtl.configs import get_rtl_config

from .verilog_export import timed_verilog

__all__ = ["CONFIGS", "measure", "render"]

CONFIGS = ("tiny", "small", "full")


def measure(configs: tuple[str, ...] = CONFIGS, top: str = "gpu",
            flat: tuple[str, ...] | None = None) -> list[dict]:
    """One row per configuration and export (``shared``, then ``flat`` for the configurations
    in ``flat``; default: all but ``full``, whose flat export takes 6 to 9 CPU minutes, unless
    ``SIMTGPU_LONG=1``): Verilog lines and bytes, CPU seconds of elaboration, netlist and
    RTLIL and of yosys (summed over the processes that convert the modules side by side), and
    wall seconds."""
    if flat is None:
        flat = configs if os.environ.get("SIMTGPU_LONG", "") not in ("", "0") else tuple(
            c for c in configs if c != "full")
    rows = []
    for name in configs:
        cfg = get_rtl_config(name)
        for reuse in (True, False)[:1 + (name in flat)]:
            text, times = timed_verilog(cfg, top, reuse=reuse)
            rows.append({"config": name, "export": "shared" if reuse else "flat",
                         "lines": text.count("\n"), "bytes": len(text),
                         "cpu_s": times["elaborate"] + times["rtlil"],
                         "yosys_s": times["yosys"], "wall_s": times["wall"],
                         "modules": text.count("\nmodule ") + text.startswith("module ")})
            print(f"verilog {name} {rows[-1]['export']}: {rows[-1]['lines']:,} lines, "
                  f"{rows[-1]['cpu_s'] + times['yosys']:.1f} CPU s, {times['wall']:.0f} s",
                  flush=True)
    return rows


_INTRO = (
    "The GPU's Verilog (`simtgpu rtl --config C --top gpu`) of each configuration, written the "
    "default way (**shared**: each distinct core and lane unit written once as a module and "
    "instantiated; rtlsim/module_reuse.py) and **flat** (every instance its own module, "
    "Amaranth 0.5's own output, the design the Amaranth simulator runs). The shared modules "
    "are converted (netlist, RTLIL, yosys) in forked processes, each as soon as it is "
    "elaborated, as many at once as the machine has cores (rtlsim/fork_pool.py); a flat export "
    "has one module to convert. CPU seconds are all processes' (elaboration, netlist, RTLIL, "
    "yosys), so they hold on a loaded machine; wall seconds depend on the load of the machine "
    "when measured ({cpu}, {nproc} cores, shared with other jobs). `full`'s flat export is "
    "measured with `SIMTGPU_LONG=1` only (6 to 9 CPU minutes).")


def render(rows: list[dict], info: dict[str, str]) -> str:
    """The Verilog-generation section of docs/performance.md."""
    head = ["## Verilog generation", "", _INTRO.format(**info), "",
            f"Commit {info['commit']}, {info['date']}. Command: "
            "`python -m simtgpu.cli.bench --part verilog`.", ""]
    lines = head + [
        "| config | export | Verilog lines | MB | modules | CPU s | wall s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(f"| `{r['config']}` | {r['export']} | {r['lines']:,} | "
                     f"{r['bytes'] / 1e6:.1f} | {r['modules']:,} | "
                     f"{r['cpu_s'] + r['yosys_s']:.1f} | {r['wall_s']:.0f} |")
    return "\n".join(lines)
