"""Verilog for a configuration: the GPU alone (``gpu``), the simulation harness (``harness``),
or one SIMT core alone (``core``: core 0, what ``simtgpu synth`` places when the GPU is larger
than the FPGA).

Used by ``simtgpu rtl`` and by the Verilator runner. The harness output is self-contained: it
ends with the device-memory module of rtlsim/sim_ram.py.
"""

from __future__ import annotations

from amaranth.back import verilog
from simtgpu.rtl.configs import RtlConfig
from simtgpu.rtl.gpu import CoreFactory, Gpu

from .harness import SimHarness
from .sim_ram import SIM_RAM_VERILOG

__all__ = ["TOPS", "generate_verilog"]

TOPS = ("gpu", "harness", "core")


def generate_verilog(cfg: RtlConfig, top: str = "gpu",
                     core_factory: CoreFactory | None = None) -> str:
    """Verilog text of ``top`` (one of :data:`TOPS`) built for ``cfg``; the top module is
    named after ``top``."""
    if top == "gpu":
        design = Gpu(cfg, core_factory)
    elif top == "core":
        from simtgpu.rtl.gpu import default_core_factory

        design = (core_factory or default_core_factory)(cfg, 0)
    elif top == "harness":
        design = SimHarness(cfg, core_factory, storage="verilog", registered_reset=True)
    else:
        raise ValueError(f"top must be one of {', '.join(TOPS)}, not {top!r}")
    text = verilog.convert(design, name=top, emit_src=False)
    if top == "harness":
        text += SIM_RAM_VERILOG
    return text
