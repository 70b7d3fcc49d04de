"""Quality figures of the compiler: dynamic instruction counts on the ISS against the
hand-written kernels in examples/asm/, and compile time per kernel.

``figures()`` runs each pair on the same problem and returns one row per kernel; the
compiled kernel is checked against NumPy before its count is used. Run it as
``python -m simtgpu.compiler_backend.bench``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np
from simtgpu.assembler.examples import EXAMPLES_ASM

from . import language as tl
from .compiler import Target
from .jit import jit, launch_compiled

ASM = EXAMPLES_ASM


@jit
def _vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m),
             mask=m)


@jit
def _saxpy(x_ptr, y_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(y_ptr + offs, a * x + y, mask=m)  # contracted into one ffma


@jit
def _block_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + tl.program_id(0), tl.sum(x, axis=0))


@jit
def _matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
            BK: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@dataclass
class Figure:
    kernel: str
    problem: str
    hand_instructions: int
    compiled_instructions: int
    ratio: float
    compile_ms: float
    registers: int
    correct: bool


def _hand(dev, name: str, kernel: str, grid, block, args) -> int:
    mod = dev.load_module(ASM / name)
    return dev.launch(mod.kernel(kernel), grid=grid, block=block, args=args).instructions


def _compiled(dev, jf, grid, runtime: dict, cexpr: dict, num_warps: int = 4):
    from .compiler import type_of_arg

    target = Target("isa", dev.config.lanes)
    types = {k: type_of_arg(v) for k, v in runtime.items()}
    jf.cache.clear()
    ck = jf.compile(target, types, cexpr, num_warps)
    res = launch_compiled(dev, ck, grid, runtime)
    return res.instructions, ck


def figures(n: int = 2048, mm: int = 32, config: str = "small") -> list[Figure]:
    """Compiled vs hand-written dynamic warp-instruction counts on the ISS."""
    from simtgpu.driver_model import Device

    dev = Device(backend="iss", config=config)
    lanes = dev.config.lanes
    tpb = dev.config.max_threads_per_block
    rng = np.random.default_rng(1)
    out: list[Figure] = []

    def row(kernel, problem, hand, comp, ck, ok):
        out.append(Figure(kernel, problem, hand, comp, round(comp / hand, 3),
                          round(ck.compile_ms, 1), ck.stats.get("registers", 0), bool(ok)))

    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    blocks = -(-n // tpb)
    d = [dev.to_device(v) for v in (x, y)] + [dev.empty(n, np.float32)]
    hand = _hand(dev, "vector_add.s", "vector_add", blocks, tpb, (*d, n))
    c = np.zeros(n, np.float32)
    block = 4 * tpb
    comp, ck = _compiled(dev, _vector_add, (-(-n // block),),
                         dict(x_ptr=x, y_ptr=y, out_ptr=c, n=n), dict(BLOCK=block))
    row("vector_add", f"n={n}", hand, comp, ck, np.array_equal(c, x + y))

    d = [dev.to_device(x), dev.to_device(y)]
    hand = _hand(dev, "saxpy.s", "saxpy", blocks, tpb, (d[0], d[1], 2.0, n))
    yy = y.copy()
    comp, ck = _compiled(dev, _saxpy, (-(-n // block),), dict(x_ptr=x, y_ptr=yy, a=2.0, n=n),
                         dict(BLOCK=block))
    want = (np.float64(2.0) * x + y).astype(np.float32)  # one rounding, as ffma
    row("saxpy", f"n={n}", hand, comp, ck, np.array_equal(yy, want))

    parts = dev.empty(blocks, np.float32)
    hand = _hand(dev, "reduction.s", "block_sum", blocks, tpb, (dev.to_device(x), parts, n))
    got = np.zeros(blocks, np.float32)
    comp, ck = _compiled(dev, _block_sum, (blocks,), dict(x_ptr=x, out_ptr=got, n=n),
                         dict(BLOCK=tpb))
    want = np.pad(x, (0, blocks * tpb - n)).reshape(blocks, tpb).sum(axis=1)
    row("block_sum", f"n={n}", hand, comp, ck, np.allclose(got, want, rtol=1e-5, atol=1e-5))

    a = rng.standard_normal((mm, mm)).astype(np.float32)
    b = rng.standard_normal((mm, mm)).astype(np.float32)
    bx, by = lanes, tpb // lanes
    hand = _hand(dev, "matmul.s", "matmul", (-(-mm // bx), -(-mm // by)), (bx, by),
                 (dev.to_device(a), dev.to_device(b), dev.empty((mm, mm), np.float32),
                  mm, mm, mm))
    cc = np.zeros((mm, mm), np.float32)
    t = 8
    comp, ck = _compiled(dev, _matmul, (-(-mm // t), -(-mm // t)),
                         dict(a_ptr=a, b_ptr=b, c_ptr=cc, M=mm, N=mm, K=mm),
                         dict(BM=t, BN=t, BK=t))
    row("matmul", f"{mm}x{mm}x{mm}", hand, comp, ck,
        np.allclose(cc, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4))
    dev.close()
    return out


def compile_times(repeat: int = 3) -> dict[str, float]:
    """Best-of-``repeat`` compile time in ms of each bench kernel (ISA target), in CPU time
    of this process so that other work on the machine does not count."""
    from . import ir

    P = ir.ptr("f32")
    I = ir.I32  # noqa: E741
    cases = {
        "vector_add": (_vector_add, dict(x_ptr=P, y_ptr=P, out_ptr=P, n=I), dict(BLOCK=128)),
        "block_sum": (_block_sum, dict(x_ptr=P, out_ptr=P, n=I), dict(BLOCK=32)),
        "matmul": (_matmul, dict(a_ptr=P, b_ptr=P, c_ptr=P, M=I, N=I, K=I),
                   dict(BM=8, BN=8, BK=8)),
    }
    out = {}
    for name, (jf, types, cexpr) in cases.items():
        best = float("inf")
        for _ in range(repeat):
            jf.cache.clear()
            t0 = time.process_time()
            jf.compile(Target("isa", 8), types, cexpr)
            best = min(best, (time.process_time() - t0) * 1000)
        out[name] = round(best, 1)
    return out


def main() -> None:
    for f in figures():
        print(asdict(f))
    print("compile ms:", compile_times())


if __name__ == "__main__":
    main()
