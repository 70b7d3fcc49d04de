"""Language features on the ISS against NumPy: divergent if/else with results, early
return, loops with carried tiles, 2-D reductions along an axis, argmax, where, casts,
integer division, @jit helpers, and the thread-level intrinsics (shuffles, votes,
shared arrays, shared atomics, barriers)."""

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl


@triton.jit
def _helper(x, k: tl.constexpr):
    return x * k + 1.0


@triton.jit
def k_divergent(x_ptr, y_ptr, n):
    i = tl.program_id(0) * tl.block_dim(0) + tl.thread_id(0)
    if i >= n:
        return
    v = tl.load(x_ptr + i)
    if v > 0.0:
        r = v * 2.0
        c = 1
    else:
        r = -v
        c = 2
    s = 0.0
    for _j in range(0, c):
        s += r
    tl.store(y_ptr + i, _helper(s, 3))


def test_divergent_if_loop_and_early_return(iss_device):
    x = np.linspace(-3, 3, 77).astype(np.float32)
    y = np.full(80, -9.0, np.float32)
    k_divergent[(3,)](x, y, 77, block=(32, 1, 1))
    r = np.where(x > 0, x * 2, -x)
    c = np.where(x > 0, 1, 2)
    want = (r * c) * 3 + 1
    assert np.allclose(y[:77], want, rtol=1e-6)
    assert np.all(y[77:] == -9.0)


@triton.jit
def k_rows(x_ptr, s_ptr, m_ptr, a_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(s_ptr + rm, tl.sum(x, axis=1))
    tl.store(m_ptr + rn, tl.max(x, axis=0))
    tl.store(a_ptr + rm, tl.argmax(x, axis=1))
    tl.store(c_ptr, tl.argmax(tl.sum(x, axis=1), axis=0))


@pytest.mark.parametrize("m, n", [(4, 8), (8, 16), (16, 4)])
def test_axis_reductions_and_argmax(iss_device, m, n):
    rng = np.random.default_rng(m * n)
    x = rng.standard_normal((m, n)).astype(np.float32)
    s, mx = np.zeros(m, np.float32), np.zeros(n, np.float32)
    am, c = np.zeros(m, np.int32), np.zeros(1, np.int32)
    k_rows[(1,)](x, s, mx, am, c, M=m, N=n)
    assert np.allclose(s, x.sum(axis=1), rtol=1e-5, atol=1e-5)
    assert np.array_equal(mx, x.max(axis=0))
    assert np.array_equal(am, x.argmax(axis=1))
    assert c[0] == int(np.argmax(s))


@triton.jit
def k_intmath(x_ptr, y_ptr, d, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m, other=1)
    q = v // d + v % d * 1000 + (v // 4) * 1000000 + (offs % 3) * 7
    f = (v.to(tl.float32) * 0.5).to(tl.int32)
    tl.store(y_ptr + offs, tl.where(v > 0, q, f - tl.abs(v)), mask=m)


def test_integer_division_casts_where(iss_device):
    rng = np.random.default_rng(5)
    x = rng.integers(-5000, 5000, 300).astype(np.int32)
    y = np.zeros(300, np.int32)
    d = 7
    k_intmath[(triton.cdiv(300, 64),)](x, y, d, 300, BLOCK=64)
    tdiv = lambda a, b: np.trunc(a / b).astype(np.int64)  # noqa: E731 - C semantics
    offs = np.arange(300)
    q = tdiv(x, d) + (x - tdiv(x, d) * d) * 1000 + tdiv(x, 4) * 1000000 + (offs % 3) * 7
    f = np.trunc(x.astype(np.float32) * np.float32(0.5)).astype(np.int64) - np.abs(x)
    want = np.where(x > 0, q, f).astype(np.int32)
    assert np.array_equal(y, want)


@triton.jit
def k_warp(x_ptr, out_ptr, cnt_ptr):
    t = tl.thread_id(0)
    lane = tl.lane_id()
    v = tl.load(x_ptr + t)
    s = v
    off = tl.warp_size() // 2
    while_steps = tl.warp_size()
    for _ in tl.static_range(0, 5):
        if off > 0:
            s += tl.shfl_xor(s, off)
            off = off // 2
    up = tl.shfl_up(v, 1)
    down = tl.shfl_down(v, 1)
    idx = tl.shfl_idx(v, 0)
    pos = v > 0.0
    ballot = tl.vote_ballot(pos)
    anyp = tl.vote_any(pos).to(tl.int32)
    allp = tl.vote_all(pos).to(tl.int32)
    buf = tl.shared_array((64,), tl.int32)
    buf[t] = 0
    tl.barrier()
    tl.atomic_add(cnt_ptr + 0, pos.to(tl.int32))
    base = out_ptr + t * 6
    tl.store(base, s)
    tl.store(base + 1, up)
    tl.store(base + 2, down)
    tl.store(base + 3, idx)
    tl.store(base + 4, (ballot + anyp * 1000 + allp * 10000).to(tl.float32))
    tl.store(base + 5, lane.to(tl.float32) + while_steps * 0.0)


def test_thread_level_intrinsics(iss_device):
    W = iss_device.config.lanes
    T = 4 * W
    x = np.linspace(-1, 2, T).astype(np.float32)
    out = np.zeros(T * 6, np.float32)
    cnt = np.zeros(1, np.int32)
    k_warp[(1,)](x, out, cnt, block=(T, 1, 1))
    o = out.reshape(T, 6)
    w = x.reshape(-1, W)
    pos = w > 0
    ballot = (pos * (1 << np.arange(W))).sum(axis=1)
    want_s = np.repeat(w.sum(axis=1), W)
    assert np.allclose(o[:, 0], want_s, rtol=1e-5)
    up = np.concatenate([[r[0]] + list(r[:-1]) for r in w])
    down = np.concatenate([list(r[1:]) + [r[-1]] for r in w])
    assert np.array_equal(o[:, 1], up) and np.array_equal(o[:, 2], down)
    assert np.array_equal(o[:, 3], np.repeat(w[:, 0], W))
    code = ballot + pos.any(axis=1) * 1000 + pos.all(axis=1) * 10000
    assert np.array_equal(o[:, 4], np.repeat(code, W).astype(np.float32))
    assert np.array_equal(o[:, 5], np.tile(np.arange(W), 4).astype(np.float32))
    assert cnt[0] == int((x > 0).sum())


def test_block_given_as_an_int_or_a_tuple(iss_device):
    """``block=T`` is ``block=(T, 1, 1)`` (same bits); anything else is a launch error."""
    from simtgpu.compiler_backend.jit import LaunchError

    T = 4 * iss_device.config.lanes
    x = np.linspace(-1, 2, T).astype(np.float32)
    outs = []
    for block in (T, (T,), (T, 1, 1)):
        out = np.zeros(T * 6, np.float32)
        k_warp[(1,)](x, out, np.zeros(1, np.int32), block=block)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[2])
    np.testing.assert_array_equal(outs[1], outs[2])
    for bad in (0, -4, (T, 1, 1, 1), (), "32", (T, 1.5), True):
        with pytest.raises(LaunchError, match=r"k_warp: block must be a positive int"):
            k_warp[(1,)](x, np.zeros(T * 6, np.float32), np.zeros(1, np.int32), block=bad)


@triton.jit
def k_dot_loop(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BK: tl.constexpr,
               BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@pytest.mark.parametrize("size_per_thread", [None, 4])
def test_dot_in_a_loop_exact_fma_order(iss_device, size_per_thread):
    """Both layouts (4: each thread a 1x4 block of the output, loads shared per k)."""
    rng = np.random.default_rng(2)
    BM, BN, BK, K = 4, 8, 4, 12
    a = rng.standard_normal((BM, K)).astype(np.float32)
    b = rng.standard_normal((K, BN)).astype(np.float32)
    c = np.zeros((BM, BN), np.float32)
    k_dot_loop[(1,)](a, b, c, K, BM=BM, BK=BK, BN=BN, num_warps=1,
                     size_per_thread=size_per_thread)
    # reference: per k-block an fma chain from 0 in k order, then added to acc
    want = np.zeros((BM, BN), np.float32)
    for k0 in range(0, K, BK):
        part = np.zeros((BM, BN), np.float32)
        for k in range(k0, k0 + BK):
            part = (part.astype(np.float64) + a[:, k:k + 1].astype(np.float64)
                    * b[k:k + 1, :].astype(np.float64)).astype(np.float32)
        want = want + part
    assert np.array_equal(c, want)


def _vector_add_compiled(n: int, block: int):
    """Run examples/dsl/vector_add on ``n`` elements in tiles of ``block``, check the
    result and return the kernel it compiled."""
    from compiler_helpers import example

    m = example("vector_add")
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    m.add_kernel.cache.clear()
    m.add_kernel[(triton.cdiv(n, block),)](x, x, out, n, BLOCK_SIZE=block)
    assert np.array_equal(out, 2 * x)
    (ck,) = m.add_kernel.cache.values()
    return ck


def test_many_masks_spill_predicates_to_registers(iss_device):
    # 256-element tiles: 8 slots per thread, so 8 masks live at once (6 predicates)
    ck = _vector_add_compiled(1500, 256)
    assert "isetp.ne" in ck.code  # a mask re-derived from its 0/1 register


@triton.jit
def k_nested(x_ptr, out_ptr, n, m, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(n - 1, -1, -1):
        for j in range(0, m):
            v = tl.load(x_ptr + i * m + j)
            acc = acc * 0.5 + v * (offs + i).to(tl.float32)
    tl.store(out_ptr + offs, acc)


def test_nested_loops_negative_step(iss_device):
    n, m, B = 3, 4, 32
    x = np.arange(n * m, dtype=np.float32) / 7
    out = np.zeros(B, np.float32)
    k_nested[(1,)](x, out, n, m, BLOCK=B)
    acc = np.zeros(B, np.float32)
    offs = np.arange(B, dtype=np.float32)
    for i in range(n - 1, -1, -1):
        for j in range(m):
            acc = acc * np.float32(0.5) + x[i * m + j] * (offs + np.float32(i))
    assert np.array_equal(out, acc)


def test_uniform_branches_need_no_reconvergence_stack():
    from compiler_helpers import example
    from simtgpu.compiler_backend import ir
    from simtgpu.compiler_backend.compiler import Target, compile_function

    P, I = ir.ptr("f32"), ir.I32  # noqa: E741
    soft = compile_function(example("softmax").softmax_kernel.fn,
                            dict(output_ptr=P, input_ptr=P, input_row_stride=I,
                                 output_row_stride=I, n_rows=I, n_cols=I),
                            dict(BLOCK_SIZE=32, num_stages=1), Target("isa", 8))
    assert "ssy" not in soft.code and "bra" in soft.code  # loop bounds are uniform
    div = compile_function(k_divergent.fn, dict(x_ptr=P, y_ptr=P, n=I), {},
                           Target("isa", 8), block=(32, 1, 1))
    assert div.code.count("ssy") >= 2 and div.code.count("sync") >= 2


@triton.jit
def k_outer(a_ptr, b_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    a = tl.load(a_ptr + rm)  # registers in the (M,) layout
    b = tl.load(b_ptr + rn)
    o = a[:, None] * 2.0 + b[None, :]  # relayout through shared memory
    s = tl.sum(o, axis=0)
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], o - s[None, :])


@pytest.mark.parametrize("m, n", [(4, 8), (16, 16), (64, 2), (2, 64)])
def test_broadcast_of_loaded_tiles(iss_device, m, n):
    rng = np.random.default_rng(m + n)
    a = rng.standard_normal(m).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    o = np.zeros((m, n), np.float32)
    k_outer[(1,)](a, b, o, M=m, N=n)
    full = a[:, None] * np.float32(2) + b[None, :]
    assert np.allclose(o, full - full.sum(axis=0), rtol=1e-5, atol=1e-5)


@triton.jit
def k_return_in_loop(x_ptr, y_ptr, steps):
    t = tl.thread_id(0)
    v = tl.load(x_ptr + t)
    for i in range(0, steps):
        if v > 100.0:
            tl.store(y_ptr + t, v + i * 1000.0)
            return
        v = v * 2.0
    tl.store(y_ptr + t, -v)


def test_return_inside_a_loop(iss_device):
    x = np.linspace(1, 60, 32).astype(np.float32)
    y = np.zeros(32, np.float32)
    k_return_in_loop[(1,)](x, y, 6, block=(32, 1, 1))
    want = []
    for v in x:
        for i in range(6):
            if v > 100:
                want.append(v + i * 1000)
                break
            v = np.float32(v * 2)
        else:
            want.append(-v)
    assert np.array_equal(y, np.array(want, np.float32))


def test_register_spilling_to_shared_memory(iss_device):
    # 1024-element tiles: 32 elements of x and of y per thread, more than 30 registers
    ck = _vector_add_compiled(2500, 1024)
    assert ck.stats["spilled"] > 0 and "sts [r31+" in ck.code and "lds " in ck.code


def test_matmul_with_large_tiles_spills_and_is_correct(iss_device):
    from compiler_helpers import example

    mm = example("matmul")
    rng = np.random.default_rng(7)
    a = rng.standard_normal((20, 17)).astype(np.float32)
    b = rng.standard_normal((17, 24)).astype(np.float32)
    c, _ = mm.matmul(a, b, block=16)
    assert np.allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
