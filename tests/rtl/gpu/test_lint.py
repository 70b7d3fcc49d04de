"""Verilator ``--lint-only -Wall`` of the generated Verilog, with rtlsim/lint_waivers.vlt.

``tiny`` (both tops, and its GPU without caches) runs in every test run; ``small`` is marked
slow and lints its harness, whose Verilog the runner's model of ``small`` is built from anyway
(the GPU alone would be a second export of the same design); ``full`` takes about 12 minutes on
two cores (6 to convert, 6 to lint) and runs with the long regressions (``-m regress``).
"""

from __future__ import annotations

import pytest
from simtgpu.rtl.configs import get_rtl_config
from simtgpu.rtlsim.verilator import lint_verilog
from simtgpu.rtlsim.verilator_runner import harness_verilog


@pytest.mark.parametrize("config,top", [
    ("tiny", "gpu"),
    ("tiny", "harness"),
    pytest.param("small", "harness", marks=pytest.mark.slow),  # its runner model's Verilog
    pytest.param("full", "gpu", marks=pytest.mark.regress),
])
def test_verilog_lints_clean(config: str, top: str) -> None:
    path = harness_verilog(config, top)
    assert lint_verilog(path, top) == ""


def test_verilog_without_caches_lints_clean() -> None:
    """``tiny`` with neither an L1 nor the L2 (``--l1 off --l2 off``): the memory path is its
    request buffer alone and the interconnect meets the external port; the regression's GPU
    suites run with the caches on, so this is where that form is built every run."""
    path = harness_verilog(get_rtl_config("tiny").with_caches(l1=False, l2=False), "gpu")
    assert lint_verilog(path, "gpu") == ""


def test_lint_reports_a_real_problem(tmp_path) -> None:
    """The lint helper is not blind: a blocking assignment in a clocked process (a rule no
    waiver covers) is reported."""
    bad = tmp_path / "gpu.v"
    bad.write_text("module gpu(input wire clk, input wire [3:0] a, output reg [3:0] y);\n"
                   "  always @(posedge clk) y = a;\nendmodule\n")
    assert "BLKSEQ" in lint_verilog(bad, "gpu")
