"""Float ``!=`` with NaN (unordered, as NumPy and Triton: ``nan != x`` is True) on the ISS,
in constant folding and in PTX; compile-time values as ``tl.constexpr`` (``isinstance``,
``tl.constexpr(v)``, ``None`` arguments) as in Triton."""

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend import Target, compile_function, ir
from test_compiler_ptx import needs_ptxas, ptxas_errors

P = ir.ptr("f32")
PI = ir.ptr("i32")
X = np.array([1, np.nan, np.nan, 2, 0, -0.0, np.inf, 3], np.float32)
Y = np.array([1, 1, np.nan, 3, -0.0, 0, np.inf, np.nan], np.float32)


@triton.jit
def k_compare(x_ptr, y_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    bits = (x != y).to(tl.int32) + 2 * (x == y).to(tl.int32) + 4 * (x != x).to(tl.int32)
    bits += 8 * x.to(tl.int1).to(tl.int32) + 16 * (x < y).to(tl.int32)
    tl.store(o_ptr + offs, bits)


def _want(x, y):
    with np.errstate(invalid="ignore"):
        return ((x != y) + 2 * (x == y) + 4 * (x != x) + 8 * x.astype(bool)
                + 16 * (x < y)).astype(np.int32)


def test_not_equal_is_unordered_on_the_iss(iss_device):
    o = np.zeros(8, np.int32)
    k_compare[(1,)](X, Y, o, BLOCK=8)
    assert np.array_equal(o, _want(X, Y))


@triton.jit
def k_folded(o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    nan = tl.full((BLOCK,), float("nan"), tl.float32)
    one = tl.full((BLOCK,), 1.0, tl.float32)
    bits = (nan != one).to(tl.int32) + 2 * (nan == nan).to(tl.int32)
    bits += 4 * (nan != nan).to(tl.int32) + 8 * (one != one).to(tl.int32)
    bits += 16 * nan.to(tl.int1).to(tl.int32)
    tl.store(o_ptr + offs, bits)


def test_not_equal_folds_as_it_executes(iss_device):
    ck = compile_function(k_folded.fn, {"o_ptr": PI}, {"BLOCK": 8}, Target("isa", 8))
    assert "fsetp" not in ck.code  # folded at compile time, through sim.numerics
    o = np.zeros(8, np.int32)
    k_folded[(1,)](o, BLOCK=8)
    assert np.all(o == 1 + 4 + 16)  # nan != 1, nan != nan, bool(nan); not nan == nan, 1 != 1


def test_not_equal_in_ptx_is_not_the_ordered_compare():
    ck = compile_function(k_compare.fn, {"x_ptr": P, "y_ptr": P, "o_ptr": PI}, {"BLOCK": 32},
                          Target.ptx())
    # setp.ne is false on NaN: != must be setp.neu or the negation of setp.eq
    assert "setp.ne.ftz.f32" not in ck.code and "setp.ne.f32" not in ck.code
    assert "setp.eq.ftz.f32" in ck.code or "setp.neu" in ck.code


@needs_ptxas
def test_ptx_of_the_compares_and_constexpr_kernels_assembles(tmp_path):
    ck = compile_function(k_compare.fn, {"x_ptr": P, "y_ptr": P, "o_ptr": PI}, {"BLOCK": 32},
                          Target.ptx())
    assert ptxas_errors(tmp_path, ck.code) == ""
    ck = compile_function(k_constexpr.fn, {"x_ptr": P, "n": ir.I32},
                          {"BLOCK": 32, "SCALE": 2, "MODE": "add", "b_ptr": None},
                          Target.ptx())
    assert ptxas_errors(tmp_path, ck.code) == ""


@triton.jit
def k_constexpr(x_ptr, n, b_ptr, BLOCK: tl.constexpr, SCALE: tl.constexpr,
                MODE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if isinstance(SCALE, tl.constexpr):  # a constexpr parameter is a tl.constexpr
        x = x * SCALE
    if isinstance(n, tl.constexpr):  # a run-time scalar is not
        x = x + 1000.0
    c = tl.constexpr(3)
    if c == 3 and isinstance(c, tl.constexpr) and SCALE > 1:
        x = x + 0.5
    if MODE == "add" and b_ptr is not None:  # a None argument is compile-time, as in Triton
        x += tl.load(b_ptr + offs)
    tl.store(x_ptr + offs, x)


@pytest.mark.parametrize("bias", [False, True])
def test_constexpr_values_and_none_in_conditions(iss_device, bias):
    x = np.arange(8, dtype=np.float32)
    b = np.full(8, 0.25, np.float32)
    k_constexpr[(1,)](x, 5, b if bias else None, BLOCK=8, SCALE=2, MODE="add")
    want = np.arange(8, dtype=np.float32) * 2 + 0.5 + (0.25 if bias else 0.0)
    assert np.array_equal(x, want)
