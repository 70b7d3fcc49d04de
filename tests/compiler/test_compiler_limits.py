"""A kernel over its configuration's limits (threads per block, shared memory, instruction
memory, the register spill area) is a compile error at the kernel's file:line, raised by
``kernel[grid](...)`` and by ``compile_function(..., config=)`` before anything launches."""

import inspect

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.arch.config import CONFIGS
from simtgpu.compiler_backend import Target, compile_function, ir
from simtgpu.compiler_backend.errors import KernelError

P = ir.ptr("f32")


def _where(k) -> str:
    """``file:line`` of the kernel's ``def``, as the error must name it."""
    _, first = inspect.getsourcelines(k.fn)
    return rf"test_compiler_limits\.py:{first + 1}:\d+: kernel '{k.__name__}'"


@triton.jit
def k_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_threads_per_block_over_the_configuration(iss_device):
    x = np.arange(64, dtype=np.float32)
    y = np.full(64, -1.0, np.float32)
    cfg = iss_device.config
    warps = cfg.warps_per_core * 2
    with pytest.raises(KernelError, match=_where(k_copy) + rf": num_warps={warps} is "
                       rf"{warps * cfg.lanes} threads per block; the '{cfg.name}' "
                       rf"configuration runs at most {cfg.max_threads_per_block}"):
        k_copy[(1,)](x, y, 64, BLOCK=64, num_warps=warps)
    assert np.all(y == -1.0)  # nothing launched
    # the limit itself compiles and runs
    k_copy[(1,)](x, y, 64, BLOCK=64, num_warps=cfg.warps_per_core)
    assert np.array_equal(y, x)


def test_block_over_the_configuration_from_compile():
    cfg = CONFIGS["tiny"]
    types = {"x_ptr": P, "y_ptr": P, "n": ir.I32}
    with pytest.raises(KernelError, match=_where(k_copy) + r": block=\(4, 4, 1\) is 16 "
                       r"threads; the 'tiny' configuration runs at most 8"):
        compile_function(k_copy.fn, types, {"BLOCK": 16}, Target("isa", cfg.lanes),
                         block=(4, 4, 1), config=cfg)
    # without a configuration there is nothing to check against
    compile_function(k_copy.fn, types, {"BLOCK": 16}, Target("isa", cfg.lanes),
                     block=(4, 4, 1))


@triton.jit
def k_big_shared(x_ptr, N: tl.constexpr, T: tl.constexpr):
    t = tl.thread_id(0)
    buf = tl.shared_array((N,), tl.float32)
    buf[N - 1 - t] = tl.load(x_ptr + t)
    tl.barrier()
    tl.store(x_ptr + t, buf[N - 1 - (t + 1) % T])


def test_shared_memory_over_the_configuration(iss_device):
    cfg = iss_device.config
    n = cfg.shared_bytes_per_core // 4 + 1
    t = cfg.lanes
    x = np.arange(t, dtype=np.float32)
    with pytest.raises(KernelError, match=_where(k_big_shared) + rf": needs {4 * n} bytes of "
                       rf"shared memory \({4 * n} of data\); the '{cfg.name}' configuration "
                       rf"has {cfg.shared_bytes_per_core} per core"):
        k_big_shared[(1,)](x, N=n, T=t, num_warps=1)
    assert np.array_equal(x, np.arange(t, dtype=np.float32))
    k_big_shared[(1,)](x, N=n - 1, T=t, num_warps=1)  # one word less fits, and runs
    assert np.array_equal(x, np.roll(np.arange(t, dtype=np.float32), -1))


@triton.jit
def k_unrolled(x_ptr, STEPS: tl.constexpr):
    offs = tl.arange(0, 32)  # 4 elements per thread on tiny
    v = tl.load(x_ptr + offs)
    for i in tl.static_range(STEPS):
        v = v * 1.5 + i
        tl.store(x_ptr + offs, v)


def test_instruction_memory_over_the_configuration():
    cfg = CONFIGS["tiny"]  # 4 KiB: 1024 instructions
    types = {"x_ptr": P}
    target = Target("isa", cfg.lanes)
    with pytest.raises(KernelError, match=_where(k_unrolled) + r": needs more than 1024 "
                       r"instructions \(\d+ already, before any register is allocated\); the "
                       r"'tiny' configuration has 4096 bytes of instruction memory \(1024 "
                       r"instructions\): each thread's 4 elements of a tile are unrolled \(one "
                       r"copy of the code per element\) and chunk=0 keeps it unrolled; use a "
                       r"smaller block size \(fewer elements per thread\) or fewer unrolled "
                       r"loops"):
        compile_function(k_unrolled.fn, types, {"STEPS": 150}, target, num_warps=2,
                         config=cfg, chunk=0)
    # elementwise: by default a loop over each thread's 4 elements instead, which fits
    ck = compile_function(k_unrolled.fn, types, {"STEPS": 150}, target, num_warps=2,
                          config=cfg)
    assert ck.stats["chunks"] == 4 and len(ck.object_file().code) <= cfg.imem_bytes
    ck = compile_function(k_unrolled.fn, types, {"STEPS": 20}, target, num_warps=2,
                          config=cfg)
    assert len(ck.object_file().code) <= cfg.imem_bytes


@triton.jit
def k_wide(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x * tl.sum(x, axis=0) + tl.cumsum(x, axis=0))


def test_tile_over_the_elements_per_thread(iss_device):
    # more than MAX_ELEMENTS_PER_THREAD values per thread (the statement that makes the
    # tile is named)
    n = 8 * 8192
    x = np.ones(n, np.float32)
    y = np.zeros(n, np.float32)
    line = inspect.getsourcelines(k_wide.fn)[1] + 2  # the arange that makes the tile
    with pytest.raises(KernelError, match=rf"test_compiler_limits\.py:{line}:\d+: a tile of "
                       rf"shape \({n},\) is {n // 8} elements per thread on 8 threads; at most "
                       r"4096 are lowered per thread"):
        k_wide[(1,)](x, y, BLOCK=n, num_warps=1)
    assert np.all(y == 0)


@triton.jit
def k_softmax_row(out_ptr, in_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(in_ptr + cols, mask=cols < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


def test_too_long_unchunkable_kernel_fails_early(monkeypatch):
    # a reduction mixed with elementwise work cannot run as a chunk loop: 128 columns per
    # thread on 'small' (all its warps of 8 lanes) are 128 unrolled elements per thread, far
    # more code than the 4096 instructions of instruction memory. Refused as soon as the code under
    # allocation passes the limit (allocation rounds only add instructions): completing
    # the allocation takes 244 rounds, and assembling the result would follow.
    from simtgpu.compiler_backend import isa_codegen

    cfg = CONFIGS["small"]
    nw = cfg.warps_per_core
    rounds = []
    allocate = isa_codegen.allocate
    monkeypatch.setattr(isa_codegen, "allocate", lambda *a, **k: rounds.append(1) or
                        allocate(*a, **k))
    assembled = []
    monkeypatch.setattr("simtgpu.assembler.assemble", lambda *a, **k: assembled.append(1))
    types = {"out_ptr": P, "in_ptr": P, "n_cols": ir.I32}
    with pytest.raises(KernelError, match=_where(k_softmax_row) + r": needs more than 4096 "
                       r"instructions \(\d+ already, with \d+ values spilled so far\); the "
                       r"'small' configuration has 16384 bytes of instruction memory \(4096 "
                       r"instructions\): each thread's 128 elements of a tile are unrolled "
                       r"\(one copy of the code per element\) and the kernel cannot run as a "
                       r"chunk loop \(it uses shared memory\); use a smaller block size "
                       r"\(fewer elements per thread\) or fewer unrolled loops"):
        compile_function(k_softmax_row.fn, types, {"BLOCK_SIZE": 128 * cfg.lanes * nw},
                         Target("isa", cfg.lanes), num_warps=nw, config=cfg)
    assert 0 < len(rounds) <= 100 and not assembled
    # with fewer warps than the configuration allows, more warps are the other way out;
    # 512 elements per thread are too long before any register is allocated
    rounds.clear()
    with pytest.raises(KernelError, match=r"\(\d+ already, before any register is allocated"
                       r"\).* each thread's 512 elements .* use a smaller block size \(fewer "
                       rf"elements per thread\), more warps \(num_warps up to {nw}\) or fewer "
                       r"unrolled loops"):
        compile_function(k_softmax_row.fn, types, {"BLOCK_SIZE": 4096},
                         Target("isa", cfg.lanes), num_warps=1, config=cfg)
    assert not rounds and not assembled


def test_softmax_row_at_the_largest_block_that_fits(iss_device):
    # 1024 columns on 'small' (4 warps of 8 lanes: 32 elements per thread, spilled) fit
    rng = np.random.default_rng(7)
    x = rng.standard_normal(1000).astype(np.float32)
    y = np.zeros(1024, np.float32)
    k_softmax_row[(1,)](y, x, 1000, BLOCK_SIZE=1024, num_warps=4)
    e = np.exp(x.astype(np.float64) - x.max())
    assert np.allclose(y[:1000], e / e.sum(), rtol=1e-5, atol=1e-7)
