"""The teaching kernels in examples/asm assemble, carry the documented metadata, and compute
what their header comments promise (run on the ISS, checked against NumPy)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from simtgpu.assembler import ObjectFile, assemble_file
from simtgpu.assembler.examples import EXAMPLES_ASM as EXAMPLES
from simtgpu.verification.bench_rtl import vector_add4_launch

SIGNATURES = {
    "vector_add": ("vector_add.s", ["a ptr", "b ptr", "c ptr", "n i32"]),
    "saxpy": ("saxpy.s", ["x ptr", "y ptr", "a f32", "n i32"]),
    "block_sum": ("reduction.s", ["x ptr", "out ptr", "n i32"]),
    "classify": ("divergence.s", ["x ptr", "out ptr", "n i32"]),
    "matmul": ("matmul.s", ["a ptr", "b ptr", "c ptr", "m i32", "n i32", "k i32"]),
    "sgemm_tiled": ("sgemm_tiled.s", ["a ptr", "b ptr", "c ptr", "m i32", "n i32", "k i32"]),
    "hgemm_mma": ("hgemm_mma.s", ["a ptr", "bt ptr", "c ptr", "m i32", "n i32", "k i32"]),
    "alu_loop": ("alu_loop.s", ["out ptr", "iters i32"]),
    "gather": ("gather.s", ["src ptr", "idx ptr", "out ptr", "n i32"]),
    "vector_add4": ("vector_add4.s", ["a ptr", "b ptr", "c ptr", "n i32"]),
}


def test_every_example_is_listed() -> None:
    assert {f.name for f in EXAMPLES.glob("*.s")} == {f for f, _ in SIGNATURES.values()}


@pytest.mark.parametrize("kernel", SIGNATURES)
def test_example_assembles_with_signature(kernel: str) -> None:
    file, params = SIGNATURES[kernel]
    obj = assemble_file(EXAMPLES / file)
    k = obj.kernels[kernel]
    assert [f"{p.name} {p.type}" for p in k.params] == params
    assert [p.offset for p in k.params] == [4 * i for i in range(len(params))]
    assert ObjectFile.from_bytes(obj.to_bytes()) == obj


class Gpu:
    """Just enough of a launch to run one example on the ISS."""

    PARAMS = 0x1000

    def __init__(self, warp_size: int = 32):
        from simtgpu.sim import GlobalMemory, Iss

        self.mem = GlobalMemory(1 << 21)
        self.iss = Iss(self.mem, warp_size=warp_size)
        self.next = 0x10000

    def put(self, array: np.ndarray) -> int:
        addr = self.next
        self.mem.write(addr, np.ascontiguousarray(array).tobytes())
        self.next += (array.nbytes + 0xFFF) & ~0xFFF
        return addr

    def get(self, addr: int, dtype, count: int) -> np.ndarray:
        return np.frombuffer(self.mem.read(addr, 4 * count), dtype)

    def launch(self, file: str, kernel: str, grid, block, *args) -> None:
        obj = assemble_file(EXAMPLES / file)
        k = obj.kernels[kernel]
        block_bytes = b"".join(struct.pack("<f" if isinstance(a, float) else "<i", a)
                               for a in args)
        self.mem.write(self.PARAMS, block_bytes)
        self.iss.launch(obj.code, k.entry, grid, block, self.PARAMS, len(block_bytes),
                        k.shared_bytes)


RNG = np.random.default_rng(2024)


def test_vector_add_and_saxpy() -> None:
    n = 300
    a = RNG.standard_normal(n).astype(np.float32)
    b = RNG.standard_normal(n).astype(np.float32)
    gpu = Gpu()
    pa, pb, pc = gpu.put(a), gpu.put(b), gpu.put(np.full(n + 4, 7, np.float32))
    gpu.launch("vector_add.s", "vector_add", (3, 1, 1), (128, 1, 1), pa, pb, pc, n)
    got = gpu.get(pc, np.float32, n + 4)
    assert np.array_equal(got[:n], a + b)
    assert np.all(got[n:] == 7)  # the predicated tail wrote nothing
    gpu.launch("saxpy.s", "saxpy", (3, 1, 1), (128, 1, 1), pa, pb, 1.5, n)
    # a*x+y with one rounding: the exact product fits a double, so this rounds once too
    # (barring a double-rounding tie, which these seeded values do not hit)
    want = (np.float64(1.5) * a.astype(np.float64) + b.astype(np.float64)).astype(np.float32)
    assert np.array_equal(gpu.get(pb, np.float32, n), want)


@pytest.mark.parametrize(("n", "block", "threads", "warp_size"),
                         [(300, 32, 512, 8), (1000, 8, 32, 4), (4096, 64, 128, 32),
                          (129, 1, 5, 4), (8192, 16, 96, 8)])
def test_vector_add4(n: int, block: int, threads: int, warp_size: int) -> None:
    """The grid-stride loop: one trip (enough threads) or many, tails inside a chunk and
    inside a trip, warps narrower and as wide as the chunk."""
    a = RNG.standard_normal(n).astype(np.float32)
    b = RNG.standard_normal(n).astype(np.float32)
    gpu = Gpu(warp_size=warp_size)
    pa, pb, pc = gpu.put(a), gpu.put(b), gpu.put(np.full(n + 130, 7, np.float32))
    grid, _ = vector_add4_launch(n, block, threads)  # the launch rule of the kernel's header
    assert (grid * block) % 32 == 0
    gpu.launch("vector_add4.s", "vector_add4", (grid, 1, 1), (block, 1, 1), pa, pb, pc, n)
    got = gpu.get(pc, np.float32, n + 130)
    assert np.array_equal(got[:n], a + b)
    assert np.all(got[n:] == 7)  # every element past n is guarded off


@pytest.mark.parametrize("block", [1, 4, 32, 64, 256])
def test_block_sum_tree_order(block: int) -> None:
    n = 700
    x = RNG.standard_normal(n).astype(np.float32)
    blocks = -(-n // block)
    gpu = Gpu(warp_size=8)
    px, pout = gpu.put(x), gpu.put(np.zeros(blocks, np.float32))
    gpu.launch("reduction.s", "block_sum", (blocks, 1, 1), (block, 1, 1), px, pout, n)
    sh = np.zeros(blocks * block, np.float32)
    sh[:n] = x
    sh = sh.reshape(blocks, block)
    s = block // 2
    while s:
        sh[:, :s] = sh[:, :s] + sh[:, s:2 * s]
        s //= 2
    assert np.array_equal(gpu.get(pout, np.float32, blocks), sh[:, 0])


def _collatz(v: int) -> int:
    if v <= 0:
        return -1
    steps = 0
    while v != 1 and steps < 255:
        v = v >> 1 if v % 2 == 0 else (3 * v + 1) & 0xFFFFFFFF
        steps += 1
    return steps


def test_classify_divergence() -> None:
    n = 200
    x = RNG.integers(-50, 5000, n).astype(np.int32)
    x[:6] = [1, 0, -7, 27, 2, 6171]  # 6171 needs 261 steps: capped at 255
    gpu = Gpu(warp_size=16)
    px, pout = gpu.put(x), gpu.put(np.full(n, 99, np.int32))
    gpu.launch("divergence.s", "classify", (2, 1, 1), (128, 1, 1), px, pout, n - 5)
    want = [_collatz(int(v)) for v in x[:n - 5]] + [99] * 5
    assert want[5] == 255
    assert list(gpu.get(pout, np.int32, n)) == want


def test_matmul() -> None:
    m, n, k = 19, 23, 11
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    gpu = Gpu(warp_size=8)
    pa, pb, pc = gpu.put(a), gpu.put(b), gpu.put(np.zeros((m, n), np.float32))
    gpu.launch("matmul.s", "matmul", (-(-n // 8), -(-m // 4), 1), (8, 4, 1), pa, pb, pc, m, n, k)
    got = gpu.get(pc, np.float32, m * n).reshape(m, n)
    # the kernel's order: acc = fma(a[r][j], b[j][c], acc), j ascending
    acc = np.zeros((m, n), np.float32)
    for j in range(k):
        acc = (a[:, j:j + 1].astype(np.float64) * b[j:j + 1, :].astype(np.float64)
               + acc.astype(np.float64)).astype(np.float32)
    assert np.array_equal(got, acc)


@pytest.mark.parametrize("iters", [1, 2, 7])
def test_alu_loop(iters: int) -> None:
    block = 48
    gpu = Gpu(warp_size=16)
    pout = gpu.put(np.zeros(block, np.int32))
    gpu.launch("alu_loop.s", "alu_loop", (1, 1, 1), (block, 1, 1), pout, iters)
    tid = np.arange(block)
    want = iters * tid + (1 ^ tid if iters % 2 else 1) + (4 | tid)
    assert gpu.get(pout, np.int32, block).tolist() == want.tolist()


def test_gather() -> None:
    n = 45  # not a multiple of the block: the guard must hold off the tail
    src = RNG.integers(0, 1 << 31, 4096, dtype=np.int64).astype(np.uint32)
    idx = RNG.integers(0, 4096, n).astype(np.int32)
    gpu = Gpu(warp_size=8)
    psrc, pidx = gpu.put(src), gpu.put(idx)
    pout = gpu.put(np.full(n + 3, 0xDEADBEEF, np.uint32))
    gpu.launch("gather.s", "gather", (-(-n // 16), 1, 1), (16, 1, 1), psrc, pidx, pout, n)
    got = gpu.get(pout, np.uint32, n + 3)
    assert got[:n].tolist() == src[idx].tolist()
    assert got[n:].tolist() == [0xDEADBEEF] * 3
