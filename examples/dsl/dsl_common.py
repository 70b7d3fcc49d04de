"""Shared by the DSL example scripts: the command line, the device, the verdict.

Each example defines its kernel with ``@triton.jit`` exactly as a Triton user would and a
``run(size, seed)`` function that launches it on the current device and compares the result
with NumPy; ``main`` wraps that for the command line.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import simtgpu.compiler_backend as triton
from simtgpu.driver_model import BACKENDS, CONFIGS, Device, DriverError
from simtgpu.errors import SimtgpuError


def main(name: str, run, default_size: int, argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=f"{name}: a DSL kernel checked against NumPy")
    p.add_argument("--backend", default="iss", choices=BACKENDS,
                   help="where to run: iss (golden simulator), rtl (Verilator), cuda")
    p.add_argument("--config", default="small", choices=sorted(CONFIGS),
                   help="GPU configuration (default small)")
    p.add_argument("--size", type=int, default=default_size,
                   help=f"problem size (default {default_size})")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--stats", action="store_true", help="print the launch statistics")
    args = p.parse_args(argv)
    try:
        dev = Device(backend=args.backend, config=args.config)
    except DriverError as e:
        print(f"{args.backend} backend unavailable: {e}", file=sys.stderr)
        return 2
    triton.set_device(dev)
    try:
        ok, detail, stats = run(args.size, args.seed)
    except SimtgpuError as e:
        print(e.render(), file=sys.stderr)
        return 1
    if args.stats and stats is not None:
        print(f"warp instructions: {stats.instructions}, thread instructions: "
              f"{stats.thread_instructions}")
    print(f"{name}: {'PASS' if ok else 'FAIL'} ({detail})")
    return 0 if ok else 1


def close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-5, atol: float = 1e-6
          ) -> tuple[bool, str]:
    if got.shape != want.shape:
        return False, f"shape {got.shape} != {want.shape}"
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    tol = atol + rtol * np.abs(want.astype(np.float64))
    bad = int(np.count_nonzero(~(err <= tol)))
    worst = float(err.max()) if err.size else 0.0
    return bad == 0, f"{got.size} values, max abs error {worst:.3g}, {bad} outside tolerance"


def check_matmul(matmul, size: int, seed: int):
    """The matmul examples' run(): ``matmul(a, b) -> (c, stats)`` on random float32
    operands of ragged sizes (size x size-1 @ size-1 x size+3) against NumPy."""
    rng = np.random.default_rng(seed)
    M, N, K = size, size + 3, size - 1 if size > 1 else 1
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c, stats = matmul(a, b)
    ok, detail = close(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)
    return ok, f"{M}x{K} @ {K}x{N}: {detail}", stats
