"""FMA contraction (compiler_backend/fma.py): a multiply feeding an add or subtract becomes one
fused op rounded once, on both targets, and enable_fp_fusion=False turns it off.

The reference is exact: products and sums in Python rationals, rounded once to float32
(round to nearest even) by hand, so neither float64 double rounding nor the numerics module
under test can hide a wrong result."""

from fractions import Fraction

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from simtgpu.compiler_backend.fma import contract_fma
from simtgpu.compiler_backend.ir import F32, I32, Block, Builder, Function, Param

P = ir.ptr("f32")


def round_f32(x: Fraction) -> np.float32:
    """``x`` rounded once to float32, ties to even (normal range only, as the inputs are)."""
    if x == 0:
        return np.float32(0.0)
    sign, mag = (-1 if x < 0 else 1), abs(x)
    e = mag.numerator.bit_length() - mag.denominator.bit_length() - 24
    while mag / Fraction(2) ** e >= 1 << 24:
        e += 1
    while mag / Fraction(2) ** e < 1 << 23:
        e -= 1
    m = round(mag / Fraction(2) ** e)  # Fraction rounding: ties to even
    return np.float32(sign * m * 2.0 ** e)


def exact(v: np.float32) -> Fraction:
    return Fraction(float(v))


@triton.jit
def _fused(x_ptr, y_ptr, z_ptr, o_ptr, n, FORM: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = tl.load(z_ptr + offs, mask=m)
    if FORM == 0:
        r = x * y + z
    elif FORM == 1:
        r = z + x * y
    elif FORM == 2:
        r = x * y - z
    elif FORM == 3:
        r = z - x * y
    else:
        r = z - x * 3.0
    tl.store(o_ptr + offs, r, mask=m)


FORMS = [lambda x, y, z: x * y + z, lambda x, y, z: z + x * y, lambda x, y, z: x * y - z,
         lambda x, y, z: z - x * y, lambda x, y, z: z - x * 3]


def _inputs(n: int, seed: int):
    rng = np.random.default_rng(seed)
    x, y = (rng.uniform(0.5, 2.0, n).astype(np.float32) for _ in range(2))
    z = (-(x.astype(np.float64) * y) * rng.uniform(0.9, 1.1, n)).astype(np.float32)
    return x, y, z  # z near -x*y: cancellation makes the rounding of the product visible


@pytest.mark.parametrize("fusion", [True, False])
def test_fused_results_are_rounded_once(iss_device, fusion):
    n = 77
    x, y, z = _inputs(n, 3)
    for k, form in enumerate(FORMS):
        got = np.zeros(n, np.float32)
        _fused[(triton.cdiv(n, 32),)](x, y, z, got, n, FORM=k, BLOCK=32,
                                      enable_fp_fusion=fusion)
        once = [round_f32(form(exact(a), exact(b), exact(c)))
                for a, b, c in zip(x, y, z, strict=True)]
        twice = []
        for a, b, c in zip(x, y, z, strict=True):  # the product rounded on its own first
            p = exact(round_f32(exact(a) * exact(b if k < 4 else np.float32(3))))
            twice.append(round_f32(form(p, Fraction(1), exact(c)) if k < 4 else exact(c) - p))
        want = np.array(once if fusion else twice, np.float32)
        assert got.tobytes() == want.tobytes(), (k, fusion)
        # the inputs are chosen so that the two roundings differ: the test can tell them apart
        differ = np.count_nonzero(np.array(once) != np.array(twice))
        assert differ > (n // 8 if k < 4 else 0), (k, differ)


def _count(code: str, mnemonic: str) -> int:
    return sum(1 for ln in code.splitlines() if ln.split() and mnemonic in ln.split()[0])


@pytest.mark.parametrize("target", [Target("isa", 8), Target.ptx()], ids=["isa", "ptx"])
def test_fused_op_count_in_code(target):
    types = dict(x_ptr=P, y_ptr=P, z_ptr=P, o_ptr=P, n=I32)
    fma, mul = ("ffma", "fmul") if target.kind == "isa" else ("fma.rn.ftz.f32", "mul.rn")
    for form in range(len(FORMS)):
        cexpr = dict(FORM=form, BLOCK=32)
        on = compile_function(_fused.fn, types, cexpr, target)
        off = compile_function(_fused.fn, types, cexpr, target, enable_fp_fusion=False)
        assert (_count(on.code, fma), _count(on.code, mul)) == (1, 0)
        assert (_count(off.code, fma), _count(off.code, mul)) == (0, 1)
        if target.kind == "isa":  # a negated variable costs an fneg; a constant folds
            assert _count(on.code, "fneg") == (1 if form in (2, 3) else 0)


def _fn(build) -> Function:
    body = Block()
    b = Builder(body)
    params = [Param(nm, F32, ir.Value(F32)) for nm in ("x", "y", "z")]
    build(b, *(p.value for p in params))
    return Function("t", params, body)


def test_pass_keeps_products_with_other_uses_and_those_outside_the_block():
    def build(b, x, y, z):
        shared = b("fmul", x, y)  # two uses: fusing would compute the product twice
        b("fadd", shared, z)
        b("fsub", shared, z)
        outer = b("fmul", y, z)  # defined outside the loop that adds it
        lb, ub, one = b.const(0, I32), b.const(4, I32), b.const(1, I32)
        body = Block([I32, F32])
        ib = Builder(body)
        acc = ib("fadd", body.args[1], outer)
        inner = ib("fmul", acc, x)
        ib.op("yield", [ib("fadd", z, inner)])
        b.op("for", [lb, ub, one, z], types=[F32], regions=[body])

    fn = contract_fma(_fn(build))
    ir.verify(fn)
    top = [op.name for op in fn.body.ops]
    assert top.count("fmul") == 2 and "ffma" not in top
    loop = next(op for op in fn.body.ops if op.name == "for")
    assert [op.name for op in loop.regions[0].ops] == ["fadd", "ffma", "yield"]
