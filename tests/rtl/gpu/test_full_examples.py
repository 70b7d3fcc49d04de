"""The examples on ``full`` (4 cores of 32 lanes) through its Verilator model: every array an
example reads back is bit-identical to the ISS's, and each example's own NumPy check passes.

``full``'s model is built from the Verilog with module reuse (rtlsim/module_reuse.py), which
brought its generation under a minute; its Verilator build still takes far longer than the
regression's budget allows on the 2-core machine (Verilator inlines the shared modules again:
233 MB of C++, at least 40 CPU minutes to compile; docs/performance.md, "Verilator model build
of `full`"), so this runs with ``SIMTGPU_LONG=1``.
"""

from __future__ import annotations

import numpy as np
import pytest
from example_scripts import load_example
from simtgpu.assembler.examples import EXAMPLES
from simtgpu.driver_model.device_array import DeviceArray

CASES = [
    ("vector_add", ["--size", "3001"]),
    ("saxpy", ["--size", "777", "--alpha", "1.25"]),
    ("reduction", ["--size", "5000"]),
    ("divergence", ["--size", "700", "--seed", "5"]),
    ("matmul", ["--m", "37", "--n", "33", "--k", "19"]),
    ("sgemm", ["--size", "64"]),
]


def _read_backs(monkeypatch, name: str, argv: list[str], backend: str) -> list[np.ndarray]:
    """Run the example on ``backend``; the arrays it copied back from a device of that backend,
    in order (an example on ``rtl`` may also run the ISS to check itself; those are left out).
    The recording patch is undone on return, so a second run does not record into this list."""
    got: list[np.ndarray] = []
    to_host = DeviceArray.to_host

    def recording(self):
        out = to_host(self)
        if self.device.backend.name == backend:
            got.append(out.copy())
        return out

    with monkeypatch.context() as patch:
        patch.setattr(DeviceArray, "to_host", recording)
        rc = load_example(EXAMPLES, name).main([*argv, "--config", "full", "--backend", backend])
    assert rc == 0, f"{name} {' '.join(argv)} failed its own check on {backend}"
    return got


@pytest.mark.long  # full's Verilator build takes over an hour of CPU
@pytest.mark.parametrize("name,argv", CASES, ids=[c[0] for c in CASES])
def test_example_on_full_rtl_is_bit_identical_to_the_iss(monkeypatch, capsys, name, argv):
    iss = _read_backs(monkeypatch, name, argv, "iss")
    rtl = _read_backs(monkeypatch, name, argv, "rtl")
    assert iss and len(rtl) == len(iss), capsys.readouterr().out
    for i, (a, b) in enumerate(zip(rtl, iss, strict=True)):
        assert a.dtype == b.dtype and a.shape == b.shape
        bad = np.flatnonzero(a.reshape(-1).view(np.uint8) != b.reshape(-1).view(np.uint8))
        assert not bad.size, f"{name}: read-back {i}: {bad.size} bytes differ from the ISS"
