"""What a waveform of the harness holds: the Verilator tracing rules every traced build uses.

Amaranth's Verilog backend keeps a wire for every intermediate expression (``$1``,
``$auto$...``, ``port$15008$0``): three quarters of a dump's variables are such temporaries,
named by nobody. Each pipeline boundary register (``rtl/stages.py``) is also seen twice:
as the core's wires ``mem_wb.*`` and again inside the ``Stage`` instance that holds it
(``mem_wb.mem_wb.*``, ``mem_wb.mem_wb_d.*``). :func:`trace_rules` turns both off with
Verilator's ``tracing_off -scope`` rules, so a dump holds the signals the design names, each
once. ``SIMTGPU_TRACE_ALL=1`` builds without the rules (every wire, for debugging the
generated Verilog).

Waveform format: FST unless the file is named ``*.vcd`` (:func:`wave_format`).
"""

from __future__ import annotations

import os
from pathlib import Path

from simtgpu.errors import SimtgpuError

__all__ = ["BOUNDARIES", "WAVE_FORMATS", "trace_all", "trace_args", "trace_rules",
           "wave_format"]

BOUNDARIES = ("sch_if", "if_id", "is_rr", "rr_ex1", "ex1_ex2", "ex2_mem", "mem_wb")
"""The core's stage-boundary registers (``Stage`` instances named after the two stages they
join), in pipeline order."""

WAVE_FORMATS = ("fst", "vcd")


def wave_format(path: str | os.PathLike[str]) -> str:
    """``"vcd"`` for a file named ``*.vcd``, ``"fst"`` for ``*.fst``; anything else is refused
    (the name says what the file holds)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".vcd":
        return "vcd"
    if suffix == ".fst":
        return "fst"
    raise SimtgpuError(f"waveform file {path}: name it *.fst (compact, the default) or "
                       "*.vcd (text)")


def trace_all() -> bool:
    """``$SIMTGPU_TRACE_ALL=1``: trace every wire, anonymous temporaries included."""
    return os.environ.get("SIMTGPU_TRACE_ALL", "") not in ("", "0")


def trace_rules() -> str:
    """A Verilator control file (.vlt) that keeps anonymous wires and the stage registers'
    second copies out of a trace. Scope rules match the dotted name of each signal."""
    lines = ["`verilator_config",
             "// simtgpu: what a waveform leaves out (rtlsim/trace_config.py)",
             "// wires Amaranth made for expressions: $1, $auto$..., port$123$0",
             'tracing_off -scope "*$*"']
    for b in BOUNDARIES:
        lines.append(f"// the {b} Stage instance: the core's {b}.* and {b}_d.* wires are these")
        lines.append(f'tracing_off -scope "*.{b}.{b}*"')
        lines.append(f'tracing_off -scope "*.{b}.clk"')
        lines.append(f'tracing_off -scope "*.{b}.rst"')
    return "\n".join(lines) + "\n"


def trace_args(fmt: str, rules: Path | None) -> list[str]:
    """Verilator options of a traced build in format ``fmt`` (``rules``: the file
    :func:`trace_rules` was written to, None for every wire)."""
    if fmt not in WAVE_FORMATS:
        raise SimtgpuError(f"waveform format must be fst or vcd, not {fmt!r}")
    args = ["--trace-fst" if fmt == "fst" else "--trace", "--trace-structs",
            "--no-trace-params"]
    if rules is not None:
        args.append(str(rules))
    return args
