"""Register spills to per-thread local memory in device memory (docs/execution-model.md):
Triton-sized tiles whose spills do not fit in shared memory compile and give NumPy's
answers; the driver gives each launch its own local area and frees it."""

import dataclasses

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend.bench import _matmul as k_matmul
from simtgpu.compiler_backend.errors import KernelError


@triton.jit
def k_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_SIZE_M: tl.constexpr,
           BLOCK_SIZE_N: tl.constexpr):
    # tutorial 05's _layer_norm_bwd_dwdb
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.)
        db += tl.load(DB + offs, mask=mask, other=0.)
    sum_dw = tl.sum(dw, axis=0)
    sum_db = tl.sum(db, axis=0)
    tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


@pytest.fixture()
def small_big_imem():
    """``small`` (8 lanes, 4 warps, 16 KiB shared) with 128 KiB of instruction memory: a
    32x32x16 tile is 512 unrolled multiply-adds per thread, more code than small's 16 KiB."""
    import simtgpu.compiler_backend as triton
    from simtgpu.arch.config import get_config
    from simtgpu.driver_model import Device

    dev = Device(backend="iss", config=dataclasses.replace(get_config("small"),
                                                           imem_bytes=128 * 1024))
    triton.set_device(dev)
    yield dev
    triton.set_device(None)
    dev.close()


def test_matmul_32x32x16_on_small_is_an_instruction_memory_error(iss_device):
    # registers spill to local memory; what remains over small's limit is the code size,
    # reported at compile time with the kernel's place
    a = np.zeros((32, 32), np.float32)
    with pytest.raises(KernelError, match=r"bench\.py:\d+:\d+: kernel '_matmul': needs "
                       r"more than 4096 instructions .* instruction memory"):
        k_matmul[(1, 1)](a, a, a, 32, 32, 32, BM=32, BN=32, BK=16,
                         num_warps=4)


def test_matmul_32x32x16_spills_to_local_memory(small_big_imem):
    rng = np.random.default_rng(3)
    a = rng.integers(-4, 5, (32, 32)).astype(np.float32)
    b = rng.integers(-4, 5, (32, 32)).astype(np.float32)
    c = np.zeros((32, 32), np.float32)
    k_matmul[(1, 1)](a, b, c, 32, 32, 32, BM=32, BN=32, BK=16, num_warps=4)
    np.testing.assert_array_equal(c, a @ b)  # small integers: exact in fp32
    stats = list(k_matmul.cache.values())[-1].stats
    assert stats["spill_space"] == "local" and stats["spilled"] > 0
    assert stats["local_bytes"] == 4 * stats["spilled"]


def test_layer_norm_bwd_dwdb_16x64(small_big_imem):
    # (32x128 compiles too, in about a minute: 256 carried values per thread)
    rng = np.random.default_rng(5)
    m, n = 40, 64
    dw = rng.standard_normal((m, n)).astype(np.float32)
    db = rng.standard_normal((m, n)).astype(np.float32)
    fdw = np.zeros(n, np.float32)
    fdb = np.zeros(n, np.float32)
    k_dwdb[(1,)](dw, db, fdw, fdb, m, n, BLOCK_SIZE_M=16, BLOCK_SIZE_N=64, num_warps=4)
    np.testing.assert_allclose(fdw, dw.sum(axis=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fdb, db.sum(axis=0), rtol=1e-5, atol=1e-5)
    stats = list(k_dwdb.cache.values())[-1].stats
    assert stats["spilled"] > 0, stats


@triton.jit
def k_chain(x_ptr, y_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    for i in tl.static_range(N):
        x = x * 5 + i
    tl.store(y_ptr + tl.arange(0, 8), x)


def test_static_range_of_1000_chained_steps(iss_device):
    # (each step's tile is lazy until used: 1,000 links once overflowed Python's stack)
    x = np.arange(8, dtype=np.int32)
    y = np.zeros(8, np.int32)
    k_chain[(1,)](x, y, N=1000, num_warps=1)
    want = x.astype(np.uint32)
    for i in range(1000):
        want = want * np.uint32(5) + np.uint32(i)  # wraps modulo 2**32 as int32 does
    np.testing.assert_array_equal(y.view(np.uint32), want)
