"""tl.float16 / tl.bfloat16 and tl.dot on the matrix unit: ISS results against NumPy (bit for
bit for the elementwise operations, against numerics.mma for the dot), the PTX through
ptxas, the driver's dtype checks, and Triton's matmul tutorial body with fp16."""

import glob
import os
import shutil
import subprocess
import time

import ml_dtypes
import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from compiler_helpers import example
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from simtgpu.driver_model import Device
from simtgpu.driver_model.errors import DriverError
from simtgpu.errors import SourceError
from simtgpu.isa.mma import mma_shape
from simtgpu.sim import numerics
from test_compiler_ptx import PTXAS, needs_ptxas, ptxas_errors

BF16 = ml_dtypes.bfloat16


@triton.jit
def half_ops(x_ptr, y_ptr, o_ptr, f_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = tl.load(y_ptr + offs, offs < n, 1.0)
    m = offs < n
    z = x * y + x - y * 0.5 + 2
    z = -z + tl.zeros((BLOCK,), dtype=x_ptr.dtype.element_ty)
    tl.store(o_ptr + offs, z, mask=m)
    tl.store(f_ptr + offs, (z.to(tl.float32) * 3.0).to(x_ptr.dtype.element_ty).to(tl.float32),
             mask=m)


def _bits(a):
    return a.view(np.uint16)


@pytest.mark.parametrize("dt", [np.float16, BF16])
@pytest.mark.parametrize("config", ["tiny", "small"])
def test_half_elementwise_bit_exact(dt, config):
    rng = np.random.default_rng(3)
    n = 45  # ragged: every block size leaves a partial block and odd element counts
    x = (rng.standard_normal(n) * 4).astype(dt)
    y = (rng.standard_normal(n) * 4).astype(dt)
    x[:4] = np.array([0.0, -0.0, 6e-5, 1e-7], np.float32).astype(dt)  # zeros, subnormals
    o, f = np.zeros(n, dt), np.zeros(n, np.float32)
    triton.set_device(Device(backend="iss", config=config))
    half_ops[(triton.cdiv(n, 16),)](x, y, o, f, n, BLOCK=16)
    c = lambda v: dt(v)  # noqa: E731 - a Python number converted as Triton's fp32 scalar
    want = -(x * y + x - y * c(np.float32(0.5)) + c(np.float32(2))) + c(0)
    assert np.array_equal(_bits(o), _bits(want))
    assert np.array_equal(f, (want.astype(np.float32) * np.float32(3)).astype(dt)
                          .astype(np.float32))


@triton.jit
def dot_tile(a_ptr, b_ptr, c_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, c))


def _mma_reference(fmt, a, b, c, k):
    """acc = mma(A[:, k-step], B[k-step, :], acc) for each k-step, in order (numerics)."""
    acc = c.view(np.uint32)
    for s in range(0, a.shape[1], k):
        acc = numerics.mma(fmt, _bits(a[:, s:s + k]), _bits(b[s:s + k, :]), acc)
    return np.asarray(acc, np.uint32).view(np.float32)


@pytest.mark.parametrize("config,warps,tiles", [("tiny", 2, (1, 2, 1)), ("small", 2, (2, 2, 2)),
                                                ("full", 1, (2, 2, 2))])
@pytest.mark.parametrize("dt,fmt", [(np.float16, "f16"), (BF16, "bf16")])
def test_dot_on_mma_matches_numerics(config, warps, tiles, dt, fmt):
    dev = Device(backend="iss", config=config)
    s = mma_shape(dev.config.lanes)
    M, N, K = tiles[0] * s.m, tiles[1] * s.n, tiles[2] * s.k  # (tiny: 1 KiB of instructions)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(dt)
    b = rng.standard_normal((K, N)).astype(dt)
    c = rng.standard_normal((M, N)).astype(np.float32)
    o = np.zeros((M, N), np.float32)
    triton.set_device(dev)
    dot_tile[(1,)](a, b, c, o, M=M, N=N, K=K, num_warps=warps)
    assert np.array_equal(o.view(np.uint32), _mma_reference(fmt, a, b, c, s.k).view(np.uint32))
    types = {"a_ptr": ir.ptr(fmt), "b_ptr": ir.ptr(fmt), "c_ptr": ir.ptr("f32"),
             "o_ptr": ir.ptr("f32")}
    ck = compile_function(dot_tile.fn, types, {"M": M, "N": N, "K": K},
                          Target("isa", s.lanes), num_warps=warps)
    rounds = -(-(tiles[0] * tiles[1]) // warps)  # output tiles dealt to the warps
    assert ck.code.count(f"mma.{fmt}") == rounds * tiles[2]


def test_dot_other_shapes_fall_back_to_fp32():
    # K = 4 is below the mma's k (8 on small): the FP32 FMA chain, exact products
    rng = np.random.default_rng(6)
    a = rng.standard_normal((8, 4)).astype(np.float16)
    b = rng.standard_normal((4, 8)).astype(np.float16)
    c = np.zeros((8, 8), np.float32)
    o = np.zeros((8, 8), np.float32)
    triton.set_device(Device(backend="iss", config="small"))
    dot_tile[(1,)](a, b, c, o, M=8, N=8, K=4)
    bits = numerics.f32_to_bits
    want = np.zeros((8, 8), np.uint32)
    for k in range(4):  # the chain's order: fused multiply-adds in k order
        want = numerics.ffma(np.broadcast_to(bits(a[:, k:k + 1].astype(np.float32)), (8, 8)),
                             np.broadcast_to(bits(b[k:k + 1, :].astype(np.float32)), (8, 8)),
                             want)
    assert np.array_equal(o.view(np.uint32), want)


@triton.jit
def mixed_dot(a_ptr, b_ptr, o_ptr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
    tl.store(o_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b.to(tl.bfloat16)))


@triton.jit
def fp16_out_dot(a_ptr, o_ptr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    tl.store(o_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, a, out_dtype=tl.float16))


def test_dot_refusals_name_the_place():
    triton.set_device(Device(backend="iss", config="small"))
    a = np.zeros((16, 16), np.float16)
    with pytest.raises(SourceError, match=r"test_compiler_half.py:\d+:\d+: .*one type"):
        mixed_dot[(1,)](a, a, np.zeros((16, 16), np.float32))
    with pytest.raises(SourceError, match=r"test_compiler_half.py:\d+:\d+: .*accumulates in"):
        fp16_out_dot[(1,)](a, np.zeros((16, 16), np.float32))


def test_dtype_mismatch_is_a_driver_error():
    dev = Device(backend="iss", config="small")
    types = {"x_ptr": ir.ptr("f16"), "y_ptr": ir.ptr("f16"), "o_ptr": ir.ptr("f16"),
             "f_ptr": ir.ptr("f32"), "n": ir.I32}
    ck = compile_function(half_ops.fn, types, {"BLOCK": 16}, Target("isa", 8))
    ck.check_array("x_ptr", np.float16)
    with pytest.raises(DriverError, match="compiled for float16 elements, got an array of "
                                          "float32"):
        ck.check_array("x_ptr", np.float32)
    with pytest.raises(DriverError, match="compiled for float32 elements, got an array of "
                                          "float16"):
        ck.check_array("f_ptr", np.float16)
    from simtgpu.compiler_backend.jit import launch_compiled
    x = np.zeros(16, np.float32)
    with pytest.raises(DriverError, match="float16"):
        launch_compiled(dev, ck, (1, 1, 1), {"x_ptr": x, "y_ptr": x.astype(np.float16),
                                             "o_ptr": x.astype(np.float16), "f_ptr": x, "n": 16})


# --- Triton's matmul tutorial (03-matrix-multiplication) and a GEMM in its spirit ---------------
matmul_kernel = example("matmul").matmul_kernel  # the tutorial's body, changed in its imports


@triton.jit
def gemm_fp16(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
              BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :],
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


MATMUL_CONFIG = {"BLOCK_SIZE_M": 8, "BLOCK_SIZE_N": 8, "BLOCK_SIZE_K": 8, "GROUP_SIZE_M": 2}
MATMUL_TYPES = {"a_ptr": ir.ptr("f16"), "b_ptr": ir.ptr("f16"), "c_ptr": ir.ptr("f16"),
                **{p: ir.I32 for p in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk",
                                       "stride_bn", "stride_cm", "stride_cn")}}


def fp16_tolerance(a, b) -> np.ndarray:
    """|C - A B| bound for fp16 output of an fp32-accumulated product: half an fp16 ulp of
    the result (the final rounding) plus the accumulation bound of numerics.mma_error_bound
    (log2 k + 1 roundings per k-step, at most K/k + 1 steps, of u = 2**-24 each)."""
    absprod = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    steps = a.shape[1] + 8
    return 2.0 ** -11 * np.abs(exact) + 2.0 ** -24 * steps * absprod + 2.0 ** -25


def matmul_tutorial_fp16() -> None:
    """The tutorial kernel with fp16 A, B and C on the current device, against NumPy: its
    store rounds the float32 accumulator to fp16 (as the tutorial's
    accumulator.to(tl.float16) does)."""
    M, N, K = 24, 16, 20  # ragged in M and K: the tutorial's masks and modulo wrap
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_SIZE_M"])  # noqa: E731
                         * triton.cdiv(N, meta["BLOCK_SIZE_N"]),)
    matmul_kernel[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, **MATMUL_CONFIG)
    err = np.abs(c.astype(np.float64) - a.astype(np.float64) @ b.astype(np.float64))
    assert (err <= fp16_tolerance(a, b)).all(), err.max()


def test_triton_matmul_tutorial_fp16_on_iss():
    triton.set_device(Device(backend="iss", config="small"))
    matmul_tutorial_fp16()
    t0 = time.process_time()
    ck = compile_function(matmul_kernel.fn, MATMUL_TYPES, MATMUL_CONFIG, Target("isa", 8))
    assert time.process_time() - t0 < 1.0
    assert "mma.f16" in ck.code


@pytest.mark.parametrize("dt", [np.float16, BF16])
def test_gemm_fp16_output_on_iss(dt):
    M, N, K = 20, 12, 40
    rng = np.random.default_rng(8)
    a = rng.standard_normal((M, K)).astype(dt)
    b = rng.standard_normal((K, N)).astype(dt)
    c = np.zeros((M, N), np.float16)
    triton.set_device(Device(backend="iss", config="small"))
    gemm_fp16[(3, 3)](a, b, c, M, N, K, BM=8, BN=8, BK=8)
    err = np.abs(c.astype(np.float64) - a.astype(np.float64) @ b.astype(np.float64))
    assert (err <= fp16_tolerance(a, b)).all(), err.max()


# --- PTX ---------------------------------------------------------------------------------------
def _ptx(fn, types, cexpr, warps=4):
    return compile_function(fn, types, cexpr, Target.ptx("sm_90"), num_warps=warps).code


def _ptx_kernels():
    half = {"x_ptr": ir.ptr("f16"), "y_ptr": ir.ptr("f16"), "o_ptr": ir.ptr("f16"),
            "f_ptr": ir.ptr("f32"), "n": ir.I32}
    bhalf = {**half, "x_ptr": ir.ptr("bf16"), "y_ptr": ir.ptr("bf16"), "o_ptr": ir.ptr("bf16")}
    out = [_ptx(half_ops.fn, half, {"BLOCK": 128}), _ptx(half_ops.fn, bhalf, {"BLOCK": 128})]
    for fmt in ("f16", "bf16"):
        types = {"a_ptr": ir.ptr(fmt), "b_ptr": ir.ptr(fmt), "c_ptr": ir.ptr("f32"),
                 "o_ptr": ir.ptr("f32")}
        out.append(_ptx(dot_tile.fn, types, {"M": 32, "N": 16, "K": 32}, warps=2))
    out.append(_ptx(matmul_kernel.fn, MATMUL_TYPES, {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32,
                                                     "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 4}))
    gemm = {"a_ptr": ir.ptr("bf16"), "b_ptr": ir.ptr("bf16"), "c_ptr": ir.ptr("f16"),
            "M": ir.I32, "N": ir.I32, "K": ir.I32}
    out.append(_ptx(gemm_fp16.fn, gemm, {"BM": 32, "BN": 32, "BK": 16}))
    return out


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptxas_accepts_half_and_mma(tmp_path, arch):
    for text in _ptx_kernels():
        text = text.replace(".target sm_90", f".target {arch}")
        assert ptxas_errors(tmp_path, text, arch) == "", text
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in _ptx_kernels()[3]


def _cuobjdump() -> str | None:
    found = shutil.which("cuobjdump")
    if found:
        return found
    import importlib.util
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return None
    hits = glob.glob(os.path.join(spec.submodule_search_locations[0], "backends", "nvidia",
                                  "bin", "cuobjdump"))
    return hits[0] if hits else None


@needs_ptxas
def test_sass_uses_tensor_core(tmp_path):
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump not found (system CUDA toolkit or the triton wheel's copy)")
    src = tmp_path / "k.ptx"
    src.write_text(_ptx_kernels()[2])
    subprocess.run([PTXAS, "-arch=sm_90", str(src), "-o", str(tmp_path / "k.cubin")],
                   check=True, timeout=120)
    sass = subprocess.run([tool, "-sass", str(tmp_path / "k.cubin")], capture_output=True,
                          text=True, check=True, timeout=120).stdout
    assert "HMMA" in sass


# --- the RTL (called from test_compiler_rtl.py, which builds the Verilator model once) ------
def half_kernels_on_rtl():
    """On the current (rtl, small) device: the elementwise fp16/bf16 kernel bit for bit,
    tl.dot on the matrix unit against numerics.mma bit for bit, and Triton's matmul
    tutorial with fp16 against NumPy."""
    rng = np.random.default_rng(9)
    for dt in (np.float16, BF16):
        x = (rng.standard_normal(37) * 4).astype(dt)
        y = (rng.standard_normal(37) * 4).astype(dt)
        o, f = np.zeros(37, dt), np.zeros(37, np.float32)
        half_ops[(3,)](x, y, o, f, 37, BLOCK=16)
        want = -(x * y + x - y * dt(np.float32(0.5)) + dt(np.float32(2))) + dt(0)
        assert np.array_equal(_bits(o), _bits(want)), dt
    s = mma_shape(8)  # the rtl device of test_compiler_rtl.py is 'small'
    M, N, K = s.m, 2 * s.n, s.k
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = rng.standard_normal((M, N)).astype(np.float32)
    o = np.zeros((M, N), np.float32)
    dot_tile[(1,)](a, b, c, o, M=M, N=N, K=K, num_warps=2)
    assert np.array_equal(o.view(np.uint32), _mma_reference("f16", a, b, c, s.k).view(np.uint32))
    matmul_tutorial_fp16()


@triton.jit
def half_select_ops(x_ptr, y_ptr, o_ptr, s_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    z = tl.where(x > y, x, y * 2)
    z = tl.minimum(tl.maximum(z, x), 1.5)
    tl.store(o_ptr + offs, tl.abs(z) + x / y)
    tl.store(s_ptr, tl.sum(x, 0))
    tl.store(s_ptr + 1, tl.max(x, 0))


def test_half_where_minmax_abs_division_reductions():
    rng = np.random.default_rng(4)
    x = rng.standard_normal(32).astype(np.float16)
    y = rng.standard_normal(32).astype(np.float16)
    o, s = np.zeros(32, np.float16), np.zeros(2, np.float32)
    triton.set_device(Device(backend="iss", config="small"))
    half_select_ops[(1,)](x, y, o, s, BLOCK=32)
    z = np.minimum(np.maximum(np.where(x > y, x, y * np.float16(2)), x), np.float16(1.5))
    bits = numerics.f32_to_bits
    quotient = numerics.f32_to_f16(numerics.fmul(bits(x.astype(np.float32)), numerics.sfu(
        "rcp", bits(y.astype(np.float32)))))  # the documented a * rcp(b), rounded once
    assert np.array_equal(o, np.abs(z) + quotient.view(np.float16))
    assert s[1] == x.max()
    assert abs(s[0] - x.astype(np.float64).sum()) < 1e-5 * np.abs(x).sum()  # float32 sum
