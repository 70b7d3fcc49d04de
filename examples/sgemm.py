"""C = A @ B (f32, row-major) with shared-memory tiles (examples/asm/sgemm_tiled.s), checked
bit for bit against NumPy doing the kernel's fused multiply-adds in the kernel's order.

Each block of BX x BY threads computes a BY x BX tile of C, walking K in steps of BX through
shared memory. By default the tile is the largest the configuration allows (tiny 4x2,
small 8x4, full 16x16); --bx/--by choose another (BX 4, 8 or 16; BY divides BX or is at
least BX).

    python examples/sgemm.py --size 64 --stats
    python examples/sgemm.py --m 30 --n 21 --k 17 --config tiny
    python examples/sgemm.py --size 48 --config full --bx 8 --by 8
"""

from __future__ import annotations

import sys

import numpy as np
from example_common import ASM, compare_exact, open_device, parser, verdict

TILE_BX = (16, 8, 4)


def default_tile(max_threads: int) -> tuple[int, int]:
    """The widest BX (16, 8 or 4) whose BX x BX/2 tile the block can hold; BY fills the block
    up to BX rows: tiny (8 threads) 4x2, small (32) 8x4, full (256) 16x16."""
    for bx in TILE_BX:
        if bx * bx // 2 <= max_threads or bx == TILE_BX[-1]:
            return bx, max(1, min(bx, max_threads // bx))
    raise AssertionError("unreachable")


def tile_problem(bx: int, by: int, max_threads: int) -> str | None:
    """Why (bx, by) cannot run sgemm_tiled, or None."""
    if bx not in TILE_BX:
        return f"--bx {bx}: must be 4, 8 or 16"
    if by < 1 or (by < bx and bx % by):
        return f"--by {by}: must divide --bx {bx} or be at least {bx}"
    if bx * by > min(256, max_threads):
        return f"--bx {bx} --by {by}: {bx * by} threads, at most {min(256, max_threads)}"
    return None


def _ftz(x: np.ndarray) -> np.ndarray:
    """Subnormal float32 values become the zero of their sign (the FPU's FTZ)."""
    x = np.asarray(x, np.float32)
    return np.where(np.abs(x) < np.float32(2.0 ** -126), np.copysign(np.float32(0), x), x)


def fma_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """float32 a * b + c with one rounding (RNE, FTZ), elementwise. The float64 product is
    exact; the float64 sum is made round-to-odd with its TwoSum error, after which rounding
    to float32 equals rounding the exact value once."""
    a64, b64, c64 = (_ftz(x).astype(np.float64) for x in (a, b, c))
    p = a64 * b64
    s = p + c64
    bp = s - c64
    e = (p - bp) + (c64 - (s - bp))  # exact: s + e == p + c
    even = (s.view(np.int64) & 1) == 0
    bump = (e != 0) & even & np.isfinite(s)
    s = np.where(bump, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
    return _ftz(s.astype(np.float32))


def sgemm_reference(a: np.ndarray, b: np.ndarray, bx: int) -> np.ndarray:
    """C as sgemm_tiled computes it: acc = fma(A[r][j], B[j][c], acc) for j ascending over
    k rounded up to a multiple of bx, the padding terms with A = B = 0.0."""
    m, k = a.shape
    n = b.shape[1]
    kp = -(-k // bx) * bx
    acc = np.zeros((m, n), np.float32)
    for j in range(kp):
        aj = a[:, j:j + 1] if j < k else np.zeros((m, 1), np.float32)
        bj = b[j:j + 1, :] if j < k else np.zeros((1, n), np.float32)
        acc = fma_f32(aj, bj, acc)
    return acc


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0], size=48)
    p.add_argument("--m", type=int, help="rows of A and C (default --size)")
    p.add_argument("--n", type=int, help="columns of B and C (default --size)")
    p.add_argument("--k", type=int, help="columns of A, rows of B (default --size)")
    p.add_argument("--bx", type=int, help="tile width = block x = K step (default: see above)")
    p.add_argument("--by", type=int, help="tile height = block y (default: see above)")
    args = p.parse_args(argv)
    m, n, k = (args.size if v is None else v for v in (args.m, args.n, args.k))
    if min(m, n) < 1 or k < 0:
        print(f"sizes m={m} n={n} k={k}: m and n must be at least 1, k at least 0",
              file=sys.stderr)
        return 2
    dev = open_device(args)
    limit = dev.config.max_threads_per_block
    bx, by = default_tile(limit)
    bx, by = (args.bx or bx), (args.by or by)
    problem = tile_problem(bx, by, limit)
    if problem:
        print(f"{problem} (configuration '{dev.config.name}')", file=sys.stderr)
        return 2
    kernel = dev.load_module(ASM / "sgemm_tiled.s").kernel("sgemm_tiled")

    rng = np.random.default_rng(args.seed)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    d_a, d_b = dev.to_device(a), dev.to_device(b)
    d_c = dev.empty((m, n), np.float32)

    grid = (-(-n // bx), -(-m // by))
    res = dev.launch(kernel, grid=grid, block=(bx, by), args=(d_a, d_b, d_c, m, n, k))
    if args.stats:
        print(res.report())
        ffma = res.per_opcode.get("ffma", 0)
        elems = max(m * n, 1)
        print(f"  per element of C: {res.instructions / elems:.2f} warp-instructions, "
              f"{res.thread_instructions / elems:.1f} thread-instructions; "
              f"ffma {ffma / max(res.instructions, 1):.1%} of warp-instructions")
    got = d_c.to_host()
    ok, detail = compare_exact(got, sgemm_reference(a, b, bx))
    if ok:  # and the kernel's order is a matrix product to f32 accuracy
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        bound = max(k, 1) * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64))
        err = np.abs(got - a64 @ b64)
        ok = bool(np.all(err <= bound + 1e-37))
        detail = f"{detail}; max abs error vs float64 {np.max(err, initial=0.0):.3g}"
    return verdict(f"sgemm_tiled {m}x{k} @ {k}x{n} tile {bx}x{by}", ok, detail)


if __name__ == "__main__":
    sys.exit(main())
