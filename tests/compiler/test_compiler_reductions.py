"""Axis reductions by warp shuffles (compiler_backend/reductions.py): bit for bit on the ISS
against a NumPy model of the documented order (slots in order, xor butterfly over the
reduced lane bits from the highest, warps in order), the shuffles in the code, ptxas."""

import subprocess

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from simtgpu.compiler_backend.reductions import uses_shuffles
from test_compiler_ptx import PTXAS, needs_ptxas


def _lg(n: int) -> int:
    return n.bit_length() - 1


def model_sum(x: np.ndarray, axis: int, T: int, W: int, v: int = 1) -> np.ndarray:
    """The compiler's order of float32 additions for ``tl.sum(x, axis)`` on T threads of
    warps of W lanes, ``v`` contiguous elements per thread (element
    ``(s // v) * T * v + t * v + s % v`` of the flat tile in thread t, slot s)."""
    M, N = x.shape
    lt, lw, lv = _lg(T), _lg(W), _lg(v)
    lo, hi = (0, _lg(N)) if axis == 1 else (_lg(N), _lg(M * N))
    nslots = M * N // T
    tid = np.arange(T)

    def flat(s):
        return (s // v) * T * v + tid * v + s % v

    vals = [x.astype(np.float32).reshape(-1)[flat(s)] for s in range(nslots)]
    reduced = sum(1 << (b if b < lv else b - lt) for b in range(lo, hi)
                  if b < lv or b >= lv + lt)
    groups: dict[int, np.ndarray] = {}
    for s in range(nslots):  # 1. the thread's slots in order
        rep = s & ~reduced
        groups[rep] = vals[s].copy() if rep not in groups else groups[rep] + vals[s]
    t_lo, t_hi = max(lo, lv) - lv, max(min(hi, lv + lt) - lv, 0)
    shared = np.zeros(M * N, np.float32)
    for rep, a in groups.items():  # 2. the butterfly, highest lane bit first
        for b in range(min(t_hi, lw) - 1, t_lo - 1, -1):
            a = a + a[tid ^ (1 << b)]
        shared[flat(rep)] = a
    w_lo, w_hi = max(t_lo, lw), t_hi
    out = []
    for o in range(M if axis == 1 else N):  # 3. the warps in order
        first = o * N if axis == 1 else o
        parts = [shared[first + (k << (w_lo + lv))] for k in range(1 << max(0, w_hi - w_lo))]
        acc = parts[0]
        for p in parts[1:]:
            acc = np.float32(acc + p)
        out.append(acc)
    return np.array(out, np.float32)


@triton.jit
def _axis_sum(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    if AXIS == 1:
        tl.store(o_ptr + rm, tl.sum(x, axis=1))
    else:
        tl.store(o_ptr + rn, tl.sum(x, axis=0))


# (M, N, warps) on warps of 8: rows within a warp, across warps, across slots; columns in
# a thread's slots, across lanes, across warps
SHAPES = [(8, 4, 4), (4, 8, 4), (2, 64, 4), (1, 128, 2), (16, 16, 4), (32, 2, 4), (4, 64, 1),
          (32, 32, 4), (8, 16, 2)]


@pytest.mark.parametrize("m, n, warps", SHAPES, ids=[f"{m}x{n}w{w}" for m, n, w in SHAPES])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("spt", [1, 4])
def test_axis_sum_is_the_documented_order(iss_device, m, n, warps, axis, spt):
    """In the cyclic layout and the blocked one (``size_per_thread=4``, PTX's)."""
    lanes = iss_device.config.lanes
    rng = np.random.default_rng(m * 1000 + n * 10 + warps + axis)
    x = rng.standard_normal((m, n)).astype(np.float32) * np.float32(1e3) ** rng.integers(
        -1, 2, (m, n)).astype(np.float32)  # magnitudes apart: the order shows in the bits
    out = np.zeros(m if axis == 1 else n, np.float32)
    _axis_sum[(1,)](x, out, M=m, N=n, AXIS=axis, num_warps=warps, size_per_thread=spt)
    T = warps * lanes
    if uses_shuffles((m, n), axis, T, lanes):
        v = max(1, min(spt, m * n // T, n))
        want = model_sum(x, axis, T, lanes, v)
    else:  # the shared-memory exchange: a sequential chain in index order
        want = x[:, 0] if axis == 1 else x[0]
        for k in range(1, x.shape[axis]):
            want = want + (x[:, k] if axis == 1 else x[k])
    assert out.tobytes() == want.tobytes()
    assert np.allclose(out, x.astype(np.float64).sum(axis=axis), rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("m, n", [(8, 32), (32, 8), (16, 16)])
@pytest.mark.parametrize("axis", [0, 1])
def test_the_chosen_path_is_never_slower_on_the_iss(iss_device, monkeypatch, m, n, axis):
    import simtgpu.compiler_backend.language as lang

    x = np.ones((m, n), np.float32)
    counts = []
    for shuffles in (False, True):
        if not shuffles:
            monkeypatch.setattr(lang, "reduce_axis_shuffle", lambda *a, **k: None)
        else:
            monkeypatch.undo()
        _axis_sum.cache.clear()
        out = np.zeros(m if axis == 1 else n, np.float32)
        counts.append(_axis_sum[(1,)](x, out, M=m, N=n, AXIS=axis, num_warps=4).instructions)
        assert np.all(out == x.shape[axis])
    assert counts[1] <= counts[0]
    if axis == 0:  # columns: fewer instructions
        assert counts[1] < counts[0]


def test_the_model_sees_the_order():
    x = np.random.default_rng(5).standard_normal((4, 64)).astype(np.float32) * np.float32(1e4)
    seq = np.array([np.float32(sum(np.float32(v) for v in row)) for row in x], np.float32)
    assert model_sum(x, 1, 32, 8).tobytes() != seq.tobytes()  # not a sequential sum


P = ir.ptr("f32")


def test_rows_within_a_warp_use_shuffles_and_no_exchange_for_columns():
    types = dict(x_ptr=P, o_ptr=P)
    rows = compile_function(_axis_sum.fn, types, dict(M=8, N=8, AXIS=1), Target("isa", 8))
    assert rows.code.count("shfl.xor") == 3 * 2  # 2 slots, log2(8) steps each
    cols = compile_function(_axis_sum.fn, types, dict(M=8, N=32, AXIS=0), Target("isa", 8))
    assert "shfl" not in cols.code and "bar" not in cols.code.split()  # own slots only


@needs_ptxas
@pytest.mark.parametrize("axis", [0, 1])
def test_ptxas_accepts(tmp_path, axis):
    code = compile_function(_axis_sum.fn, dict(x_ptr=P, o_ptr=P), dict(M=16, N=16, AXIS=axis),
                            Target.ptx()).code
    assert "shfl.sync.bfly.b32" in code
    src = tmp_path / "k.ptx"
    src.write_text(code)
    r = subprocess.run([PTXAS, "-arch=sm_90", str(src), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_back_to_back_barriers_become_one():
    from simtgpu.compiler_backend.ir import Block, Builder, Function
    from simtgpu.compiler_backend.reductions import drop_repeated_barriers

    body = Block()
    b = Builder(body)
    b.op("barrier", [])
    b.const(1, ir.I32)  # pure: orders nothing
    b.op("barrier", [])
    p = b.op("smem", [], {"offset": 0}, [ir.ptr("f32", "shared")]).result
    b.op("store", [p, b.const(0.0, ir.F32)])
    b.op("barrier", [])  # after a store: stays
    fn = drop_repeated_barriers(Function("t", [], body))
    assert [op.name for op in fn.body.ops] == ["barrier", "const", "smem", "const", "store",
                                               "barrier"]
