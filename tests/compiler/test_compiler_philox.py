"""Philox random numbers (``tl.rand``, ``tl.randn``, ``tl.randint``, ``tl.randint4x``,
``tl.philox`` ...) on the ISS against a NumPy Philox 4x32-10 written here from the algorithm
(Salmon et al. 2011), itself checked against the Random123 known-answer vectors; and the PTX of
each through ptxas."""

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from simtgpu.compiler_backend.errors import KernelError
from test_compiler_ptx import needs_ptxas, ptxas_errors

M32 = 0xFFFFFFFF

# Random123 kat_vectors, philox4x32 with 10 rounds: counter, key, expected output
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((M32, M32, M32, M32), (M32, M32), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def np_philox(c, k, rounds=10):
    """Philox 4x32: c is four uint32 arrays, k two; 64-bit products give exact high words."""
    c = [np.asarray(x, np.uint64) & M32 for x in c]
    k0, k1 = (np.asarray(x, np.uint64) & M32 for x in k)
    for _ in range(rounds):
        p0 = np.uint64(0xD2511F53) * c[0]
        p1 = np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & np.uint64(M32),
             (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & np.uint64(M32)]
        k0 = (k0 + np.uint64(0x9E3779B9)) & np.uint64(M32)
        k1 = (k1 + np.uint64(0xBB67AE85)) & np.uint64(M32)
    return [x.astype(np.uint32) for x in c]


def np_randint4x(seed: int, offsets):
    s = seed & ((1 << 64) - 1)
    z = np.zeros_like(offsets, np.uint32)
    return np_philox([offsets.astype(np.uint32), z, z, z], [s & M32, s >> 32])


def np_uniform(w):
    s = w.view(np.int32)
    folded = np.where(s < 0, ~s, s)
    return folded.astype(np.float32) * np.float32(4.6566127342e-10)


def np_normal_pair(u1, u2):
    u1 = np.maximum(np.float32(1e-7), u1).astype(np.float64)
    r = np.sqrt(-2.0 * np.log(u1))
    th = 2 * np.pi * u2.astype(np.float64)
    return r * np.cos(th), r * np.sin(th)


def test_numpy_reference_matches_random123():
    for ctr, key, want in KAT:
        got = np_philox([np.array([v]) for v in ctr], [np.array([v]) for v in key])
        assert [int(g[0]) for g in got] == list(want)


@triton.jit
def _store4(ptr, i, vals):
    a, b, c, d = vals
    tl.store(ptr + i * 4, a)
    tl.store(ptr + i * 4 + 1, b)
    tl.store(ptr + i * 4 + 2, c)
    tl.store(ptr + i * 4 + 3, d)


@triton.jit
def k_philox_impl(c_ptr, k_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    c0 = tl.load(c_ptr + i * 4)
    c1 = tl.load(c_ptr + i * 4 + 1)
    c2 = tl.load(c_ptr + i * 4 + 2)
    c3 = tl.load(c_ptr + i * 4 + 3)
    k0 = tl.load(k_ptr + i * 2)
    k1 = tl.load(k_ptr + i * 2 + 1)
    _store4(out_ptr, i, tl.philox_impl(c0, c1, c2, c3, k0, k1))


def test_philox_impl_known_answers(iss_device):
    n = 4
    rows = KAT + [KAT[2]]
    c = np.array([r[0] for r in rows], np.uint32).ravel()
    k = np.array([r[1] for r in rows], np.uint32).ravel()
    out = np.zeros(4 * n, np.uint32)
    k_philox_impl[(1,)](c, k, out, BLOCK=n)
    assert out.reshape(n, 4).tolist() == [list(r[2]) for r in rows]


@triton.jit
def k_philox_seeded(c_ptr, out_ptr, SEED: tl.constexpr):
    i = tl.arange(0, 4)
    c = tl.load(c_ptr + i)
    c0 = tl.sum(tl.where(i == 0, c, 0))
    c1 = tl.sum(tl.where(i == 1, c, 0))
    c2 = tl.sum(tl.where(i == 2, c, 0))
    c3 = tl.sum(tl.where(i == 3, c, 0))
    a, b, d, e = tl.philox(SEED, c0, c1, c2, c3)
    tl.store(out_ptr + i, tl.where(i == 0, a, tl.where(i == 1, b, tl.where(i == 2, d, e))))


def test_philox_64bit_seed_is_the_key(iss_device):
    # tl.philox keys with the seed's low and high words: Random123's third vector
    ctr, key, want = KAT[2]
    out = np.zeros(4, np.uint32)
    k_philox_seeded[(1,)](np.array(ctr, np.uint32), out, SEED=key[1] << 32 | key[0])
    assert out.tolist() == list(want)


@triton.jit
def k_randint4x(out_ptr, seed, BLOCK: tl.constexpr):
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a, b, c, d = tl.randint4x(seed, off)
    r = tl.randint(seed, off)
    tl.store(out_ptr + off * 5, a)
    tl.store(out_ptr + off * 5 + 1, b)
    tl.store(out_ptr + off * 5 + 2, c)
    tl.store(out_ptr + off * 5 + 3, d)
    tl.store(out_ptr + off * 5 + 4, r)


@pytest.mark.parametrize("seed", [0, 12345, -7, np.uint32(0xDEADBEEF)])
def test_randint4x_and_randint(iss_device, seed):
    n, block = 256, 64
    out = np.zeros(5 * n, np.uint32)
    k_randint4x[(n // block,)](out, seed, BLOCK=block)
    # a run-time int32 seed sign-extends to 64 bits (Triton's i32 -> uint64), a uint32 does not
    want = np_randint4x(int(seed), np.arange(n))
    o = out.reshape(n, 5)
    for j in range(4):
        assert np.array_equal(o[:, j], want[j]), j
    assert np.array_equal(o[:, 4], want[0])


@triton.jit
def k_randint_int64(out_ptr, seed, base, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    a, b, c, d = tl.randint4x(seed, base + i)  # an int64 seed and int64 offsets
    tl.store(out_ptr + i * 4, a)
    tl.store(out_ptr + i * 4 + 1, b)
    tl.store(out_ptr + i * 4 + 2, c)
    tl.store(out_ptr + i * 4 + 3, d)


def test_randint4x_int64_seed_and_offsets(iss_device):
    """As Triton: an int64 offset is the counter (low word, high word, 0, 0) and an int64
    seed's words are the key."""
    seed, base, n = 0x123456789AB, (5 << 32) - 7, 32
    out = np.zeros(4 * n, np.uint32)
    k_randint_int64[(1,)](out, seed, base, BLOCK=n)
    offs = np.arange(n, dtype=np.uint64) + np.uint64(base)
    z = np.zeros(n, np.uint32)
    want = np_philox([offs & np.uint64(M32), offs >> np.uint64(32), z, z],
                     [seed & M32, seed >> 32])
    o = out.reshape(n, 4)
    for j in range(4):
        assert np.array_equal(o[:, j], want[j]), j


@triton.jit
def k_rand_const_seed(out_ptr, u4_ptr, SEED: tl.constexpr, BLOCK: tl.constexpr):
    off = tl.arange(0, BLOCK)
    tl.store(out_ptr + off, tl.rand(SEED, off))
    _store4(u4_ptr, off, tl.rand4x(SEED, off))


@pytest.mark.parametrize("seed", [42, 0x1234_5678_9ABC_DEF0])
def test_rand_exact(iss_device, seed):
    n = 128
    out = np.zeros(n, np.float32)
    u4 = np.zeros(4 * n, np.float32)
    k_rand_const_seed[(1,)](out, u4, SEED=seed, BLOCK=n)
    words = np_randint4x(seed, np.arange(n))
    assert np.array_equal(out.view(np.uint32), np_uniform(words[0]).view(np.uint32))
    for j in range(4):
        assert np.array_equal(u4.reshape(n, 4)[:, j], np_uniform(words[j]))
    assert 0.0 <= out.min() and out.max() < 1.0


@triton.jit
def k_uniform(w_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(out_ptr + i, tl.uint_to_uniform_float(tl.load(w_ptr + i)))


def test_uint_to_uniform_float_edges(iss_device):
    w = np.array([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x40000000, 2, 0xFFFFFFFE],
                 np.uint32)
    out = np.zeros(8, np.float32)
    k_uniform[(1,)](w, out, BLOCK=8)
    s = np.float32(4.6566127342e-10)
    # hand-computed: 0x80000000 folds to 2**31 - 1, 0xffffffff (-1) to 0
    want = np.array([0, s, np.float32(2**31 - 1) * s, np.float32(2**31 - 1) * s, 0,
                     np.float32(2**30) * s, 2 * s, s], np.float32)
    assert np.array_equal(out, want)
    assert out.max() < 1.0


@triton.jit
def k_randn(out_ptr, n4_ptr, seed, BLOCK: tl.constexpr):
    off = tl.arange(0, BLOCK)
    tl.store(out_ptr + off, tl.randn(seed, off))
    _store4(n4_ptr, off, tl.randn4x(seed, off))


def test_randn_and_randn4x(iss_device):
    n, seed = 256, 2024
    out = np.zeros(n, np.float32)
    n4 = np.zeros(4 * n, np.float32)
    k_randn[(1,)](out, n4, seed, BLOCK=n)
    u = [np_uniform(w) for w in np_randint4x(seed, np.arange(n))]
    z0, z1 = np_normal_pair(u[0], u[1])
    z2, z3 = np_normal_pair(u[2], u[3])
    # log2, sqrt, sin and cos are the special-function unit's (docs/numerics.md bounds)
    tol = dict(rtol=2e-5, atol=2e-5)
    assert np.allclose(out, z0, **tol)
    for j, z in enumerate((z0, z1, z2, z3)):
        assert np.allclose(n4.reshape(n, 4)[:, j], z, **tol), j
    assert abs(float(np.mean(n4))) < 0.1 and 0.9 < float(np.std(n4)) < 1.1


@triton.jit
def k_pair(u1_ptr, u2_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    a, b = tl.pair_uniform_to_normal(tl.load(u1_ptr + i), tl.load(u2_ptr + i))
    tl.store(out_ptr + i * 2, a)
    tl.store(out_ptr + i * 2 + 1, b)


def test_pair_uniform_to_normal(iss_device):
    # u1 = 0 is clamped to 1e-7; u2 = 0.25 puts everything in the sine
    u1 = np.array([0.0, 0.5, 1.0, np.exp(-0.5), 0.1, 0.9, 0.3, 0.7], np.float32)
    u2 = np.array([0.0, 0.25, 0.5, 0.5, 0.125, 0.75, 0.0, 0.999], np.float32)
    out = np.zeros(16, np.float32)
    k_pair[(1,)](u1, u2, out, BLOCK=8)
    a, b = np_normal_pair(u1, u2)
    assert np.allclose(out[0::2], a, rtol=2e-5, atol=2e-5)
    assert np.allclose(out[1::2], b, rtol=2e-5, atol=2e-5)
    assert abs(out[0] - np.sqrt(-2 * np.log(np.float32(1e-7)))) < 1e-4


@triton.jit
def k_bad_seed(out_ptr, x, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.rand(x, tl.arange(0, BLOCK)))


def test_float_seed_is_a_clear_error(iss_device):
    where = r"test_compiler_philox.py:\d+:\d+: the seed must be an integer"
    with pytest.raises(KernelError, match=where):
        k_bad_seed[(1,)](np.zeros(8, np.float32), 1.5, BLOCK=8)


@needs_ptxas
def test_ptx_of_random_kernels_assembles(tmp_path):
    F, U, I = ir.ptr("f32"), ir.ptr("u32"), ir.I32  # noqa: E741
    for kern, types, cexpr in (
            (k_randint4x, dict(out_ptr=U, seed=I), dict(BLOCK=64)),
            (k_randn, dict(out_ptr=F, n4_ptr=F, seed=I), dict(BLOCK=128)),
            (k_rand_const_seed, dict(out_ptr=F, u4_ptr=F), dict(SEED=7, BLOCK=128)),
            (k_philox_impl, dict(c_ptr=U, k_ptr=U, out_ptr=U), dict(BLOCK=32))):
        text = compile_function(kern.fn, types, cexpr, Target.ptx("sm_90"), 4).code
        assert "mul.hi.u32" in text
        assert not (err := ptxas_errors(tmp_path, text)), err
