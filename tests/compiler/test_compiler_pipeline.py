"""Software pipelining (compiler_backend/pipeline.py): with num_stages = S the global loads of
a shared-memory-staged loop run S - 1 iterations ahead; results stay bit-identical with
num_stages=1 on the ISS and match NumPy, for trip counts 0, 1, 2, S-1, S, S+1, static and
dynamic; the PTX is accepted by ptxas."""

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from test_compiler_ptx import needs_ptxas, ptxas_errors

BK = 4


@triton.jit
def _mm(a_ptr, b_ptr, c_ptr, K, KSTATIC: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr):
    """An 8 x 8 tile of A (8 x K) @ B (K x 8), K a runtime value or (KSTATIC >= 0) a
    constexpr, so that the trip count is dynamic or known at compile time."""
    if KSTATIC >= 0:
        kk = KSTATIC
    else:
        kk = K
    offs_m = tl.arange(0, BM)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * kk + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * BM + offs_m[None, :]
    acc = tl.zeros((BM, BM), dtype=tl.float32)
    for k in range(0, tl.cdiv(kk, BK)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < kk - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < kk - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * BM
    tl.store(c_ptr + offs_m[:, None] * BM + offs_m[None, :], acc)


def _run(k: int, stages: int, static: bool):
    rng = np.random.default_rng(k)
    a = rng.standard_normal((8, max(k, 1))).astype(np.float32)[:, :k].copy()
    b = rng.standard_normal((max(k, 1), 8)).astype(np.float32)[:k].copy()
    c = np.full((8, 8), np.nan, np.float32)
    args = (a if k else np.zeros(1, np.float32), b if k else np.zeros(1, np.float32), c, k)
    opts = dict(KSTATIC=k if static else -1, BM=8, BK=BK, num_stages=stages)
    ck = _mm.warmup(*args, grid=(1,), **opts)
    _mm[(1,)](*args, **opts)
    return c, a.astype(np.float64) @ b.astype(np.float64), ck


@pytest.mark.parametrize("stages", [2, 3])
def test_bit_identical_with_one_stage(iss_device, stages):
    trips = sorted({0, 1, 2, stages - 1, stages, stages + 1})
    for static in (False, True):
        for t in trips:
            for k in {t * BK, max(t * BK - 1, 0)}:  # a whole last tile, and a masked one
                want, ref, _ = _run(k, 1, static)
                got, _, ck = _run(k, stages, static)
                assert ck.stats["num_stages"] == stages, "the loop was not pipelined"
                assert f"num_stages={stages}" in ck.ir_text
                where = f"K={k} ({'static' if static else 'dynamic'}), num_stages={stages}"
                assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), where
                np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5, err_msg=where)


@triton.jit
def _writes_global(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for i in range(0, n):
        v = tl.load(x_ptr + i * BLOCK + offs)
        tl.store(y_ptr + i * BLOCK + offs, v + 1.0)


def test_loops_that_store_globally_are_left_alone():
    """A prefetched load must not pass a store that may alias it: no pipelining."""
    P = ir.ptr("f32")
    ck = compile_function(_writes_global.fn, dict(x_ptr=P, y_ptr=P, n=ir.I32),
                          dict(BLOCK=32), Target("isa"), 4, num_stages=3)
    assert ck.stats["num_stages"] == 1


def _ptx(stages: int, arch: str = "sm_90") -> str:
    P = ir.ptr("f32")
    return compile_function(_mm.fn, dict(a_ptr=P, b_ptr=P, c_ptr=P, K=ir.I32),
                            dict(KSTATIC=-1, BM=16, BK=16), Target.ptx(arch), 4,
                            num_stages=stages).code


def test_ptx_issues_loads_ahead():
    """With 3 stages the loads of two iterations sit in the prologue and one in the loop
    body: three times the ld.global of the unpipelined kernel, in the same loop."""
    one, three = _ptx(1), _ptx(3)
    assert three.count("ld.global") == 3 * one.count("ld.global") > 0


@needs_ptxas
@pytest.mark.parametrize("stages", [2, 3])
def test_ptxas_accepts_pipelined(tmp_path, stages):
    for arch in ("sm_90", "sm_80"):
        assert ptxas_errors(tmp_path, _ptx(stages, arch), arch) == ""


def pipeline_on_rtl() -> None:
    """On the RTL (the current device): num_stages 2 equals num_stages 1 bit for bit."""
    for static in (False, True):
        want, ref, _ = _run(3 * BK - 1, 1, static)
        got, _, ck = _run(3 * BK - 1, 2, static)
        assert ck.stats["num_stages"] == 2
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_isa_keeps_fewer_stages_where_more_would_spill():
    """8 x 8 x 8 tiles hold four loaded values per thread: a stage ahead spills on this
    ISA's 32 registers, so the compiler keeps the stage count that spills least; without
    num_stages the ISA does not pipeline, PTX does with Triton's 3."""
    P = ir.ptr("f32")
    types = dict(a_ptr=P, b_ptr=P, c_ptr=P, K=ir.I32)
    cexpr = dict(KSTATIC=-1, BM=8, BK=8)
    one = compile_function(_mm.fn, types, cexpr, Target("isa"), 4, num_stages=1)
    three = compile_function(_mm.fn, types, cexpr, Target("isa"), 4, num_stages=3)
    assert three.stats["num_stages"] < 3 and three.n_spills <= one.n_spills
    assert compile_function(_mm.fn, types, cexpr, Target("isa"), 4).stats["num_stages"] == 1
    assert compile_function(_mm.fn, types, cexpr, Target.ptx(), 4).stats["num_stages"] == 3
