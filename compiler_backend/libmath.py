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
from .ir import F32, I1, I32, Value
from .lang_base import LN2, LOG2E, _builtin_named, _minmax, builtin, constexpr
from .tiles import Lowering, Tile

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
        # log(u) * x / (u - 1) with u = 1 + x rounded: the rounding error of u cancels
        # (Goldberg, "What every computer scientist should know ...", theorem 4)
        u = self.b("fadd", x, self.c(1.0))
        d = self.b("fsub", u, self.c(1.0))
        r = self.b("fmul", self.log(u), self.b("fmul", x, self.b("rcp", d)))
        r = self.sel(self.cmp("eq", d, self.c(0.0)), x, r)
        # inf stays inf; u = 0 (x = -1) gives -inf from log2
        return self.sel(self.cmp("eq", u, self.c(float("inf"))), u,
                        self.sel(self.cmp("eq", u, self.c(0.0)), self.log(u), r))

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
    """sqrt(x) rounded to nearest even: the SFU square root corrected with the fused
    residual x - s*s times 1/(2s)."""
    ops = _Ops(ctx)

    def f(v: Value) -> Value:
        s = ops("sqrt", v)
        h = ops("fmul", ops("rsqrt", v), ops.c(0.5))
        s2 = ops("ffma", ops("ffma", ops("fneg", s), s, v), h, s)
        fin = ops("and", ops.cmp("gt", v, ops.c(0.0)),
                  ops.cmp("lt", v, ops.c(float("inf"))))
        return ops.sel(fin, s2, s)

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

LIBDEVICE_NAMES = ("tanh", "pow", "log1p", "expm1", "trunc", "isnan", "isinf", "clamp")
"""libdevice-style functions beyond Triton's ``tl.math`` (also under ``tl.math`` here, as
Triton 2.x kernels call them there). language.py builds ``tl.math`` and ``tl.extra`` from
these two lists."""
