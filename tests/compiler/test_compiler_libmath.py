"""``tl.math`` and the libdevice-style functions against float64 NumPy on the ISS: each
function's largest error in float32 ulps stays within the bound docs/compiler.md lists
(``python tests/compiler/test_compiler_libmath.py`` prints the measured figures), the exact
ones (floor, ceil, trunc, div_rn, sqrt_rn, umulhi, clamp) match bit for bit, and special
values (NaN, infinities, -0.0) behave as C's math library says."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend import Target, compile_function, parse_type
from simtgpu.errors import SourceError

sys.path.insert(0, str(Path(__file__).parent))
from compiler_helpers import current_device, generated_kernel  # noqa: E402

N = 2048


def _unary(name: str):
    f = getattr(tl.math, name)

    @triton.jit
    def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y_ptr + offs, f(tl.load(x_ptr + offs, mask=m, other=1.0)), mask=m)

    return k


def _binary(name: str):
    f = getattr(tl.math, name)

    @triton.jit
    def k(x_ptr, z_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        a = tl.load(x_ptr + offs, mask=m, other=1.0)
        b = tl.load(z_ptr + offs, mask=m, other=1.0)
        tl.store(y_ptr + offs, f(a, b), mask=m)

    return k


def run(name: str, *args: np.ndarray) -> np.ndarray:
    out = np.zeros(args[0].size, np.float32)
    k = _unary(name) if len(args) == 1 else _binary(name)
    k[(triton.cdiv(out.size, 128),)](*args, out, out.size, BLOCK=128)
    return out


def ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in units of the float32 ulp at ref (subnormal results count from the
    smallest normal's ulp: the ISA flushes them)."""
    ref = np.asarray(ref, np.float64)
    e = np.floor(np.log2(np.maximum(np.abs(ref), 2.0**-126)))
    return np.abs(got.astype(np.float64) - ref) / np.exp2(e - 23)


def _erf(x):
    return np.vectorize(math.erf)(x.astype(np.float64))


RNG = np.random.default_rng(7)


def _inputs(lo, hi, small=True) -> np.ndarray:
    x = RNG.uniform(lo, hi, N).astype(np.float32)
    if small:  # values near zero, where cancellation would show
        x[: N // 8] = (RNG.uniform(-1, 1, N // 8) * 10.0 ** RNG.uniform(-7, -1, N // 8)
                       ).astype(np.float32)
        x[: N // 8] = np.clip(x[: N // 8], lo, hi)
    return x


# name -> (inputs, float64 reference, documented bound in ulps)
CASES = {
    "expm1": (lambda: _inputs(-20, 20), np.expm1, 4),
    "log1p": (lambda: _inputs(-0.999, 100), np.log1p, 4),
    "tanh": (lambda: _inputs(-12, 12), np.tanh, 4),
    "erf": (lambda: _inputs(-5, 5), _erf, 4),
    "exp": (lambda: _inputs(-80, 80), np.exp, 64),
    "exp2": (lambda: _inputs(-120, 120), np.exp2, 1),
    "log": (lambda: _inputs(1e-30, 1e30, small=False), np.log, 2),
    "log2": (lambda: _inputs(1e-30, 1e30, small=False), np.log2, 1),
    "sqrt": (lambda: _inputs(0, 1e30, small=False), np.sqrt, 1),
    "rsqrt": (lambda: _inputs(1e-30, 1e30, small=False), lambda v: 1 / np.sqrt(v), 1),
    "atan": (lambda: _inputs(-50, 50), np.arctan, 4),
    "asin": (lambda: _inputs(-1, 1), np.arcsin, 4),
    "acos": (lambda: _inputs(-1, 1, small=False), np.arccos, 4),
    "tan": (lambda: _inputs(-1.5, 1.5), np.tan, 4),
    "sinh": (lambda: _inputs(-80, 80), np.sinh, 4),
    "cosh": (lambda: _inputs(-80, 80), np.cosh, 4),
    "log10": (lambda: _inputs(1e-30, 1e30, small=False), np.log10, 2),
    "exp10": (lambda: _inputs(-37, 37), lambda v: 10.0 ** v, 2),
}
BINARY = {
    "pow": (lambda: (_inputs(1e-3, 100, small=False), _inputs(-10, 10, small=False)),
            np.power, 64),
    "atan2": (lambda: (_inputs(-100, 100), _inputs(-100, 100)), np.arctan2, 4),
    "hypot": (lambda: (_inputs(-1e30, 1e30), _inputs(-1e30, 1e30)), np.hypot, 4),
}
EXACT = {
    "floor": (lambda: _inputs(-1e3, 1e3), np.floor),
    "ceil": (lambda: _inputs(-1e3, 1e3), np.ceil),
    "trunc": (lambda: _inputs(-1e8, 1e8), np.trunc),
    "rint": (lambda: _inputs(-1e3, 1e3), np.rint),
    "nearbyint": (lambda: _inputs(-1e3, 1e3), np.rint),
    # C's round: ties away from zero (trunc(|x| + 0.5) in float64 is exact here)
    "round": (lambda: _inputs(-1e3, 1e3),
              lambda v: np.where(np.abs(v) < 2**23, np.copysign(np.trunc(
                  np.abs(v.astype(np.float64)) + 0.5), v), v)),
    "sqrt_rn": (lambda: np.abs(RNG.standard_normal(N) * 10.0 ** RNG.uniform(-30, 30, N)
                               ).astype(np.float32), np.sqrt),
}


def measure(backend: str = "iss") -> dict[str, float]:
    """The largest error of each function on its inputs, in ulps (on the ISS, or on the
    cuda backend's GPU)."""
    out = {}
    with current_device(backend):
        for name, (gen, ref, _) in CASES.items():
            x = gen()
            out[name] = float(ulps(run(name, x), ref(x.astype(np.float64))).max())
        for name, (gen, ref, _) in BINARY.items():
            x, y = gen()
            r = ref(x.astype(np.float64), y.astype(np.float64))
            ok = (np.abs(r) < 1e30) & (np.abs(r) > 1e-30)
            out[name] = float(ulps(run(name, x, y)[ok], r[ok]).max())
    return out


def check_accuracy(name: str, bound: float | None = None) -> None:
    """``name`` (of CASES or BINARY) on its inputs on the current device, within ``bound``
    ulps (default: the documented bound)."""
    if name in BINARY:
        gen, ref, documented = BINARY[name]
        x, y = gen()
        r = ref(x.astype(np.float64), y.astype(np.float64))
        ok = (np.abs(r) < 1e30) & (np.abs(r) > 1e-30)
        err = ulps(run(name, x, y)[ok], r[ok])
        where = ""
    else:
        gen, ref, documented = CASES[name]
        x = gen()
        err = ulps(run(name, x), ref(x.astype(np.float64)))
        where = f"({x[err.argmax()]!r})"
    bound = documented if bound is None else bound
    assert err.max() <= bound, f"{name}{where}: {err.max():.2f} ulp"


@pytest.mark.parametrize("name", sorted(CASES))
def test_accuracy_within_documented_bound(iss_device, name):
    check_accuracy(name)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_within_documented_bound(iss_device, name):
    check_accuracy(name)


def test_fmod_exact_below_its_quotient_limit(iss_device):
    x = (RNG.standard_normal(N) * 10.0 ** RNG.uniform(-3, 5, N)).astype(np.float32)
    y = (RNG.standard_normal(N) * 10.0 ** RNG.uniform(-3, 3, N)).astype(np.float32)
    x[:6] = [5.0, -5.0, 4.0, -4.0, 1e-3, 7.5]
    y[:6] = [3.0, 3.0, 2.0, -2.0, 1.0, -np.inf]
    ok = np.abs(x / y) < 2**22
    got = run("fmod", x, y)
    want = np.fmod(x, y)
    np.testing.assert_array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32))
    with np.errstate(invalid="ignore"):
        bad = run("fmod", np.float32([1.0, np.inf, np.nan]), np.float32([0.0, 2.0, 1.0]))
    assert np.isnan(bad).all()


def test_sign_and_quadrant_rules(iss_device):
    z = np.float32([0.0, -0.0, 0.0, -0.0, np.inf, -np.inf, np.inf, 1.0, np.nan, -1.0])
    w = np.float32([0.0, 0.0, -0.0, -0.0, np.inf, np.inf, -np.inf, np.nan, 1.0, -np.inf])
    for name, ref in (("atan2", np.arctan2), ("hypot", np.hypot), ("copysign", np.copysign)):
        got = run(name, z, w)
        want = ref(z, w).astype(np.float32)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
        ok = ~np.isnan(want)
        np.testing.assert_allclose(got[ok], want[ok], rtol=3e-7, err_msg=name)
        np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]), err_msg=name)
    got = run("signbit", z)  # int32 0 or 1, stored as float32
    np.testing.assert_array_equal(got, np.signbit(z).astype(np.float32))


@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact_functions_bit_for_bit(iss_device, name):
    gen, ref = EXACT[name]
    x = gen()
    if name != "sqrt_rn":
        x = np.concatenate([x, np.float32([0.0, -0.0, 0.5, -0.5, 2.5, -2.5, 1e9, -1e9, 8388607.5,
                                          -8388607.5, np.inf, -np.inf, 1e-3, -1e-3])])
    got = run(name, x)
    want = ref(x).astype(np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def _ftz(a: np.ndarray) -> np.ndarray:
    return np.where(np.abs(a) < np.float32(2.0**-126), a * np.float32(0), a)


def test_div_rn_is_correctly_rounded(iss_device):
    x = (RNG.standard_normal(N) * 10.0 ** RNG.uniform(-20, 20, N)).astype(np.float32)
    y = (RNG.standard_normal(N) * 10.0 ** RNG.uniform(-20, 20, N)).astype(np.float32)
    y[:8] = [2.0**126, 3e38, -1e38, 1.0, -1.0, 3.0, 7.0, 1e-37]
    got = run("div_rn", x, y)
    with np.errstate(all="ignore"):
        want = _ftz(x / y)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    specials = np.float32([1.0, 1.0, -1.0, 0.0, np.inf, 1.0, np.inf, 0.0])
    divisors = np.float32([0.0, -0.0, 0.0, 0.0, 2.0, np.inf, np.inf, 5.0])
    got = run("div_rn", specials, divisors)
    with np.errstate(all="ignore"):
        want = specials / divisors
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32))


def test_special_values(iss_device):
    x = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0])
    for name, ref in (("tanh", np.tanh), ("expm1", np.expm1), ("log1p", np.log1p),
                      ("erf", _erf), ("floor", np.floor), ("ceil", np.ceil)):
        got = run(name, x)
        with np.errstate(all="ignore"):
            want = ref(x.astype(np.float64)).astype(np.float32)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32),
                                      err_msg=name)
    bases = np.float32([-2.0, -2.0, -2.0, 0.0, -0.0, -0.0, 0.0, 1.0, np.nan, -1.0, 2.0])
    exps = np.float32([3.0, 2.0, 0.5, -1.0, 3.0, -3.0, 2.0, np.nan, 0.0, np.inf, -np.inf])
    got = run("pow", bases, exps)
    with np.errstate(all="ignore"):
        want = np.power(bases, exps)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])


@triton.jit
def k_int_math(x_ptr, y_ptr, out_ptr, f_ptr, g_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.math.umulhi(x, y), mask=m)
    tl.store(out_ptr + n + offs, tl.clamp(x, 100, 3000000000), mask=m)
    tl.store(out_ptr + 2 * n + offs, tl.math.cdiv(x, 7), mask=m)
    f = tl.load(f_ptr + offs, mask=m)
    tl.store(g_ptr + offs, tl.clamp(f, -1.0, 2.0), mask=m)
    tl.store(g_ptr + n + offs, tl.clamp(f, -1.0, 2.0, propagate_nan=tl.PropagateNan.ALL),
             mask=m)
    tl.store(g_ptr + 2 * n + offs, tl.where(tl.math.isnan(f) | tl.math.isinf(f), 1.0, 0.0),
             mask=m)
    tl.store(g_ptr + 3 * n + offs, tl.math.fma(f, 2.0, 1.0), mask=m)
    tl.store(g_ptr + 4 * n + offs, tl.math.fdiv(f, 3.0, ieee_rounding=True), mask=m)


def test_umulhi_clamp_cdiv_and_predicates(iss_device):
    n = 64
    x = RNG.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    y = RNG.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    f = RNG.uniform(-3, 3, n).astype(np.float32)
    f[:4] = [np.nan, np.inf, -np.inf, -0.0]
    out = np.zeros(3 * n, np.uint32)
    g = np.zeros(5 * n, np.float32)
    k_int_math[(1,)](x, y, out, f, g, n, BLOCK=64)
    hi = [(int(a) * int(b)) >> 32 for a, b in zip(x, y, strict=True)]
    np.testing.assert_array_equal(out[:n], hi)
    np.testing.assert_array_equal(out[n:2 * n], np.clip(x, 100, 3000000000))
    np.testing.assert_array_equal(out[2 * n:], (x.astype(np.uint64) + 6) % 2**32 // 7)  # wraps
    np.testing.assert_array_equal(g[n + 1:2 * n], np.clip(f[1:], -1.0, 2.0))
    assert np.isnan(g[n]) and g[0] == -1.0  # NONE: the bound wins over NaN (fmax rule)
    np.testing.assert_array_equal(g[2 * n:3 * n], (~np.isfinite(f)).astype(np.float32))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(g[3 * n + 4:4 * n], f[4:] * 2 + 1)
        np.testing.assert_array_equal(g[4 * n + 4:], f[4:] / np.float32(3))


def test_unknown_math_name_is_a_compile_error_at_its_place(tmp_path):
    kern, src = generated_kernel(tmp_path, "badmath", (
        "def kern(x_ptr):\n"
        "    x = tl.load(x_ptr)\n"
        "    tl.store(x_ptr, tl.math.sinpi(x))\n"))
    with pytest.raises(SourceError) as e:
        compile_function(kern.fn, {"x_ptr": parse_type("*fp32")}, {}, Target())
    msg = str(e.value)
    assert f"{tmp_path / 'badmath.py'}:8:21" in msg and "tl.math has no function 'sinpi'" in msg


def test_libdevice_namespaces():
    assert tl.extra.libdevice.tanh is tl.math.tanh is tl.tanh
    assert tl.extra.cuda.libdevice.pow is tl.pow
    assert tl.extra.libdevice.fast_expf is tl.exp and tl.extra.libdevice.fmax is tl.maximum
    assert tl.extra.libdevice.fast_dividef is tl.fdiv and tl.extra.libdevice.round is tl.round


@pytest.mark.skipif(shutil.which("ptxas") is None and not Path("/usr/local/bin/ptxas").exists(),
                    reason="ptxas not installed")
@pytest.mark.parametrize("name", sorted(CASES) + sorted(EXACT) + sorted(BINARY)
                         + ["div_rn", "fmod", "copysign", "signbit"])
def test_libmath_ptx_assembles(tmp_path, name):
    k = _binary(name) if name in (*BINARY, "div_rn", "fmod", "copysign") else _unary(name)
    types = {p: parse_type("*fp32") for p in k.src.params if p.endswith("ptr")}
    types["n"] = parse_type("i32")
    ck = compile_function(k.fn, types, {"BLOCK": 128}, Target.ptx("sm_90"))
    ptxas = shutil.which("ptxas") or "/usr/local/bin/ptxas"
    (tmp_path / "k.ptx").write_text(ck.code)
    subprocess.run([ptxas, "-arch=sm_90", str(tmp_path / "k.ptx"), "-o",
                    str(tmp_path / "k.cubin")], check=True, capture_output=True)


if __name__ == "__main__":  # [iss|cuda]
    import sys

    for k, v in measure(*sys.argv[1:2]).items():
        print(f"{k:8s} {v:8.2f} ulp")
