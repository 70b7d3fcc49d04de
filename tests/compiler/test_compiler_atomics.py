"""Triton's atomics (``tl.atomic_cas``, ``atomic_and/or/xor``, float ``atomic_max/min`` and the
ones that were there before) on the ISS against NumPy replays in program order: the old values
returned, the final memory, masks, ``sem``/``scope`` checking, and the PTX through ptxas."""

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from simtgpu.compiler_backend.errors import KernelError
from test_compiler_ptx import needs_ptxas, ptxas_errors

N = 64


def replay(cells, idx, vals, f, mask=None):
    """Apply ``f(old, val)`` in element order (one program of N elements: the ISS runs warps in
    order and lanes in order); the old values and the final cells."""
    cells = cells.copy()
    old = np.zeros(len(idx), cells.dtype)
    for i, (j, v) in enumerate(zip(idx, vals, strict=True)):
        if mask is not None and not mask[i]:
            continue
        old[i] = cells[j]
        cells[j] = f(cells[j], v)
    return old, cells


@triton.jit
def k_bitwise(cell_ptr, v_ptr, o_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    v = tl.load(v_ptr + i)
    p = cell_ptr + (i % 4)
    if OP == 0:
        old = tl.atomic_and(p, v, mask=i < BLOCK - 5)
    elif OP == 1:
        old = tl.atomic_or(p, v, mask=i < BLOCK - 5, sem="relaxed", scope="gpu")
    else:
        old = tl.atomic_xor(p, v, mask=i < BLOCK - 5, sem="acq_rel")
    tl.store(o_ptr + i, old, mask=i < BLOCK - 5)


@pytest.mark.parametrize("op,f", [(0, np.bitwise_and), (1, np.bitwise_or), (2, np.bitwise_xor)])
def test_atomic_and_or_xor(iss_device, op, f):
    rng = np.random.default_rng(op)
    cells = rng.integers(-(1 << 31), 1 << 31, 4, dtype=np.int64).astype(np.int32)
    cells[0] = -1
    v = rng.integers(-(1 << 31), 1 << 31, N, dtype=np.int64).astype(np.int32)
    got_cells, out = cells.copy(), np.zeros(N, np.int32)
    k_bitwise[(1,)](got_cells, v, out, OP=op, BLOCK=N)
    mask = np.arange(N) < N - 5
    want_old, want_cells = replay(cells, np.arange(N) % 4, v, f, mask)
    assert np.array_equal(got_cells, want_cells)
    assert np.array_equal(out[mask], want_old[mask])


@triton.jit
def k_cas_lock(lock_ptr, ticket_ptr, o_ptr, BLOCK: tl.constexpr):
    # every element tries to take the lock (0 -> its id + 1), then a ticket chain: element i
    # swaps i into the counter only where the counter holds i
    i = tl.arange(0, BLOCK)
    got = tl.atomic_cas(lock_ptr + 0 * i, 0, i + 1)
    chain = tl.atomic_cas(ticket_ptr + 0 * i, i, i + 1, sem="acquire", scope="cta")
    tl.store(o_ptr + i, got)
    tl.store(o_ptr + BLOCK + i, chain)


def test_atomic_cas(iss_device):
    lock, ticket = np.zeros(1, np.int32), np.zeros(1, np.int32)
    out = np.zeros(2 * N, np.int32)
    k_cas_lock[(1,)](lock, ticket, out, BLOCK=N)
    # the first element wins the lock; everyone else sees its id + 1
    assert lock[0] == 1 and out[0] == 0 and (out[1:N] == 1).all()
    # elements run in order, so each compare hits: old values 0, 1, 2, ...
    assert np.array_equal(out[N:], np.arange(N)) and ticket[0] == N


@triton.jit
def k_cas_float(x_ptr, o_ptr):
    old = tl.atomic_cas(x_ptr, 1.5, -2.25)
    tl.store(o_ptr, old)


def test_atomic_cas_float_is_bitwise(iss_device):
    x, out = np.array([1.5], np.float32), np.zeros(1, np.float32)
    k_cas_float[(1,)](x, out)
    assert x[0] == np.float32(-2.25) and out[0] == np.float32(1.5)


def triton_float_max(m, b, want_max=True):
    """Triton's float atomic max/min written from its lowering (independent of the ISS):
    ``b >= 0`` takes the signed integer max (min), ``b < 0`` the unsigned min (max)."""
    mi, bi = np.float32(m).view(np.int32), np.float32(b).view(np.int32)
    mu, bu = np.float32(m).view(np.uint32), np.float32(b).view(np.uint32)
    if np.isnan(b):
        return m
    if b >= 0:
        r = max(mi, bi) if want_max else min(mi, bi)
        return np.int32(r).view(np.float32)
    r = min(mu, bu) if want_max else max(mu, bu)
    return np.uint32(r).view(np.float32)


@triton.jit
def k_fminmax(cell_ptr, v_ptr, o_ptr, MAX: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    v = tl.load(v_ptr + i)
    if MAX:
        old = tl.atomic_max(cell_ptr + (i % 3), v, mask=i != 30)
    else:
        old = tl.atomic_min(cell_ptr + (i % 3), v, mask=i != 30)
    tl.store(o_ptr + i, old)


@pytest.mark.parametrize("want_max", [True, False])
def test_float_atomic_max_min(iss_device, want_max):
    rng = np.random.default_rng(5)
    v = (rng.standard_normal(N) * 10).astype(np.float32)
    v[[3, 10, 20, 30]] = [np.inf, -np.inf, np.nan, 1e9]  # element 30 is masked off
    v[40] = -0.0
    cells = np.array([-100.0, 0.0, 100.0], np.float32)
    got_cells, out = cells.copy(), np.zeros(N, np.float32)
    k_fminmax[(1,)](got_cells, v, out, MAX=want_max, BLOCK=N)
    mask = np.arange(N) != 30
    want_old, want_cells = replay(cells, np.arange(N) % 3, v,
                                  lambda m, b: triton_float_max(m, b, want_max), mask)
    assert np.array_equal(got_cells.view(np.uint32), want_cells.view(np.uint32))
    assert np.array_equal(out[mask].view(np.uint32), want_old[mask].view(np.uint32))
    # it is the float max/min where no -0.0 operand came (a -0.0 is a no-op for max, NaN for
    # both; for min a -0.0 stores -0.0): check those cells against NumPy directly
    f = np.maximum if want_max else np.minimum
    nz = (v == 0) & np.signbit(v)
    for j in range(3):
        sel = mask & (np.arange(N) % 3 == j) & ~np.isnan(v) & ~nz
        if want_max or not (nz & mask & (np.arange(N) % 3 == j)).any():
            assert got_cells[j] == f.reduce(np.r_[cells[j], v[sel]])
    assert want_max or got_cells[40 % 3] <= 0 and np.signbit(got_cells[40 % 3])


@triton.jit
def k_small_tile(cnt_ptr, o_ptr, BLOCK: tl.constexpr):
    # a tile of 4 elements in a block of 128 threads: each element is added once, and every
    # thread that holds a copy of the result sees the old value
    i = tl.arange(0, BLOCK)
    old = tl.atomic_add(cnt_ptr + i, i + 1)
    again = tl.atomic_xor(cnt_ptr + i, old)
    tl.store(o_ptr + i, old * 100 + again)


def test_old_values_of_small_tiles_reach_every_copy(iss_device):
    cnt = np.array([10, 20, 30, 40], np.int32)
    out = np.zeros(4, np.int32)
    k_small_tile[(1,)](cnt, out, BLOCK=4, num_warps=4)
    start = np.array([10, 20, 30, 40])
    added = start + np.arange(1, 5)
    assert np.array_equal(out, start * 100 + added)
    assert np.array_equal(cnt, added ^ start)


@triton.jit
def k_spin_lock(lock_ptr, acc_ptr, x_ptr, BLOCK: tl.constexpr):
    # the lock of Triton's layer-norm backward tutorial: spin on atomic_cas, release by xchg
    pid = tl.program_id(0)
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * BLOCK + i)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(acc_ptr + i, tl.load(acc_ptr + i) + x)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)


def test_spin_lock_over_programs(iss_device):
    x = np.arange(8 * 128, dtype=np.float32).reshape(8, 128)
    acc, lock = np.zeros(128, np.float32), np.zeros(1, np.int32)
    k_spin_lock[(8,)](lock, acc, x, BLOCK=128)
    assert np.array_equal(acc, x.sum(axis=0)) and lock[0] == 0


@triton.jit
def k_bad(x_ptr, MODE: tl.constexpr):
    if MODE == 0:
        tl.atomic_and(x_ptr, 1.0)
    elif MODE == 1:
        tl.atomic_add(x_ptr, 1.0, sem="seq_cst")
    else:
        tl.atomic_cas(x_ptr, 1.0, 2.0, scope="device")


@pytest.mark.parametrize("mode,msg", [
    (0, "atomic_and needs an integer pointer"),
    (1, "atomic_add: sem='seq_cst' is not one of 'acquire', 'release', 'acq_rel', 'relaxed'"),
    (2, "atomic_cas: scope='device' is not one of 'gpu', 'cta', 'sys'")])
def test_clear_errors(iss_device, mode, msg):
    with pytest.raises(KernelError, match=r"test_compiler_atomics.py:\d+:\d+: " + msg):
        k_bad[(1,)](np.zeros(1, np.float32), MODE=mode)


@needs_ptxas
def test_ptx_of_atomics_assembles(tmp_path):
    F, P = ir.ptr("f32"), ir.ptr("i32")
    cases = [(k_bitwise, dict(cell_ptr=P, v_ptr=P, o_ptr=P), dict(OP=op, BLOCK=64),
              f"atom.global.{name}.b32") for op, name in enumerate(("and", "or", "xor"))]
    cases += [(k_cas_lock, dict(lock_ptr=P, ticket_ptr=P, o_ptr=P), dict(BLOCK=64),
               "atom.global.cas.b32"),
              (k_cas_float, dict(x_ptr=F, o_ptr=F), {}, "atom.global.cas.b32"),
              (k_spin_lock, dict(lock_ptr=P, acc_ptr=F, x_ptr=F), dict(BLOCK=128),
               "atom.global.cas.b32"),
              (k_fminmax, dict(cell_ptr=F, v_ptr=F, o_ptr=F), dict(MAX=1, BLOCK=64),
               "atom.global.max.s32"),
              (k_fminmax, dict(cell_ptr=F, v_ptr=F, o_ptr=F), dict(MAX=0, BLOCK=64),
               "atom.global.max.u32")]
    for kern, types, cexpr, want in cases:
        text = compile_function(kern.fn, types, cexpr, Target.ptx("sm_90"), 4).code
        assert want in text, want
        assert not (err := ptxas_errors(tmp_path, text)), err
