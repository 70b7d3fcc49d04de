"""C = A @ B (f32, row-major), one thread per element of C on a 2-D grid, checked
against NumPy in float64.

The kernel accumulates with one fused multiply-add per term, in order of j; a float64
reference differs by the f32 rounding of each step, so the check allows k ulps of the
sum of |A[r][j] * B[j][c]|. On the rtl backend the script also runs the kernel on the ISS
and requires C to be bit-identical (the RTL implements the ISS's numerics exactly).

    python examples/matmul.py --size 48            (square)
    python examples/matmul.py --backend rtl        (Verilator; also checked against the ISS)
    python examples/matmul.py --m 30 --n 20 --k 17
"""

from __future__ import annotations

import sys

import numpy as np
from example_common import ASM, compare_close, compare_exact, open_device, parser, verdict
from simtgpu.driver_model import Device


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0], size=48)
    p.add_argument("--m", type=int, help="rows of A and C (default --size)")
    p.add_argument("--n", type=int, help="columns of B and C (default --size)")
    p.add_argument("--k", type=int, help="columns of A, rows of B (default --size)")
    args = p.parse_args(argv)
    m, n, k = (args.m or args.size), (args.n or args.size), (args.k or args.size)
    dev = open_device(args)
    rng = np.random.default_rng(args.seed)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    got = run(dev, a, b, args.stats)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = a64 @ b64
    bound = (max(k, 1) * 2.0 ** -24) * (np.abs(a64) @ np.abs(b64))
    ok = bool(np.all(np.abs(got - want) <= bound + 1e-37))
    detail = f"max abs error {np.max(np.abs(got - want), initial=0.0):.3g}"
    if not ok:
        ok, detail = compare_close(got, want, rtol=0, atol=0)
    status = verdict(f"matmul {m}x{k} @ {k}x{n}", ok, detail)
    if args.backend == "rtl":
        with Device(backend="iss", config=args.config) as iss:
            same, detail = compare_exact(got, run(iss, a, b, False))
        status |= verdict(f"matmul on {args.backend} against the ISS", same, detail)
    return status


def run(dev: Device, a: np.ndarray, b: np.ndarray, stats: bool) -> np.ndarray:
    """C = A @ B on ``dev``: a 2-D block of one warp of lanes across x and the core's warps
    down y."""
    (m, k), n = a.shape, b.shape[1]
    kernel = dev.load_module(ASM / "matmul.s").kernel("matmul")
    d_a, d_b = dev.to_device(a), dev.to_device(b)
    d_c = dev.empty((m, n), np.float32)
    bx, by = dev.config.lanes, dev.config.warps_per_core
    grid = (-(-n // bx), -(-m // by))
    res = dev.launch(kernel, grid=grid, block=(bx, by), args=(d_a, d_b, d_c, m, n, k))
    if stats:
        print(res.report())
    return d_c.to_host()


if __name__ == "__main__":
    sys.exit(main())
