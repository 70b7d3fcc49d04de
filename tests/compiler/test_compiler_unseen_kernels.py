"""Idioms of Triton kernels written elsewhere (Triton's own language tests, its tutorials,
kernel libraries), each in a kernel of our own checked against NumPy: integer shifts of
mixed signedness, NaN-propagating min/max, sums with a dtype, tie-break keywords, scans and
combine-function reductions of halves, the host side of a launch (array views, aliasing,
read-only arrays, empty grids, Triton's other launch options, num_warps), Triton's indexing
rule for ``[None, :]``, ``broadcast_to`` with separate sizes, scalar join/split, run-time
``if`` with ``return`` and conditional expressions, loops over 64-bit bounds, ``print``, and
the errors for atomics on halves and for calls whose arguments do not fit."""

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from compiler_helpers import compile_error
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.errors import KernelError

RNG = np.random.default_rng(2026)


# --- arithmetic ----------------------------------------------------------------------------
@triton.jit
def k_shifts(Z, X, S, N: tl.constexpr):
    off = tl.arange(0, N)
    x = tl.load(X + off)
    s = tl.load(S + off)  # uint32 shift counts
    tl.store(Z + off, x >> s)
    tl.store(Z + N + off, x << s)


def test_signed_value_shifted_by_unsigned_count_is_arithmetic(iss_device):
    # Triton picks the shift by the shifted value's type: int32 >> uint32 keeps the sign
    x = RNG.integers(-1000, 1000, 32).astype(np.int32)
    s = RNG.integers(0, 32, 32).astype(np.uint32)
    z = np.zeros(64, np.int32)
    k_shifts[(1,)](z, x, s, N=32)
    assert np.array_equal(z[:32], x >> s.astype(np.int32))
    assert np.array_equal(z[32:], (x.astype(np.int64) << s).astype(np.int32))


@triton.jit
def k_nan_minmax(Z, X, Y, N: tl.constexpr):
    off = tl.arange(0, N)
    x = tl.load(X + off)
    y = tl.load(Y + off)
    tl.store(Z + off, tl.maximum(x, y))
    tl.store(Z + N + off, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(Z + 2 * N + off, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))


def test_maximum_and_minimum_propagate_nan_when_asked(iss_device):
    x = RNG.standard_normal(16).astype(np.float32)
    y = RNG.standard_normal(16).astype(np.float32)
    x[1] = y[2] = x[3] = y[3] = np.nan
    z = np.zeros(48, np.float32)
    k_nan_minmax[(1,)](z, x, y, N=16)
    assert np.array_equal(z[:16], np.fmax(x, y), equal_nan=True)  # NaN loses by default
    assert np.array_equal(z[16:32], np.maximum(x, y), equal_nan=True)
    assert np.array_equal(z[32:], np.minimum(x, y), equal_nan=True)


# --- reductions ----------------------------------------------------------------------------
@triton.jit
def k_sum_dtype(Z, X, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    tl.store(Z, tl.sum(x, axis=0, dtype=tl.float32))
    tl.store(Z + 1, tl.sum(x > 0, dtype=tl.int1).to(tl.float32))  # int1 sums wrap: parity
    tl.store(Z + 2, tl.sum(x > 0).to(tl.float32))


def test_sum_converts_to_its_dtype_first(iss_device):
    x = np.full(32, 2**30, np.int32)  # the int32 sum would wrap to 0
    x[:5] = -1
    z = np.zeros(3, np.float32)
    k_sum_dtype[(1,)](z, x, N=32)
    assert z[0] == np.float32(x.astype(np.float64).sum())
    assert z[1] == 27 % 2 and z[2] == 27


@triton.jit
def k_arg_tie_break(Z, X, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    tl.store(Z, tl.argmax(x, axis=0, tie_break_left=True))
    tl.store(Z + 1, tl.argmin(x, 0, False))
    v, i = tl.max(x, axis=0, return_indices=True, return_indices_tie_break_left=True)
    tl.store(Z + 2, i)
    v, i = tl.min(x, 0, True, False)
    tl.store(Z + 3, i)


def test_tie_break_keywords_of_argmax_and_max(iss_device):
    x = RNG.integers(-3, 3, 32).astype(np.float32)
    x[[4, 9]] = 5
    x[[6, 20]] = -5
    z = np.zeros(4, np.int32)
    k_arg_tie_break[(1,)](z, x, N=32)
    # the lowest index of the ties: what tie_break_left asks for, one valid answer otherwise
    assert z.tolist() == [4, 6, 4, 6]


@triton.jit
def k_walk_reduce(Z, X, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    tl.store(Z + rn, tl.xor_sum(x, axis=0))


def test_shared_line_walk_with_offsets_beyond_the_immediate_field(iss_device):
    # one warp's line walk over 128 columns addresses shared memory past 1023 bytes from
    # its base: the constant offsets of an address chain must fit the 11-bit field together
    x = RNG.integers(0, 1000, (1, 128)).astype(np.int32)
    z = np.zeros(128, np.int32)
    k_walk_reduce[(1,)](z, x, M=1, N=128, num_warps=1)
    assert np.array_equal(z, x[0])


@triton.jit
def _larger(a, b):
    return tl.maximum(a, b)


@triton.jit
def _plus(a, b):
    return a + b


@triton.jit
def k_half_scans(Z, X, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    at = rm[:, None] * N + rn[None, :]
    x = tl.load(X + at)
    tl.store(Z + at, tl.cumsum(x, 1))
    tl.store(Z + M * N + at, tl.associative_scan(x, 1, _larger, reverse=True))
    tl.store(Z + 2 * M * N + rm, tl.reduce(x, 1, _plus))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_scans_and_combine_reductions_of_halves(iss_device, dtype):
    dt = np.float16 if dtype == "float16" else pytest.importorskip("ml_dtypes").bfloat16
    x = (RNG.integers(-8, 8, (4, 8)) / 4).astype(dt)  # small quarters: every sum is exact
    z = np.zeros(2 * 32 + 4, np.float32)
    k_half_scans[(1,)](z, x, M=4, N=8)
    xf = x.astype(np.float32)
    assert np.array_equal(z[:32].reshape(4, 8), np.cumsum(xf, 1))
    assert np.array_equal(z[32:64].reshape(4, 8),
                          np.flip(np.maximum.accumulate(np.flip(xf, 1), 1), 1))
    assert np.array_equal(z[64:], xf.sum(1))


# --- shapes ----------------------------------------------------------------------------------
@triton.jit
def k_keep_dims_all(X, Z, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    z = tl.max(x, axis=None, keep_dims=True)  # shape [1, 1]
    z_ptr = Z[None, None, :]  # Triton: ':' is a no-op, so a scalar pointer becomes [1, 1]
    tl.static_assert(z_ptr.shape == [1, 1])
    tl.store(z_ptr, z)
    w = tl.arange(0, N)[None, :, None]
    tl.static_assert(w.shape == [1, N, 1])


def test_scalar_pointer_indexed_with_none_and_colon(iss_device):
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    z = np.zeros((1, 1), np.float32)
    k_keep_dims_all[(1,)](x, z, M=4, N=8)
    assert z[0, 0] == x.max()


@triton.jit
def k_broadcast_sizes(Z, X, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))[None, :]
    a = tl.broadcast_to(x, M, N)  # sizes as separate arguments, as Triton allows
    b = x.broadcast_to((M, N))
    tl.store(Z + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], a + b)


def test_broadcast_to_with_separate_sizes(iss_device):
    x = RNG.standard_normal(8).astype(np.float32)
    z = np.zeros((4, 8), np.float32)
    k_broadcast_sizes[(1,)](z, x, M=4, N=8)
    assert np.array_equal(z, np.broadcast_to(2 * x, (4, 8)))


@triton.jit
def k_scalar_pairs(a, b, X, Z):
    p = tl.interleave(a, b)
    tl.static_assert(p.shape == [2])
    tl.store(Z + tl.arange(0, 2), p)
    lo, hi = tl.split(tl.load(X + tl.arange(0, 2)))
    tl.static_assert(lo.shape == [])
    tl.store(Z + 2, hi)
    tl.store(Z + 3, lo)


def test_interleave_and_split_of_scalars(iss_device):
    z = np.zeros(4, np.float32)
    k_scalar_pairs[(1,)](10.0, 20.0, np.array([3, 4], np.float32), z)
    assert z.tolist() == [10, 20, 4, 3]


# --- control flow ------------------------------------------------------------------------------
@triton.jit
def k_return_in_branch(C1, C2, V1, V2, Out, N: tl.constexpr):
    off = tl.arange(0, N)
    val = tl.zeros([N], tl.int32)
    if tl.load(C1):
        if tl.load(C2):
            val = tl.load(V1 + off)
        else:
            return
    else:
        p = V2 + off
        val = tl.load(p) * 2
    tl.store(Out + off, val)


@pytest.mark.parametrize("c1, c2", [(1, 1), (1, 0), (0, 1)])
def test_run_time_if_with_a_return_in_one_branch(iss_device, c1, c2):
    v1 = np.arange(8, dtype=np.int32)
    v2 = v1 + 100
    out = np.full(8, -1, np.int32)
    k_return_in_branch[(1,)](np.array([c1], np.int32), np.array([c2], np.int32), v1, v2, out,
                             N=8)
    want = (v1 if c2 else np.full(8, -1)) if c1 else 2 * v2
    assert np.array_equal(out, want)


@triton.jit
def k_return_in_both_branches(Z, n, k):
    acc = 0
    for i in range(n):
        acc += i + 1
        if i == k:
            tl.store(Z, acc * 2)
            return
        else:
            acc = acc + 10
            tl.store(Z + 1, acc)
            return
    tl.store(Z + 2, acc)


@pytest.mark.parametrize("k", [0, 3])
def test_loop_body_returning_on_both_paths(iss_device, k):
    z = np.zeros(3, np.int32)
    k_return_in_both_branches[(1,)](z, 5, k)
    assert z.tolist() == ([2, 0, 0] if k == 0 else [0, 11, 0])


@triton.jit
def k_if_expression(Z, X, Count, n):
    pid = tl.program_id(0)
    v = tl.load(X + pid) if pid < n else -1.0  # only in-bounds programs load
    tl.store(Z + pid, v)
    tl.atomic_add(Count, 1) if pid % 2 == 0 else tl.atomic_add(Count + 1, 1)


def test_if_expression_runs_only_the_taken_branch(iss_device):
    x = np.array([1.5, 2.5, 3.5], np.float32)
    z = np.zeros(5, np.float32)
    count = np.zeros(2, np.int32)
    k_if_expression[(5,)](z, x, count, 3)
    assert z.tolist() == [1.5, 2.5, 3.5, -1, -1]
    assert count.tolist() == [3, 2]


@triton.jit
def k_wide_count(Out, lo, hi, STEP: tl.constexpr):
    acc = 0
    acc = acc.to(tl.int64)  # a number assigned in a kernel has the scalar's members
    for i in range(lo, hi, STEP):
        if i % 5 == 0:
            continue
        acc += i
    tl.store(Out, acc)


@pytest.mark.parametrize("lo, hi, step", [(2**35, 2**35 + 20, 3), (2**33 + 7, 2**33 - 9, -2),
                                          (-3, 12, 4)])
def test_loop_over_64_bit_bounds_counts_in_64_bits(iss_device, lo, hi, step):
    out = np.zeros(1, np.int64)
    k_wide_count[(1,)](out, lo, hi, step)
    assert out[0] == sum(i for i in range(lo, hi, step) if i % 5 != 0)


@triton.jit
def k_print(X, N: tl.constexpr):
    print("total", tl.sum(tl.load(X + tl.arange(0, N)), 0))


def test_print_is_device_print(iss_device, capsys):
    k_print[(1,)](np.arange(4, dtype=np.float32), N=4)
    assert "total: 6.0" in capsys.readouterr().out


# --- the host side of a launch -----------------------------------------------------------------
@triton.jit
def k_scale_strided(Z, X, M, N, sxm, sxn, szm, szn, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * sxm + rn[None, :] * sxn, mask=mask)
    tl.store(Z + rm[:, None] * szm + rn[None, :] * szn, x * 2, mask=mask)


def _scale(z: np.ndarray, x: np.ndarray) -> None:
    m, n = x.shape
    k_scale_strided[(triton.cdiv(m, 8), triton.cdiv(n, 8))](
        z, x, m, n, *(s // x.itemsize for s in x.strides), *(s // z.itemsize for s in z.strides),
        BM=8, BN=8)


@pytest.mark.parametrize("view", ["transposed", "sliced", "reversed"])
def test_array_views_keep_their_strides(iss_device, view):
    # a kernel addresses its arguments through the strides its caller passes (Triton's
    # x.stride(0)): a view must reach the device with its own layout
    base = RNG.standard_normal((21, 26)).astype(np.float32)
    x = {"transposed": base.T, "sliced": base[1::2, 3:20], "reversed": base[::-1, ::-2]}[view]
    z = np.zeros(x.shape, np.float32)
    _scale(z, x)
    assert np.array_equal(z, 2 * x)
    out = np.zeros((x.shape[1], x.shape[0]), np.float32)
    _scale(out.T, x)  # an output view: written back through its strides
    assert np.array_equal(out, 2 * x.T)


@triton.jit
def k_add_one(Z, X, n, BLOCK: tl.constexpr):
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Z + off, tl.load(X + off, mask=off < n) + 1, mask=off < n)


def test_one_array_as_input_and_output(iss_device):
    x = np.arange(40, dtype=np.float32)
    k_add_one[(2,)](x, x, 40, BLOCK=32)  # in place: one buffer behind both pointers
    assert np.array_equal(x, np.arange(40, dtype=np.float32) + 1)
    m = np.arange(80, dtype=np.float32).reshape(2, 40)
    k_add_one[(2,)](m[0], m[1], 40, BLOCK=32)  # two rows of one matrix
    assert np.array_equal(m[0], np.arange(40, 80) + 1)
    assert np.array_equal(m[1], np.arange(40, 80))


def test_read_only_input_array(iss_device):
    x = np.arange(40, dtype=np.float32)
    x.setflags(write=False)
    z = np.zeros(40, np.float32)
    k_add_one[(2,)](z, x, 40, BLOCK=32)
    assert np.array_equal(z, x + 1)


def test_num_warps_not_a_power_of_two_is_an_error(iss_device):
    # a tile is spread over the threads by index bits: 3 warps gave wrong sums
    x = RNG.integers(0, 1000, (1, 128)).astype(np.int32)
    with pytest.raises(KernelError, match="power-of-two number of threads"):
        k_walk_reduce[(1,)](np.zeros(128, np.int32), x, M=1, N=128, num_warps=3)


def test_empty_grid_launches_nothing(iss_device):
    z = np.zeros(4, np.float32)
    assert k_add_one[(triton.cdiv(0, 32),)](z, z, 0, BLOCK=32) is None
    assert np.array_equal(z, np.zeros(4))


def test_triton_launch_options_without_meaning_here_are_accepted(iss_device):
    x = np.arange(40, dtype=np.float32)
    z = np.zeros(40, np.float32)
    k_add_one[(2,)](z, x, 40, BLOCK=32, num_ctas=1, maxnreg=128, debug=False,
                    sanitize_overflow=True, launch_cooperative_grid=False, launch_pdl=False)
    assert np.array_equal(z, x + 1)


# --- calls whose arguments do not fit ----------------------------------------------------------
@pytest.mark.parametrize("call, message", [
    ("tl.sum(x, axis=0, foo=1)", "tl.sum(): got an unexpected keyword argument 'foo'"),
    ("tl.where(x > 0, x)", "tl.where(): missing a required argument: 'y'"),
    ("tl.load(X + tl.arange(0, 8), msk=None)", "tl.load(): got an unexpected keyword"),
    ("x.to(tl.int32, foo=True)", "x.to(): got an unexpected keyword argument 'foo'"),
    ("x.sum(axis=0, bar=2)", "x.sum(): got an unexpected keyword argument 'bar'"),
    ("_twice(x, 2)", "_twice takes 1 argument(s), 2 given"),
    ("_twice(x, y=2)", "_twice has no parameter 'y'"),
    ("_twice(x, v=x)", "_twice got two values for 'v'"),
])
def test_call_with_arguments_that_do_not_fit_is_a_placed_error(tmp_path, call, message):
    err = compile_error(tmp_path, "bad_call", f"""def kern(X):
    x = tl.load(X + tl.arange(0, 8))
    y = {call}
""", {"X": ir.ptr("f32")}, names={"_twice": _twice})
    assert isinstance(err, KernelError)
    assert (err.loc.line, err.loc.col) == (8, 9), str(err)
    assert message in err.message


@triton.jit
def _twice(v):
    return v * 2


@pytest.mark.parametrize("op", ["atomic_add(X + o, x)", "atomic_max(X + o, x)",
                                "atomic_xchg(X + o, x)", "atomic_cas(X + o, x, x)"])
def test_atomics_on_halves_are_a_placed_error(tmp_path, op):
    # two halves share a word: an atomic on the word would change the neighbour too (it
    # used to compile and fault as a misaligned access at run time)
    err = compile_error(tmp_path, "half_atomic", f"""def kern(X):
    o = tl.arange(0, 8)
    x = tl.load(X + o)
    tl.{op}
""", {"X": ir.ptr("f16")})
    assert (err.loc.line, err.loc.col) == (9, 5), str(err)
    assert "on float16 is not supported" in err.message
