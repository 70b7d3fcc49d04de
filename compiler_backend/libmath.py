"""``tl.math``: Triton's math namespace, plus the libdevice functions kernels use most.

Each function is a short float32 sequence of this ISA's operations (the SFU's rcp, rsqrt,
sqrt, exp2 and log2, fused multiply-adds, compares and selects), the same on both targets, so
ISS, RTL and the PTX agree. The accuracy of each against float64 NumPy is measured by
tests/compiler/test_compiler_libmath.py and listed in docs/compiler.md. Names Triton has in
``tl.math`` or libdevice that are not here give a compile error naming the place.
"""

from __future__ import annotations

import enum

import numpy as np

from .errors import CompileError
from .ir import F32, I1, I32, I64, Value
from .lang_base import LN2, LOG2E, _builtin_named, _minmax, builtin, constexpr
from .tiles import FLOAT_MOD, Lowering, Tile

_TWO23 = 8388608.0  # from 2**23 on, every float32 is an integer
_LOG2E_LO = LOG2E - float(np.float32(LOG2E))  # the part of log2(e) below float32 precision


class PropagateNan(enum.Enum):
    """``tl.clamp``/``tl.maximum`` NaN handling: NONE (the other operand wins), ALL (NaN)."""

    NONE = 0
    ALL = 0xFFFF


def _f32(ctx: Lowering, x) -> Tile:
    return ctx.cast(ctx.to_tile(x, like=Tile(ctx, (), F32, slots=[ctx.const(0.0, F32)])), F32)


def _map_f32(ctx: Lowering, args: tuple, f) -> Tile:
    return ctx.mapn([_f32(ctx, a) for a in args], F32, f)


class _Ops:
    """Per-element float32 building blocks over the IR builder."""

    def __init__(self, ctx: Lowering):
        self.ctx = ctx
        self.b = ctx.b

    def c(self, v: float) -> Value:
        return self.ctx.const(v, F32)

    def __call__(self, name: str, *vs: Value) -> Value:
        return self.b(name, *vs)

    def cmp(self, cond: str, a: Value, b: Value) -> Value:
        return self.b.op("fcmp", [a, b], {"cond": cond}).result

    def sel(self, p: Value, a: Value, b: Value) -> Value:
        return self.b("select", p, a, b)

    def exp(self, x: Value) -> Value:
        """e**x with x * log2(e) carried in two parts (hi + lo, by a fused multiply-add), so
        large |x| lose no accuracy to the rounding of the product (tl.exp keeps one part)."""
        hi = self.b("fmul", x, self.c(LOG2E))
        lo = self.b("ffma", x, self.c(LOG2E), self.b("fneg", hi))
        lo = self.b("ffma", x, self.c(_LOG2E_LO), lo)
        e = self.b("exp2", hi)
        fixed = self.b("ffma", e, self.b("fmul", lo, self.c(LN2)), e)
        # |hi| >= 128: e is already 0 or inf (and lo may be NaN from inf - inf)
        return self.sel(self.cmp("lt", self.b("fabs", hi), self.c(128.0)), fixed, e)

    def log(self, x: Value) -> Value:
        return self.b("fmul", self.b("log2", x), self.c(LN2))

    def poly(self, x: Value, coeffs: list[float]) -> Value:
        """c0 + x * (c1 + x * (...)) by Horner's rule with fused multiply-adds."""
        acc = self.c(coeffs[-1])
        for k in reversed(coeffs[:-1]):
            acc = self.b("ffma", acc, x, self.c(k))
        return acc

    def floor(self, x: Value) -> Value:
        r = self.b("i2f", self.b("f2i", x))  # truncation, exact below 2**23
        r = self.sel(self.cmp("gt", r, x), self.b("fsub", r, self.c(1.0)), r)
        r = self.sel(self.cmp("eq", r, self.c(0.0)), self.b("fmul", x, self.c(0.0)), r)
        small = self.cmp("lt", self.b("fabs", x), self.c(_TWO23))  # false for NaN and inf
        return self.sel(small, r, x)

    def trunc(self, x: Value) -> Value:
        r = self.b("i2f", self.b("f2i", x))
        r = self.sel(self.cmp("eq", r, self.c(0.0)), self.b("fmul", x, self.c(0.0)), r)
        return self.sel(self.cmp("lt", self.b("fabs", x), self.c(_TWO23)), r, x)

    def expm1(self, x: Value) -> Value:
        # |x| < 0.35: Taylor to x**9 (truncation below 2e-10 relative); else exp(x) - 1,
        # where the cancellation is at most a factor 3.4
        small = self.poly(x, [1.0, 1 / 2, 1 / 6, 1 / 24, 1 / 120, 1 / 720, 1 / 5040,
                              1 / 40320, 1 / 362880])
        small = self.b("fmul", x, small)
        big = self.b("fsub", self.exp(x), self.c(1.0))
        return self.sel(self.cmp("lt", self.b("fabs", x), self.c(0.35)), small, big)

    def log1p(self, x: Value) -> Value:
        # u = 1 + x rounded, c = (x - (u - 1)) / u the rounding's share (log(1 + x) =
        # log(u) + c to first order); log(u) = e ln2 + log(m) with u = m 2**e, m in
        # [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172,
        # by its odd series to s**11 (fdlibm's reduction): no SFU log2, whose error near 1
        # is absolute on some targets (the PTX lg2.approx); the SFU gives the specials
        one = self.c(1.0)
        u = self.b("fadd", x, one)
        c = self.div(self.b("fsub", x, self.b("fsub", u, one)), u)
        k = self.b("add", self.bits(u), self.ctx.const(0x3F800000 - 0x3F3504F3))
        e = self.b("i2f", self.b("sub", self.b("sra", k, self.ctx.const(23)),
                                 self.ctx.const(127)))
        m = self.from_bits(self.b("add", self.b("and", k, self.ctx.const(0x7FFFFF)),
                                  self.ctx.const(0x3F3504F3)))
        f = self.b("fsub", m, one)
        t = self.div(f, self.b("fadd", f, self.c(2.0)))
        logm = self.b("fmul", t, self.poly(self.b("fmul", t, t),
                                           [2.0, 2 / 3, 2 / 5, 2 / 7, 2 / 9, 2 / 11]))
        ln2_hi = float(np.float32(LN2))
        r = self.b("ffma", e, self.c(ln2_hi),
                   self.b("fadd", logm, self.b("ffma", e, self.c(LN2 - ln2_hi), c)))
        r = self.sel(self.cmp("eq", u, one), x, r)  # |x| below 2**-24 (and -0.0 kept)
        finite = self.b("and", self.cmp("gt", u, self.c(0.0)),
                        self.cmp("lt", u, self.c(float("inf"))))
        return self.sel(finite, r, self.log(u))  # -inf at u = 0, NaN below, inf, NaN

    def erf(self, x: Value) -> Value:
        a = self.b("fabs", x)
        # |x| < 0.5: the Maclaurin series 2/sqrt(pi) * sum (-1)^k x^(2k+1) / (k! (2k+1))
        x2 = self.b("fmul", x, x)
        coeffs = [1.0, -1 / 3, 1 / 10, -1 / 42, 1 / 216, -1 / 1320, 1 / 9360, -1 / 75600]
        series = self.b("fmul", self.b("fmul", x, self.c(1.1283791670955126)),
                        self.poly(x2, coeffs))
        # otherwise 1 - erfc(|x|), erfc by the Chebyshev fit of Numerical Recipes (6.2),
        # fractional error below 1.2e-7
        t = self.b("rcp", self.b("ffma", a, self.c(0.5), self.c(1.0)))
        p = self.poly(t, [-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
                          0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277])
        erfc = self.b("fmul", t, self.exp(self.b("fsub", p, self.b("fmul", a, a))))
        big = self.b("fsub", self.c(1.0), erfc)
        big = self.sel(self.cmp("lt", x, self.c(0.0)), self.b("fneg", big), big)
        return self.sel(self.cmp("lt", a, self.c(0.5)), series, big)


    # --- the libdevice functions of the second set (rounding, fmod, inverse trigonometry,
    # hyperbolic, sign bits) ---------------------------------------------------------------
    def bits(self, v: Value) -> Value:
        return self.b.op("bitcast", [v], {"to": "i32"}).result

    def from_bits(self, v: Value) -> Value:
        return self.b.op("bitcast", [v], {"to": "f32"}).result

    def copysign(self, mag: Value, sign: Value) -> Value:
        """|mag| with the sign bit of ``sign`` (NaNs and zeros included)."""
        m = self.b("and", self.bits(mag), self.ctx.const(0x7FFFFFFF))
        s = self.b("and", self.bits(sign), self.ctx.const(-0x80000000))
        return self.from_bits(self.b("or", m, s))

    def _integral(self, x: Value, r: Value) -> Value:
        """A rounding ``r`` of |x| given back with x's sign (-0.0 for a negative x that
        rounds to 0), and x itself from 2**23 on (already an integer), inf and NaN."""
        r = self.copysign(r, x)
        return self.sel(self.cmp("lt", self("fabs", x), self.c(_TWO23)), r, x)

    def rint(self, x: Value) -> Value:
        """Round half to even: |x| + 2**23 - 2**23 in round-to-nearest-even arithmetic."""
        a = self("fabs", x)
        return self._integral(x, self("fsub", self("fadd", a, self.c(_TWO23)), self.c(_TWO23)))

    def round(self, x: Value) -> Value:
        """Round half away from zero: trunc(|x|), plus 1 where the (exact) fraction is at
        least 0.5."""
        a = self("fabs", x)
        t = self.trunc(a)
        up = self.cmp("ge", self("fsub", a, t), self.c(0.5))
        return self._integral(x, self.sel(up, self("fadd", t, self.c(1.0)), t))

    def div(self, a: Value, b: Value) -> Value:
        return self("fmul", a, self("rcp", b))

    def atan01(self, t: Value) -> Value:
        """atan(t) for 0 <= t <= 1: above tan(pi/12) by atan(t) = pi/6 + atan(u), u =
        (t sqrt3 - 1) / (t + sqrt3); then the odd series to u**15 (|u| <= tan(pi/12): the
        truncation is below 5e-11 relative)."""
        s3 = 1.7320508075688772
        hi = self.cmp("gt", t, self.c(0.2679491924311227))
        u = self.div(self("ffma", t, self.c(s3), self.c(-1.0)), self("fadd", t, self.c(s3)))
        u = self.sel(hi, u, t)
        u2 = self("fmul", u, u)
        p = self.poly(u2, [1.0, -1 / 3, 1 / 5, -1 / 7, 1 / 9, -1 / 11, 1 / 13, -1 / 15])
        r = self("fmul", u, p)
        return self.sel(hi, self("fadd", r, self.c(0.5235987755982988)), r)

    def atan(self, x: Value) -> Value:
        a = self("fabs", x)
        inv = self.cmp("gt", a, self.c(1.0))
        r = self.atan01(self.sel(inv, self("rcp", a), a))
        r = self.sel(inv, self("fsub", self.c(1.5707963267948966), r), r)
        return self.copysign(r, x)  # NaN stays NaN

    def atan2(self, y: Value, x: Value) -> Value:
        """C's atan2: atan of min(|x|,|y|) / max(|x|,|y|), then the octant, with the
        signed-zero and infinity rules (atan2(+-0, -0) = +-pi, atan2(inf, inf) = pi/4)."""
        ax, ay = self("fabs", x), self("fabs", y)
        mx, mn = self("fmax", ax, ay), self("fmin", ax, ay)
        inf = self.c(float("inf"))
        t = self.div(mn, mx)
        t = self.sel(self.cmp("eq", mx, self.c(0.0)), self.c(0.0), t)
        t = self.sel(self.cmp("eq", mn, inf), self.c(1.0), t)  # both infinite
        r = self.atan01(t)
        r = self.sel(self.cmp("gt", ay, ax), self("fsub", self.c(1.5707963267948966), r), r)
        neg_x = self.b.op("icmp", [self.bits(x), self.ctx.const(0)], {"cond": "lt"}).result
        r = self.sel(neg_x, self("fsub", self.c(3.141592653589793), r), r)
        r = self.copysign(r, y)
        nan = self("not", self("and", self.cmp("eq", x, x), self.cmp("eq", y, y)))
        return self.sel(nan, self("fadd", x, y), r)

    def fmod(self, x: Value, y: Value) -> Value:
        """C's fmod, exact while |x / y| < 2**22: q = trunc(|x| / |y|) and the fused
        residual |x| - q |y| (exact: a multiple of ulp(|y|) below 2 |y|), corrected twice
        for the quotient's rounding, with x's sign."""
        ax, ay = self("fabs", x), self("fabs", y)
        q = self.trunc(self.div(ax, ay))
        r = self("ffma", self("fneg", q), ay, ax)
        for _ in range(2):
            r = self.sel(self.cmp("lt", r, self.c(0.0)), self("fadd", r, ay), r)
            r = self.sel(self.cmp("ge", r, ay), self("fsub", r, ay), r)
        r = self.sel(self.cmp("lt", ax, ay), ax, r)  # also |y| = inf with x finite
        r = self.copysign(r, x)
        bad = self("or", self.cmp("eq", ay, self.c(0.0)),
                   self.cmp("eq", ax, self.c(float("inf"))))
        bad = self("or", bad, self("not", self("and", self.cmp("eq", x, x),
                                                self.cmp("eq", y, y))))
        return self.sel(bad, self.c(float("nan")), r)

    def sinh(self, x: Value) -> Value:
        """(e - 1/e) / 2 as (m + m / (m + 1)) / 2 with m = expm1(|x|): accurate near 0."""
        m = self.expm1(self("fabs", x))
        r = self("fmul", self("fadd", m, self.div(m, self("fadd", m, self.c(1.0)))),
                 self.c(0.5))
        r = self.sel(self.cmp("eq", m, self.c(float("inf"))), m, r)
        return self.copysign(r, x)

    def cosh(self, x: Value) -> Value:
        e = self.exp(self("fabs", x))
        return self("ffma", e, self.c(0.5), self.div(self.c(0.5), e))

    def exp10(self, x: Value) -> Value:
        """10**x with x log2(10) in two parts, as :meth:`exp`."""
        l2, l2_lo = 3.321928094887362, 3.321928094887362 - float(np.float32(3.321928094887362))
        hi = self("fmul", x, self.c(l2))
        lo = self("ffma", x, self.c(l2), self("fneg", hi))
        lo = self("ffma", x, self.c(l2_lo), lo)
        e = self("exp2", hi)
        fixed = self("ffma", e, self("fmul", lo, self.c(LN2)), e)
        return self.sel(self.cmp("lt", self("fabs", hi), self.c(128.0)), fixed, e)

    def hypot(self, x: Value, y: Value) -> Value:
        """max * sqrt(1 + (min/max)**2), so no square overflows; inf if either is
        infinite (even with a NaN), as C says."""
        ax, ay = self("fabs", x), self("fabs", y)
        mx, mn = self("fmax", ax, ay), self("fmin", ax, ay)
        t = self.div(mn, mx)
        r = self("fmul", mx, self("sqrt", self("ffma", t, t, self.c(1.0))))
        r = self.sel(self.cmp("eq", mx, self.c(0.0)), self.c(0.0), r)
        nan = self("not", self("and", self.cmp("eq", x, x), self.cmp("eq", y, y)))
        r = self.sel(nan, self("fadd", x, y), r)
        inf = self.c(float("inf"))
        return self.sel(self("or", self.cmp("eq", ax, inf), self.cmp("eq", ay, inf)), inf, r)


def _ops_builtin(name: str, doc: str, method: str):
    def fn(ctx: Lowering, x) -> Tile:
        ops = _Ops(ctx)
        return _map_f32(ctx, (x,), getattr(ops, method))

    return _builtin_named(name, doc, fn)


floor = _ops_builtin("floor", "Largest integer <= x (exact; -0.0, inf and NaN kept).", "floor")
trunc = _ops_builtin("trunc", "x rounded toward zero (exact).", "trunc")
expm1 = _ops_builtin("expm1", "exp(x) - 1, accurate near 0.", "expm1")
log1p = _ops_builtin("log1p", "log(1 + x), accurate near 0.", "log1p")
erf = _ops_builtin("erf", "The error function.", "erf")
rint = _ops_builtin("rint", "x rounded to the nearest integer, ties to even (exact).", "rint")
nearbyint = _ops_builtin("nearbyint", "As rint: ties to even (exact).", "rint")
round = _ops_builtin("round", "x rounded to the nearest integer, ties away from zero "  # noqa: A001
                     "(exact).", "round")
atan = _ops_builtin("atan", "The arc tangent.", "atan")
sinh = _ops_builtin("sinh", "The hyperbolic sine.", "sinh")
cosh = _ops_builtin("cosh", "The hyperbolic cosine.", "cosh")
exp10 = _ops_builtin("exp10", "10 ** x.", "exp10")


def _ops_builtin2(name: str, doc: str, method: str):
    def fn(ctx: Lowering, x, y) -> Tile:
        ops = _Ops(ctx)
        return _map_f32(ctx, (x, y), getattr(ops, method))

    return _builtin_named(name, doc, fn)


atan2 = _ops_builtin2("atan2", "The angle of the point (x, y): C's atan2(y, x).", "atan2")
fmod = _ops_builtin2("fmod", "C's fmod: x - trunc(x / y) * y with x's sign, exact while "
                     "|x / y| < 2**22.", "fmod")
hypot = _ops_builtin2("hypot", "sqrt(x*x + y*y) without overflow.", "hypot")
copysign = _ops_builtin2("copysign", "|x| with the sign of y.", "copysign")
FLOAT_MOD.append(lambda ctx, x, y: _Ops(ctx).fmod(x, y))  # ``%`` of floats (tiles.py)


@builtin
def asin(ctx: Lowering, x) -> Tile:
    """The arc sine: atan2(x, sqrt((1 - x)(1 + x)))."""
    ops = _Ops(ctx)
    return _map_f32(ctx, (x,), lambda v: ops.atan2(v, ops("sqrt", ops(
        "fmul", ops("fsub", ops.c(1.0), v), ops("fadd", ops.c(1.0), v)))))


@builtin
def acos(ctx: Lowering, x) -> Tile:
    """The arc cosine: atan2(sqrt((1 - x)(1 + x)), x)."""
    ops = _Ops(ctx)
    return _map_f32(ctx, (x,), lambda v: ops.atan2(ops("sqrt", ops(
        "fmul", ops("fsub", ops.c(1.0), v), ops("fadd", ops.c(1.0), v))), v))


_TAN_SERIES = [1.0, 1 / 3, 2 / 15, 17 / 315, 62 / 2835, 1382 / 155925, 21844 / 6081075,
               929569 / 638512875]
# pi/2 in three parts (Cody and Waite): k * the first two is exact for the k tan reduces
_PIO2 = (1.5703125, 4.837512969970703125e-4, 7.54978995489188216e-8)


@builtin
def tan(ctx: Lowering, x) -> Tile:
    """x = k pi/2 + r with |r| <= pi/4 (Cody-Waite); tan(r) by the Taylor series to r**15
    below |r| = 0.5, else 2t / (1 - t**2) with t = tan(r/2) by the same series; -1/tan(r)
    for odd k. Only fused multiply-adds and rcp: the SFU's sine and cosine are accurate only
    in absolute terms, too little near the poles (|x| from 1e5 on, where the reduction
    runs out of bits, it is still sin / cos)."""
    ops = _Ops(ctx)

    def series(r: Value) -> Value:
        return ops("fmul", r, ops.poly(ops("fmul", r, r), _TAN_SERIES))

    def f(v: Value) -> Value:
        shift = ops.c(1.5 * _TWO23)  # adding and taking it back rounds to an integer
        kf = ops("fsub", ops("ffma", v, ops.c(2 / np.pi), shift), shift)
        r = v
        for part in _PIO2:
            r = ops("ffma", kf, ops.c(-part), r)
        t = series(ops("fmul", r, ops.c(0.5)))
        double = ops.div(ops("fadd", t, t), ops("ffma", ops("fneg", t), t, ops.c(1.0)))
        tr = ops.sel(ops.cmp("lt", ops("fabs", r), ops.c(0.5)), series(r), double)
        odd = ops.cmp("ne", ops("fsub", kf, ops("fmul", ops.floor(ops(
            "fmul", kf, ops.c(0.5))), ops.c(2.0))), ops.c(0.0))
        reduced = ops.sel(odd, ops("fneg", ops.div(ops.c(1.0), tr)), tr)
        big = ops.div(ops("sin", v), ops("cos", v))
        return ops.sel(ops.cmp("lt", ops("fabs", v), ops.c(1e5)), reduced, big)

    return _map_f32(ctx, (x,), f)


@builtin
def log10(ctx: Lowering, x) -> Tile:
    """log2(x) * log10(2)."""
    ops = _Ops(ctx)
    return _map_f32(ctx, (x,), lambda v: ops("fmul", ops("log2", v), ops.c(0.3010299956639812)))


@builtin
def llrint(ctx: Lowering, x) -> Tile:
    """x rounded to the nearest integer, ties to even, as an int64."""
    return ctx.cast(rint.__wrapped__(ctx, x), I64)


@builtin
def signbit(ctx: Lowering, x) -> Tile:
    """1 where x's sign bit is set (-0.0 and negative NaNs included), else 0 (int32)."""
    ops = _Ops(ctx)
    return ctx.mapn([_f32(ctx, x)], I32,
                    lambda v: ctx.b("shr", ops.bits(v), ctx.const(31)))


@builtin
def ceil(ctx: Lowering, x) -> Tile:
    """Smallest integer >= x (exact): -floor(-x)."""
    ops = _Ops(ctx)
    return _map_f32(ctx, (x,), lambda v: ops("fneg", ops.floor(ops("fneg", v))))


@builtin
def tanh(ctx: Lowering, x) -> Tile:
    """tanh(x) = sign(x) * expm1(2|x|) / (expm1(2|x|) + 2), accurate near 0."""
    ops = _Ops(ctx)

    def f(v: Value) -> Value:
        a = ops("fabs", v)
        e = ops.expm1(ops("fmul", a, ops.c(2.0)))
        t = ops("fmul", e, ops("rcp", ops("fadd", e, ops.c(2.0))))
        t = ops.sel(ops.cmp("gt", a, ops.c(10.0)), ops.c(1.0), t)  # tanh(10) rounds to 1
        t = ops.sel(ops.cmp("lt", v, ops.c(0.0)), ops("fneg", t), t)
        return ops.sel(ops.cmp("eq", v, ops.c(0.0)), v, t)  # keeps -0.0; NaN stays NaN

    return _map_f32(ctx, (x,), f)


@builtin
def pow(ctx: Lowering, x, y) -> Tile:  # noqa: A001 - the libdevice name
    """x ** y as exp2(y * log2|x|), with C's rules for signs, zeros, infinities and NaN."""
    ops = _Ops(ctx)

    def f(a: Value, e: Value) -> Value:
        ax = ops("fabs", a)
        r = ops("exp2", ops("fmul", e, ops("log2", ax)))
        y_int = ops.cmp("eq", ops.floor(e), e)
        half = ops("fmul", e, ops.c(0.5))
        y_odd = ops("and", y_int, ops.cmp("ne", ops.floor(half), half))
        neg = ops.cmp("lt", a, ops.c(0.0))
        r = ops.sel(ops("and", neg, y_odd), ops("fneg", r), r)
        r = ops.sel(ops("and", neg, ops("not", y_int)), ops.c(float("nan")), r)
        # x = +-0: y odd < 0 gives +-inf, y odd > 0 gives +-0 (sign of x)
        zero = ops.cmp("eq", a, ops.c(0.0))
        signed = ops.sel(ops.cmp("lt", e, ops.c(0.0)), ops("rcp", a), a)
        r = ops.sel(ops("and", zero, y_odd), signed, r)
        one = ops.c(1.0)
        r = ops.sel(ops("or", ops.cmp("eq", e, ops.c(0.0)), ops.cmp("eq", a, one)), one, r)
        # x = -1 and y = +-inf: 1 (C99)
        r = ops.sel(ops("and", ops.cmp("eq", a, ops.c(-1.0)),
                        ops.cmp("eq", ops("fabs", e), ops.c(float("inf")))), one, r)
        return r

    return _map_f32(ctx, (x, y), f)


@builtin
def div_rn(ctx: Lowering, x, y) -> Tile:
    """x / y rounded to nearest even: an SFU reciprocal refined by Newton's step, the
    quotient corrected with the fused residual x - q*y (Markstein)."""
    ops = _Ops(ctx)

    def f(a: Value, d: Value) -> Value:
        # keep 1/d a normal number: scale very large divisors (and the dividend) down
        big = ops.cmp("gt", ops("fabs", d), ops.c(2.0**125))
        s = ops.sel(big, ops.c(0.25), ops.c(1.0))
        a2, d2 = ops("fmul", a, s), ops("fmul", d, s)
        r = ops("rcp", d2)
        r = ops("ffma", r, ops("ffma", ops("fneg", d2), r, ops.c(1.0)), r)
        q = ops("fmul", a2, r)
        q2 = ops("ffma", ops("ffma", ops("fneg", q), d2, a2), r, q)
        simple = ops("fmul", a, ops("rcp", d))
        # where the refinement meets inf or NaN (x or y infinite or zero), the plain
        # quotient is already exact
        ok = ops.cmp("lt", ops("fabs", q2), ops.c(float("inf")))
        fin = ops("and", ok, ops.cmp("lt", ops("fabs", simple), ops.c(float("inf"))))
        return ops.sel(fin, q2, simple)

    return _map_f32(ctx, (x, y), f)


@builtin
def sqrt_rn(ctx: Lowering, x) -> Tile:
    """sqrt(x) rounded to nearest even: from the SFU's reciprocal square root r, g = x r
    and h = r / 2 refined together once, then the fused residual x - g*g times h added to
    g (Markstein's sequence: correctly rounded from a start within a few ulps, as the PTX
    rsqrt.approx is; one correction of the SFU's sqrt was not always). Below 2**-64 x is
    scaled by 2**64 first (the result back by 2**-32): the residual would be subnormal,
    and flushed."""
    ops = _Ops(ctx)

    def f(x: Value) -> Value:
        tiny = ops.cmp("lt", x, ops.c(2.0 ** -64))
        v = ops("fmul", x, ops.sel(tiny, ops.c(2.0 ** 64), ops.c(1.0)))
        r = ops("rsqrt", v)
        g, h = ops("fmul", v, r), ops("fmul", r, ops.c(0.5))
        e = ops("ffma", ops("fneg", g), h, ops.c(0.5))
        g, h = ops("ffma", g, e, g), ops("ffma", h, e, h)
        g = ops("ffma", ops("ffma", ops("fneg", g), g, v), h, g)
        g = ops("fmul", g, ops.sel(tiny, ops.c(2.0 ** -32), ops.c(1.0)))
        fin = ops("and", ops.cmp("gt", x, ops.c(0.0)),
                  ops.cmp("lt", x, ops.c(float("inf"))))
        return ops.sel(fin, g, ops("sqrt", x))

    return _map_f32(ctx, (x,), f)


@builtin
def fdiv(ctx: Lowering, x, y, ieee_rounding=False) -> Tile:
    """x / y: fast (x * rcp(y)), or rounded to nearest with ``ieee_rounding=True``."""
    if isinstance(ieee_rounding, constexpr):
        ieee_rounding = ieee_rounding.value
    if ieee_rounding:
        return div_rn.__wrapped__(ctx, x, y)
    return ctx.binary("/", x, y)


@builtin
def umulhi(ctx: Lowering, x, y) -> Tile:
    """The high 32 bits of the 64-bit unsigned product of two 32-bit integers."""
    xt = ctx.to_tile(x, like=y if isinstance(y, Tile) else None)
    yt = ctx.to_tile(y, like=xt)
    t = ctx.common_type(xt, yt)
    if t == F32 or t.is_ptr:
        raise CompileError(f"umulhi needs integer operands, not {t}")
    t = I32 if t == I1 else t
    return ctx.mapn([ctx.cast(xt, t), ctx.cast(yt, t)], t, lambda a, b: ctx.b("mulhu", a, b))


@builtin
def clamp(ctx: Lowering, x, min, max, propagate_nan=PropagateNan.NONE) -> Tile:  # noqa: A002
    """min(max(x, min), max); with ``propagate_nan=PropagateNan.ALL`` a NaN x stays NaN."""
    lo = _minmax(ctx, "max", x, min)
    r = _minmax(ctx, "min", lo, max)
    if propagate_nan == PropagateNan.ALL and r.type == F32:
        xt = _f32(ctx, x)
        r = ctx.mapn([xt, r], F32, lambda a, b: ctx.b(  # ordered a == a fails only on NaN
            "select", ctx.b.op("fcmp", [a, a], {"cond": "eq"}).result, b, a))
    return r


def _float_pred(name: str, doc: str, test):
    def fn(ctx: Lowering, x) -> Tile:
        ops = _Ops(ctx)
        return ctx.mapn([_f32(ctx, x)], I1, lambda v: test(ops, v))

    return _builtin_named(name, doc, fn)


isnan = _float_pred("isnan", "True where x is NaN.", lambda o, v: o("not", o.cmp("eq", v, v)))
isinf = _float_pred("isinf", "True where x is +-inf.",
                    lambda o, v: o.cmp("eq", o("fabs", v), o.c(float("inf"))))


class Namespace:
    """A language namespace (``tl.math``, ``tl.extra.libdevice``): an unknown name is a
    compile error at the place it is used, naming the namespace."""

    def __init__(self, name: str, members: dict[str, object]):
        self.__name__ = name
        self._members = dict(members)
        for k, v in members.items():
            setattr(self, k, v)

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise AttributeError(f"{self.__name__} has no function '{attr}' (it has: "
                             f"{', '.join(sorted(self._members))})")

    def __dir__(self):
        return sorted(self._members)


MATH_NAMES = ("umulhi", "exp", "exp2", "fma", "log", "log2", "cos", "rsqrt", "sin", "sqrt",
              "sqrt_rn", "abs", "fdiv", "div_rn", "erf", "floor", "ceil", "cdiv")
"""Triton 3.x ``tl.math`` (plus ``cdiv``, which Triton's standard library exports)."""

LIBDEVICE_NAMES = ("tanh", "pow", "log1p", "expm1", "trunc", "isnan", "isinf", "clamp",
                   "rint", "nearbyint", "round", "fmod", "atan", "atan2", "asin", "acos", "tan",
                   "sinh", "cosh", "log10", "exp10", "hypot", "copysign", "signbit", "llrint")
"""libdevice-style functions beyond Triton's ``tl.math`` (also under ``tl.math`` here, as
Triton 2.x kernels call them there). language.py builds ``tl.math`` and ``tl.extra`` from
these two lists."""

LIBDEVICE_ALIASES = {"fabs": "abs", "fmax": "maximum", "fmin": "minimum",
                     "fast_expf": "exp", "fast_exp10f": "exp10", "fast_logf": "log",
                     "fast_log2f": "log2", "fast_log10f": "log10", "fast_powf": "pow",
                     "fast_sinf": "sin", "fast_cosf": "cos", "fast_tanf": "tan",
                     "fast_dividef": "fdiv"}
"""libdevice names that are another function here: ``fast_*`` are libdevice's approximate
forms (the functions here are already the fast ones), ``fmax``/``fmin`` prefer the number
over a NaN as the ISA's ``fmax`` does. Only under ``tl.extra.libdevice``."""
