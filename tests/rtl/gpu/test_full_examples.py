"""The examples on ``full`` (4 cores of 32 lanes) through its Verilator model: every array an
example reads back is bit-identical to the ISS's, and each example's own NumPy check passes.

``full``'s model is built from the Verilog with module reuse (rtlsim/module_reuse.py) and, as
every GPU of at least 64 lanes, hierarchically: each shared module (the core, the five lane
units, the SFU, the shared-memory bank, the matrix unit's dot-product tree, the memory path with
its L1 and the L2's bank) is verilated and compiled once as a Verilator ``hier_block``
(``verilator_runner.hier_blocks``), and plain rather than profile-guided (the driver's trainer
is not used for it). Built alone from an empty cache on the idle 2-core machine it takes
about 4 min 42 s (docs/performance.md, 2026-12-07 evening); in the regression, beside the
other worker, the first example's test took 444 s, the build included. This is ``full`` in
``make test``, with one kernel of its own: four cores' atomics meeting at the L2
(``cross_core_atomics.s``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from example_scripts import load_example
from simtgpu.assembler.examples import EXAMPLES
from simtgpu.driver_model.device import Device
from simtgpu.driver_model.device_array import DeviceArray

KERNELS = Path(__file__).parent

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


@pytest.mark.slow  # full's Verilator build: about 5 minutes on 2 cores
@pytest.mark.parametrize("name,argv", CASES, ids=[c[0] for c in CASES])
def test_example_on_full_rtl_is_bit_identical_to_the_iss(monkeypatch, capsys, name, argv):
    iss = _read_backs(monkeypatch, name, argv, "iss")
    rtl = _read_backs(monkeypatch, name, argv, "rtl")
    assert iss and len(rtl) == len(iss), capsys.readouterr().out
    for i, (a, b) in enumerate(zip(rtl, iss, strict=True)):
        assert a.dtype == b.dtype and a.shape == b.shape
        bad = np.flatnonzero(a.reshape(-1).view(np.uint8) != b.reshape(-1).view(np.uint8))
        assert not bad.size, f"{name}: read-back {i}: {bad.size} bytes differ from the ISS"


def _cross_core_atomics(backend: str, vals: np.ndarray, grid: int, block: int, rounds: int
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = grid * block
    dev = Device(backend=backend, config="full")
    try:
        kernel = dev.load_module(KERNELS / "cross_core_atomics.s").kernel("cross_core_atomics")
        d_vals = dev.to_device(vals)
        d_sums = dev.to_device(np.zeros(n // 32, np.float32))
        d_olds = dev.empty(rounds * n, np.float32)
        d_counts = dev.to_device(np.zeros(8, np.int32))
        dev.launch(kernel, grid=grid, block=block,
                   args=(d_vals, d_sums, d_olds, d_counts, n, rounds))
        return d_sums.to_host(), d_olds.to_host(), d_counts.to_host()
    finally:
        dev.close()


@pytest.mark.slow  # shares full's Verilator build with the examples above
def test_atomics_of_all_cores_on_shared_lines_match_the_iss_and_numpy():
    """Four cores' atom.fadd and atom.add meet on the same L2 lines and wait at its port: an
    atomic there is performed over several cycles on the operands at the port, which must be
    its own (the interconnect once moved its grant to another core's request mid-way; the
    interconnect's unit bench has that case on its own). Two blocks a core, two rounds: the
    meetings of the first size (16 blocks, 4 rounds) at a quarter of its 2 minutes."""
    grid, block, rounds = 8, 128, 2
    n = grid * block
    vals = np.random.default_rng(3).standard_normal(rounds * n).astype(np.float32)
    rtl = _cross_core_atomics("rtl", vals, grid, block, rounds)
    iss = _cross_core_atomics("iss", vals, grid, block, rounds)
    for name, got, want in zip(("sums", "olds", "counts"), rtl, iss, strict=True):
        bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
        assert not bad.size, f"{name}: {bad.size} words differ from the ISS, first at {bad[0]}"
    # NumPy: each warp's word is a float32 sum in program order, lanes in lane order
    per_warp = vals.reshape(rounds, n // 32, 32).transpose(1, 0, 2).reshape(n // 32, -1)
    olds = np.zeros_like(per_warp)
    total = np.zeros(n // 32, np.float32)
    for i in range(per_warp.shape[1]):
        olds[:, i] = total
        total = total + per_warp[:, i]
    sums, got_olds, counts = rtl
    assert np.array_equal(sums, total)
    want_olds = olds.reshape(n // 32, rounds, 32).transpose(1, 0, 2).reshape(-1)
    assert np.array_equal(got_olds, want_olds)
    assert counts.tolist() == [rounds * n // 8] * 8
