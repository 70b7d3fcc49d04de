"""Elementwise kernels as a loop over chunks of each thread's share (compiler_backend/chunking.py)
on the ISS against NumPy, and bit-identical to the unrolled code where both fit."""

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from compiler_helpers import current_device, example
from simtgpu.compiler_backend.errors import KernelError
from simtgpu.sim import numerics
from test_compiler_philox import np_randint4x, np_uniform


@triton.jit
def k_dropout(x_ptr, out_ptr, n, p, seed, BLOCK_SIZE: tl.constexpr):
    # tutorial 04's _seeded_dropout
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    random = tl.rand(seed, offsets)
    x_keep = random > p
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(out_ptr + offsets, output, mask=mask)


def np_dropout(x, p, seed):
    """``x / (1 - p)`` is ``x * rcp(1 - p)`` on this ISA: the SFU's reciprocal from the
    shared numerics."""
    u = np_uniform(np_randint4x(seed, np.arange(len(x)))[0])
    rcp = numerics.sfu("rcp", numerics.f32_to_bits(np.float32(1) - np.float32(p))).view(np.float32)
    return np.where(u > np.float32(p), x * rcp, 0).astype(np.float32)


def run_dropout(n, block, chunk=None, p=0.5, seed=1234):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    out = np.full(n, -7, np.float32)
    grid = (triton.cdiv(n, block),)
    ck = k_dropout.warmup(x, out, n, p, seed, BLOCK_SIZE=block, grid=grid, chunk=chunk)
    k_dropout[grid](x, out, n, p, seed, BLOCK_SIZE=block, chunk=chunk)
    return ck, x, out


def test_dropout_1024_on_small_is_a_chunk_loop(iss_device):
    # unrolled it is 37 KiB of code, over small's 16 KiB: chunked automatically
    ck, x, out = run_dropout(2500, 1024, p=0.25)
    assert ck.stats["chunks"] == 32  # 32 elements per thread, one per iteration
    assert len(ck.object_file().code) <= iss_device.config.imem_bytes
    assert np.array_equal(out, np_dropout(x, 0.25, 1234))
    with pytest.raises(KernelError, match="instruction memory"):
        run_dropout(2500, 1024, chunk=0)  # kept unrolled: the error it always was


@triton.jit
def k_mix(x_ptr, y_ptr, out_ptr, idx_ptr, M, N, a, BM: tl.constexpr, BN: tl.constexpr):
    # masked 2-D tiles with tails, broadcasting, integer and float arithmetic, conversions
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    m = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + offs, mask=m, other=3.0)
    y = tl.load(y_ptr + cols[None, :] + 0 * rows[:, None], mask=m, other=0)
    h = (offs * -1640531535) ^ (offs >> 3)
    f = (h & 255).to(tl.float32) * 0.5
    r = tl.where(x > 0, x * a + f, tl.maximum(x, -f)) + y.to(tl.float32)
    tl.store(out_ptr + offs, r, mask=m)
    tl.store(idx_ptr + offs, (h >> 5) + y, mask=m & (x != 0))


def np_mix(x, y, M, N, a):
    offs = np.arange(M * N, dtype=np.int64).reshape(M, N)
    h = ((offs * -1640531535) & 0xFFFFFFFF).astype(np.uint32).view(np.int32) ^ (offs >> 3)
    h = h.astype(np.int32)
    f = (h & 255).astype(np.float32) * np.float32(0.5)
    r = np.where(x > 0, x * np.float32(a) + f, np.maximum(x, -f)) + y[None, :].astype(np.float32)
    return r.astype(np.float32), np.where(x != 0, (h >> 5) + y[None, :], -1)


def run_mix(M, N, BM, BN, chunk):
    rng = np.random.default_rng(M)
    x = rng.integers(-8, 8, (M, N)).astype(np.float32)  # exact: fused multiply-add agrees
    y = rng.integers(-100, 100, N).astype(np.int32)
    out = np.full((M, N), -1, np.float32)
    idx = np.full((M, N), -1, np.int32)
    grid = (triton.cdiv(M, BM),)
    ck = k_mix.warmup(x, y, out, idx, M, N, 2.0, BM=BM, BN=BN, grid=grid, chunk=chunk)
    k_mix[grid](x, y, out, idx, M, N, 2.0, BM=BM, BN=BN, chunk=chunk)
    want_r, want_i = np_mix(x, y, M, N, 2.0)
    assert np.array_equal(out, want_r) and np.array_equal(idx, want_i)
    return ck, out, idx


def test_masked_2d_elementwise_with_tails(iss_device):
    # 512-element tiles (16 per thread), both dimensions with a tail: every chunk size gives
    # NumPy's answer and the unrolled code's bits
    ck, out, idx = run_mix(21, 50, 8, 64, 0)
    assert ck.stats["chunks"] == 1
    for c in (4, 1):
        ck, o, i = run_mix(21, 50, 8, 64, c)
        assert ck.stats["chunks"] == 16 // c
        assert o.tobytes() == out.tobytes() and i.tobytes() == idx.tobytes()


def test_too_big_unrolled_falls_back_to_chunks(iss_device):
    # 1024-element tiles: unrolled 22 KiB (over small's 16), more than the IR estimate told;
    # the compiler sees the real size and lowers it again as a chunk loop
    ck, _, _ = run_mix(45, 50, 16, 64, None)
    assert ck.stats["chunks"] > 1
    assert len(ck.object_file().code) <= iss_device.config.imem_bytes


def test_share_beyond_registers_and_shared_spills_is_a_chunk_loop(iss_device):
    # 512 elements per thread (16384 on 32 threads): more than registers and a shared spill
    # area hold, which is no limit for a chunk loop
    n = 16384 - 5
    rng = np.random.default_rng(8)
    x, y = rng.standard_normal((2, n)).astype(np.float32)
    out = np.full(n, -7, np.float32)
    add = example("vector_add").add_kernel  # (tutorial 01's)
    ck = add.warmup(x, y, out, n, BLOCK_SIZE=16384, grid=(1,))
    add[(1,)](x, y, out, n, BLOCK_SIZE=16384)
    assert ck.stats["chunks"] > 1 and ck.stats["spilled"] == 0
    np.testing.assert_array_equal(out, x + y)


def test_chunked_dropout_is_bit_identical_to_unrolled(iss_device):
    # BLOCK 256 fits unrolled on small: the two forms give the same bits (p = 0.3: x / 0.7
    # rounds, so a different operation order would show)
    base = run_dropout(700, 256, chunk=0, p=0.3)
    assert base[0].stats["chunks"] == 1
    for c in (1, 2, 4):
        ck, _, out = run_dropout(700, 256, chunk=c, p=0.3)
        assert ck.stats["chunks"] == 8 // c
        assert out.tobytes() == base[2].tobytes(), c
    assert np.array_equal(base[2], np_dropout(base[1], 0.3, 1234))


@triton.jit
def k_scaled_rand(out_ptr, sum_ptr, seed, BLOCK: tl.constexpr):
    # a large elementwise part (Philox) and a reduction of it
    offs = tl.arange(0, BLOCK)
    r = tl.rand(seed, offs)
    tl.store(out_ptr + offs, r * 2.0)
    tl.store(sum_ptr, tl.sum(tl.where(r > 0.5, 1, 0), axis=0))


def test_reduction_keeps_the_unrolled_form(iss_device):
    # the reduction crosses threads: the kernel stays unrolled (it fits), exact, and says why
    n = 1024
    out = np.zeros(n, np.float32)
    s = np.zeros(1, np.int32)
    ck = k_scaled_rand.warmup(out, s, 99, BLOCK=n, grid=(1,))
    assert ck.stats["chunks"] == 1 and ck.stats["not_chunked"] == "it uses shared memory"
    k_scaled_rand[(1,)](out, s, 99, BLOCK=n)
    u = np_uniform(np_randint4x(99, np.arange(n))[0])
    assert np.array_equal(out, u * np.float32(2)) and s[0] == np.count_nonzero(u > 0.5)
    with pytest.raises(KernelError, match="cannot run as a chunk loop: it uses shared memory"):
        k_scaled_rand.warmup(out, s, 99, BLOCK=n, grid=(1,), chunk=2)


def test_bad_chunk_is_a_clear_error(iss_device):
    x = np.zeros(4, np.float32)
    with pytest.raises(KernelError, match="chunk=3: the chunk must divide the 8 elements"):
        k_dropout.warmup(x, x, 4, 0.5, 1, BLOCK_SIZE=256, grid=(1,), chunk=3)


@pytest.mark.slow
def test_chunk_loop_on_rtl_tiny():
    # tiny: 8 threads, 4 KiB of instruction memory; dropout at 256 is 32 elements a thread
    with current_device("rtl", "tiny"):
        ck, x, out = run_dropout(300, 256, p=0.25)
        assert ck.stats["chunks"] > 1
        assert np.array_equal(out, np_dropout(x, 0.25, 1234))
