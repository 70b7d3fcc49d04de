"""Integer // and % by a run-time divisor: exact for every pair of 32-bit operands (checked
exhaustively over the edge values, randomly elsewhere) against a reference written from the
definition: truncation toward zero, INT_MIN // -1 wrapping to INT_MIN, and NVIDIA's results
for a zero divisor (x // 0 = -1 for x >= 0, 1 for x < 0; x % 0 = x)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
EDGES = [INT_MIN, INT_MIN + 1, INT_MIN + 2, -65537, -7, -2, -1, 0, 1, 2, 3, 7, 65536,
         INT_MAX - 1, INT_MAX]


def reference(x: int, y: int) -> tuple[int, int]:
    """(x // y, x % y) with this compiler's (and C's, and Triton's) meaning, wrapped to i32."""
    if y == 0:
        q = -1 if x >= 0 else 1
    else:
        q = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
    wrap = lambda v: (v + (1 << 31)) % (1 << 32) - (1 << 31)  # noqa: E731
    q = wrap(q)
    return q, wrap(x - q * y)


@triton.jit
def k_div(x_ptr, y_ptr, q_ptr, r_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    tl.store(q_ptr + offs, x // y, mask=m)
    tl.store(r_ptr + offs, x % y, mask=m)


@triton.jit
def k_div_nonneg(x_ptr, y_ptr, q_ptr, r_ptr, n, BLOCK: tl.constexpr):
    # masked to 31 bits, so the compiler can prove both operands non-negative
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0) & 0x7FFFFFFF
    y = tl.load(y_ptr + offs, mask=m, other=1) & 0x7FFFFFFF
    tl.store(q_ptr + offs, x // y, mask=m)
    tl.store(r_ptr + offs, x % y, mask=m)


def _pairs(rng: np.random.Generator, n_random: int) -> tuple[np.ndarray, np.ndarray]:
    edge = np.array(list(itertools.product(EDGES, EDGES)), np.int64)
    mags = rng.integers(0, 32, (n_random, 2))  # random bit lengths: small and large values
    rand = rng.integers(-(1 << 31), 1 << 31, (n_random, 2)) >> mags
    both = np.concatenate([edge, rand])
    return both[:, 0].astype(np.int32), both[:, 1].astype(np.int32)


@pytest.mark.parametrize("kernel", [k_div, k_div_nonneg], ids=["signed", "nonneg"])
def test_division_is_exact_at_the_edges_and_elsewhere(iss_device, kernel) -> None:
    x, y = _pairs(np.random.default_rng(11), 1500)
    if kernel is k_div_nonneg:
        x, y = x & INT_MAX, y & INT_MAX
    q, r = np.zeros_like(x), np.zeros_like(x)
    kernel[(triton.cdiv(x.size, 128),)](x, y, q, r, x.size, BLOCK=128)
    want = np.array([reference(int(a), int(b)) for a, b in zip(x, y, strict=True)])
    bad = np.flatnonzero((q != want[:, 0]) | (r != want[:, 1]))
    assert bad.size == 0, [(int(x[i]), int(y[i]), int(q[i]), int(r[i]), tuple(want[i]))
                           for i in bad[:5]]


def test_reference_matches_hand_computed_cases() -> None:
    assert reference(-7, 2) == (-3, -1) and reference(7, -2) == (-3, 1)
    assert reference(INT_MIN, -1) == (INT_MIN, 0)
    assert reference(INT_MIN, 2) == (-(1 << 30), 0) and reference(0, INT_MIN) == (0, 0)
    assert reference(5, 0) == (-1, 5) and reference(-5, 0) == (1, -5)
