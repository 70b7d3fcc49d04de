"""What every example script shares: its command line, opening the device, the verdict.

The scripts themselves show the host API in full: load a module, copy inputs to the
device, launch, copy results back and compare with NumPy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from simtgpu.driver_model import BACKENDS, CONFIGS, Device, DriverError

ASM = Path(__file__).resolve().parent / "asm"


def parser(description: str, size: int) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--backend", default="iss", choices=BACKENDS,
                   help="where to run: iss (golden simulator), rtl (Verilator), cuda")
    p.add_argument("--config", default="small", choices=sorted(CONFIGS),
                   help="GPU configuration (default small)")
    p.add_argument("--size", type=int, default=size, help=f"problem size (default {size})")
    p.add_argument("--block", type=int, default=None,
                   help="threads per block (default: the configuration's maximum)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--stats", action="store_true", help="print the launch statistics")
    return p


def open_device(args: argparse.Namespace) -> Device:
    """The device asked for; exits 2 with a clear message when that backend is absent."""
    try:
        return Device(backend=args.backend, config=args.config)
    except DriverError as e:
        print(f"{args.backend} backend unavailable: {e}", file=sys.stderr)
        sys.exit(2)


def block_size(args: argparse.Namespace, dev: Device) -> int:
    limit = dev.config.max_threads_per_block
    block = args.block or limit
    if not 1 <= block <= limit:
        print(f"--block {block}: configuration '{dev.config.name}' allows 1..{limit}",
              file=sys.stderr)
        sys.exit(2)
    return block


def verdict(name: str, ok: bool, detail: str) -> int:
    print(f"{name}: {'PASS' if ok else 'FAIL'} ({detail})")
    return 0 if ok else 1


def compare_close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float = 0.0
                  ) -> tuple[bool, str]:
    """``assert_allclose`` as a verdict: (ok, a one-line description)."""
    try:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    except AssertionError as e:
        lines = [x.strip() for x in str(e).splitlines() if x.strip()]
        return False, "; ".join(lines[1:4])
    return True, f"max abs error {float(np.max(np.abs(got - want), initial=0.0)):.3g}"


def compare_exact(got: np.ndarray, want: np.ndarray) -> tuple[bool, str]:
    bad = np.flatnonzero(got.reshape(-1).view(np.uint32) != want.reshape(-1).view(np.uint32))
    if bad.size:
        i = int(bad[0])
        return False, (f"{bad.size} of {got.size} elements differ; first at {i}: "
                       f"got {got.reshape(-1)[i]!r}, expected {want.reshape(-1)[i]!r}")
    return True, f"all {got.size} elements bit-exact"
