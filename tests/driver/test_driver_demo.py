"""``make demo`` (cli/demo.py): listing with encodings and the ISS run against NumPy.

The RTL half of the demo is tested in tests/rtl/system/test_demo_rtl.py (it needs Verilator).
"""

from __future__ import annotations

import re

from simtgpu.arch.config import CONFIGS
from simtgpu.assembler import assemble_file
from simtgpu.cli import demo


def test_demo_lists_code_and_matches(capsys):
    assert demo.main(["--size", "203", "--backend", "iss"]) == 0
    out = capsys.readouterr().out
    code = assemble_file(demo.KERNEL).code
    rows = re.findall(r"^  ([0-9a-f]{4})   ([0-9a-f]{8})  (\S.*)$", out, re.M)
    assert len(rows) == len(code) // 4
    for addr, word, _ in rows:  # every printed encoding is the assembled word
        a = int(addr, 16)
        assert int(word, 16) == int.from_bytes(code[a:a + 4], "little")
    assert "; n (i32)" in out
    block = CONFIGS["small"].max_threads_per_block  # the demo's blocks: a full core
    grid = -(-203 // block)
    assert f"{grid * block - 203} past the end" in out  # the last block's idle threads
    assert "ISS matches NumPy (all 203 elements bit-exact)" in out


def test_demo_unknown_backend_fails_cleanly(capsys):
    assert demo.main(["--backend", "nope"]) == 1
    assert "unknown backend 'nope'" in capsys.readouterr().err
