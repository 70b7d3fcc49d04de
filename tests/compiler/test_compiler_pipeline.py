"""Software pipelining (compiler_backend/pipeline.py): with num_stages = S the global loads of
a shared-memory-staged loop run S - 1 iterations ahead; results stay bit-identical with
num_stages=1 on the ISS and match NumPy, for trip counts 0, 1, 2, S-1, S, S+1, static and
dynamic; the PTX is accepted by ptxas."""

import importlib.util
import re

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend import compiler, ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from simtgpu.compiler_backend.errors import KernelError
from test_compiler_ptx import needs_ptxas, ptxas_errors

BK = 4


@triton.jit
def _mm(a_ptr, b_ptr, c_ptr, K, KSTATIC: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr,
        LOOP_STAGES: tl.constexpr = None):
    """An 8 x 8 tile of A (8 x K) @ B (K x 8), K a runtime value or (KSTATIC >= 0) a
    constexpr, so that the trip count is dynamic or known at compile time; LOOP_STAGES the
    loop's own num_stages (None: the launch's)."""
    if KSTATIC >= 0:
        kk = KSTATIC
    else:
        kk = K
    offs_m = tl.arange(0, BM)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * kk + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * BM + offs_m[None, :]
    acc = tl.zeros((BM, BM), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(kk, BK), num_stages=LOOP_STAGES):
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


def _ptx_kernel(stages: int, arch: str = "sm_90"):
    P = ir.ptr("f32")
    return compile_function(_mm.fn, dict(a_ptr=P, b_ptr=P, c_ptr=P, K=ir.I32),
                            dict(KSTATIC=-1, BM=16, BK=16), Target.ptx(arch), 4,
                            num_stages=stages)


def _ptx(stages: int, arch: str = "sm_90") -> str:
    return _ptx_kernel(stages, arch).code


def test_ptx_copies_ahead_with_cp_async():
    """On PTX the staged tiles go global -> shared by cp.async, no register in between:
    with S stages the copies of S - 1 iterations sit in the prologue and one in the loop
    body, each stage one commit group; the loop waits for all but the S - 2 youngest
    groups (Triton's wait_group num_stages - 2), then a barrier; the loop reads S slots
    of shared memory; wait_group 0 after it."""
    one = _ptx(1)
    loads = one.count("ld.global")
    assert loads > 0 and "cp.async" not in one
    for s in (2, 3, 4):
        ptx = _ptx(s)
        loop = ptx[ptx.index("$L_loop"):ptx.index("$L_exit", ptx.index("$L_loop"))]
        assert ptx.count("cp.async.ca.shared.global") == s * loads, s
        assert "ld.global" not in loop  # the staged loads: none left in registers
        assert ptx.count("cp.async.commit_group") == s and loop.count("commit_group") == 1
        assert re.findall(r"cp\.async\.wait_group (\d+)", loop) == [str(s - 2)]
        wait = loop.index("cp.async.wait_group")
        # the barrier, then the next copies (they fly while this trip computes), then reads
        bar = loop.index("bar.sync", wait)
        assert bar < loop.index("cp.async.ca", wait) < loop.index("ld.shared", wait)
        assert ptx[ptx.index("$L_exit", ptx.index("$L_loop")):].count("wait_group 0") == 1
        # the launch sizes the shared array (dynamic): S slots of one stage's tiles
        assert _ptx_kernel(s).shared_bytes == s * _ptx_kernel(1).shared_bytes


@needs_ptxas
@pytest.mark.parametrize("stages", [2, 3, 4])
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


@pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                    reason="cuobjdump comes with Triton (pip install 'simtgpu[bench]')")
def test_sass_of_pipelined_matmul_copies_with_ldgsts():
    """ptxas turns the copies of the examples' matmul into LDGSTS (global to shared past
    the registers), the commits into LDGDEPBAR and the waits into DEPBAR; with
    num_stages=1 the tiles go through LDG and STS."""
    from simtgpu.compiler_backend import bench_ptx

    tool = bench_ptx.tools()
    case = next(c for c in bench_ptx.CASES if c.label.startswith("matmul"))
    fn = getattr(bench_ptx._load(case.file, False, "cpasync"), case.kernel)
    types = {k: compiler.parse_type(v) for k, v in case.signature.items()}
    for s in (1, 3):
        ptx = compile_function(fn.fn, types, dict(case.constexprs), Target.ptx("sm_90"),
                               case.num_warps, num_stages=s).code
        _, _, sass = bench_ptx.assemble(ptx, tool, f"mm{s}")
        ops = re.findall(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9]*)", sass,
                         re.M)
        if s == 1:
            assert "LDGSTS" not in ops and "LDG" in ops and "STS" in ops
        else:
            assert ops.count("LDGSTS") == len(re.findall(r"cp\.async\.c[ag]\.", ptx)) > 0
            assert ops.count("LDGDEPBAR") == 3 and ops.count("DEPBAR") == 2
            assert "LDG" not in ops


def test_loop_num_stages_overrides_the_kernels(iss_device):
    """tl.range(..., num_stages=k) sets that loop's stages on both targets, over the
    launch's (and the target's default): the ISA pipelines a loop that asks for 2 although
    it does not by default, PTX waits for num_stages - 2 groups of the loop's count, and
    the ISS results equal NumPy's and num_stages=1's bit for bit."""
    P = ir.ptr("f32")
    types = dict(a_ptr=P, b_ptr=P, c_ptr=P, K=ir.I32)

    def isa(loop: int, **kw):
        return compile_function(_mm.fn, types, dict(KSTATIC=-1, BM=8, BK=4, LOOP_STAGES=loop),
                                Target("isa"), 4, **kw)

    assert isa(2).stats["num_stages"] == 2 and isa(1, num_stages=3).stats["num_stages"] == 1
    assert isa(2).code != isa(1).code and isa(1, num_stages=2).code == isa(1).code
    for loop, launch in ((2, None), (4, 1), (1, 3)):
        ptx = compile_function(_mm.fn, types, dict(KSTATIC=-1, BM=16, BK=16,
                                                   LOOP_STAGES=loop),
                               Target.ptx(), 4, num_stages=launch).code
        assert re.findall(r"wait_group (\d+)", ptx) == ([str(loop - 2), "0"] if loop > 1
                                                          else []), (loop, launch)
    rng = np.random.default_rng(5)
    k = 3 * BK - 1
    a = rng.standard_normal((8, k)).astype(np.float32)
    b = rng.standard_normal((k, 8)).astype(np.float32)
    got = {}
    for loop in (1, 2):
        c = np.full((8, 8), np.nan, np.float32)
        _mm[(1,)](a, b, c, k, KSTATIC=-1, BM=8, BK=BK, LOOP_STAGES=loop)
        got[loop] = c
    assert np.array_equal(got[1].view(np.uint32), got[2].view(np.uint32))
    np.testing.assert_allclose(got[2], a.astype(np.float64) @ b.astype(np.float64),
                               rtol=1e-5, atol=1e-5)


def test_loop_num_stages_must_be_a_constant():
    P = ir.ptr("f32")

    @triton.jit
    def bad(x_ptr, n):
        for i in tl.range(0, n, num_stages=n):
            tl.store(x_ptr + i, 1.0)

    with pytest.raises(KernelError, match="num_stages must be a compile-time integer"):
        compile_function(bad.fn, dict(x_ptr=P, n=ir.I32), {}, Target("isa"), 1)


@triton.jit
def _mm_tiles(a_ptr, b_ptr, c_ptr, K, T, OTHER: tl.constexpr, BM: tl.constexpr,
              BK: tl.constexpr):
    """_mm over T output tiles (an outer loop around the K loop), masked-off elements of
    A read as OTHER."""
    offs_m = tl.arange(0, BM)
    offs_k = tl.arange(0, BK)
    for t in range(0, T):
        a_ptrs = a_ptr + t * BM * K + offs_m[:, None] * K + offs_k[None, :]
        b_ptrs = b_ptr + offs_k[:, None] * BM + offs_m[None, :]
        acc = tl.zeros((BM, BM), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=OTHER)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BK
            b_ptrs += BK * BM
        tl.store(c_ptr + t * BM * BM + offs_m[:, None] * BM + offs_m[None, :], acc)


def _tiles_ptx(other: float) -> str:
    P = ir.ptr("f32")
    return compile_function(_mm_tiles.fn, dict(a_ptr=P, b_ptr=P, c_ptr=P, K=ir.I32, T=ir.I32),
                            dict(OTHER=other, BM=16, BK=16), Target.ptx(), 4,
                            num_stages=3).code


def test_nested_copies_wait_for_the_previous_tile_and_other_must_be_zero(iss_device):
    """In an outer loop the prologue's copies overwrite slots the previous tile's last
    trips read: a barrier comes first. A masked load whose other is not 0 cannot be a
    zero-filling copy: that loop stages through registers (ld.global ahead). Both agree
    with NumPy on the ISS (the ISA pipelines in registers either way)."""
    ptx = _tiles_ptx(0.0)
    outer = ptx.index("$L_loop")
    first_copy = ptx.index("cp.async", outer)
    assert "bar.sync" in ptx[outer:first_copy]
    regs = _tiles_ptx(1.0)
    assert "cp.async" not in regs and regs.count("ld.global") > ptx.count("ld.global")
    k, tiles = 2 * BK + 1, 2
    rng = np.random.default_rng(7)
    a = rng.standard_normal((tiles * 8, k)).astype(np.float32)
    b = rng.standard_normal((k, 8)).astype(np.float32)
    for other in (0.0, 1.0):
        c = np.full((tiles, 8, 8), np.nan, np.float32)
        _mm_tiles[(1,)](a, b, c, k, tiles, OTHER=other, BM=8, BK=BK, num_stages=2)
        want = (a.astype(np.float64) @ b.astype(np.float64)).reshape(tiles, 8, 8)
        np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


@triton.jit
def _shared_running_sum(x_ptr, out_ptr, n, T: tl.constexpr):
    """A thread-level kernel whose user shared array carries a running sum across trips and
    out of the loop, beside a tile staged through shared memory each trip."""
    tid = tl.thread_id(0)
    acc = tl.shared_array((T,), tl.float32)
    buf = tl.shared_array((T,), tl.float32)
    acc[tid] = 0.0
    for i in range(0, n, T):
        buf[tid] = tl.load(x_ptr + i + tid)
        tl.barrier()
        acc[tid] = acc[tid] + buf[T - 1 - tid]
        tl.barrier()
    tl.store(out_ptr + tid, acc[tid])


def test_user_shared_arrays_keep_their_place(iss_device):
    """A per-trip shared slot would split ``acc`` into num_stages copies (each trip adding
    to a different one, the store after the loop reading the first): with user shared
    arrays the PTX loop stages in registers, its shared memory is not multiplied; on the
    ISS the sums match NumPy with num_stages 3."""
    P = ir.ptr("f32")

    def ptx(stages: int):
        return compile_function(_shared_running_sum.fn, dict(x_ptr=P, out_ptr=P, n=ir.I32),
                                dict(T=32), Target.ptx(), 1, num_stages=stages)

    three, one = ptx(3), ptx(1)
    assert "cp.async" not in three.code
    assert three.shared_bytes == one.shared_bytes == 256
    t, trips = 8, 5
    x = np.random.default_rng(3).standard_normal(t * trips).astype(np.float32)
    out = np.zeros(t, np.float32)
    _shared_running_sum[(1,)](x, out, t * trips, T=t, block=t, num_stages=3)
    want = np.zeros(t, np.float32)
    for i in range(trips):  # the kernel's order of float32 additions
        want = want + x[i * t:(i + 1) * t][::-1]
    np.testing.assert_array_equal(out, want)
