"""examples/asm/sgemm_tiled.s on the ISS through the driver, bit for bit against NumPy doing
the kernel's fused multiply-adds in the kernel's documented order, at ragged sizes (M, N, K
not multiples of the tile), several tile shapes and the tiny/small/full configurations."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from example_scripts import load_example
from simtgpu.assembler.examples import EXAMPLES, example_asm
from simtgpu.driver_model import Device
from simtgpu.sim import numerics as nx


def _example():
    return load_example(EXAMPLES, "sgemm")


def _reference(a: np.ndarray, b: np.ndarray, bx: int) -> np.ndarray:
    """The header's order through the ISA's own FMA definition (sim/numerics.py, itself
    checked against exact rationals): acc = fma(A[r][j], B[j][c], acc), j ascending over k
    rounded up to a multiple of bx, padding terms with A = B = 0.0."""
    m, k = a.shape
    n = b.shape[1]
    acc = np.zeros((m, n), np.uint32)
    zero = np.zeros((), np.uint32)
    for j in range(-(-k // bx) * bx):
        aj = nx.f32_to_bits(a[:, j:j + 1]) if j < k else zero
        bj = nx.f32_to_bits(b[j:j + 1, :]) if j < k else zero
        acc = nx.ffma(aj, bj, acc)
    return nx.bits_to_f32(acc)


def _run(config: str, m: int, n: int, k: int, tile: tuple[int, int] | None = None,
         seed: int = 0) -> None:
    dev = Device(backend="iss", config=config)
    kernel = dev.load_module(example_asm("sgemm_tiled")).kernel("sgemm_tiled")
    bx, by = tile or _example().default_tile(dev.config.max_threads_per_block)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    d_a, d_b = dev.to_device(a), dev.to_device(b)
    sentinel = np.full((m + 1, n), 7.0, np.float32)  # one row past C must stay untouched
    d_c = dev.to_device(sentinel)
    gx, gy = -(-n // bx), -(-m // by)
    res = dev.launch(kernel, grid=(gx, gy), block=(bx, by), args=(d_a, d_b, d_c, m, n, k))
    got = d_c.to_host()
    want = _reference(a, b, bx)
    assert got[:m].view(np.uint32).tolist() == want.view(np.uint32).tolist()
    assert np.all(got[m:] == 7.0)
    assert res.divergence_events == 0  # every branch of the kernel is uniform
    # Each block reads its rows of A and its columns of B once each, and nothing outside
    # them (the guards): a missing guard would not change C, since the other factor of an
    # out-of-range term is 0.0, but it would read memory the kernel was not given.
    assert res.details["global_loads"] == k * (m * gx + n * gy)
    assert res.details["global_stores"] == m * n
    if k > 0:  # and the order is a matrix product to f32 accuracy
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        bound = k * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64))
        assert np.all(np.abs(got[:m] - a64 @ b64) <= bound + 1e-37)


@pytest.mark.parametrize("config,m,n,k", [
    ("tiny", 9, 7, 6),        # ragged everywhere, K shorter than two steps
    ("tiny", 4, 8, 8),        # whole tiles only
    ("small", 29, 19, 13),
    ("small", 1, 1, 1),
    ("small", 16, 24, 40),
    ("full", 37, 40, 35),     # 16x16 tiles, 32 lanes: a warp holds two tile rows
    ("full", 16, 16, 16),
])
def test_default_tile(config: str, m: int, n: int, k: int) -> None:
    _run(config, m, n, k)


@pytest.mark.parametrize("config,tile,m,n,k", [
    ("full", (8, 8), 11, 13, 21),    # BX == BY: one B word per thread and step
    ("small", (8, 2), 5, 17, 3),     # four B words per thread and step
    ("small", (4, 8), 13, 10, 9),    # BY > BX: threads with ty >= BX copy no B word
    ("small", (16, 2), 3, 33, 17),
    ("full", (8, 32), 40, 9, 20),
    ("tiny", (4, 1), 3, 5, 7),
    ("full", (8, 4), 17, 9, 30),     # the whole block in one warp of 32
    ("full", (4, 2), 6, 9, 11),      # 8 threads: lanes 8..31 of the warp never live
])
def test_other_tiles(config: str, tile: tuple[int, int], m: int, n: int, k: int) -> None:
    _run(config, m, n, k, tile, seed=1)


def test_k_zero_writes_zeros() -> None:
    _run("small", 5, 9, 0)


def test_default_tiles_fill_the_block() -> None:
    tile = _example().default_tile
    assert [tile(t) for t in (8, 32, 256)] == [(4, 2), (8, 4), (16, 16)]


def test_example_fma_matches_the_isa() -> None:
    """The example's NumPy FMA (its own round-to-odd) against sim/numerics and, for the
    double-rounding trap, exact rationals."""
    fma = _example().fma_f32
    rng = np.random.default_rng(5)
    a, b, c = (rng.standard_normal(20000).astype(np.float32) for _ in range(3))
    c[::3] *= np.float32(2.0 ** -30)
    want = nx.bits_to_f32(nx.ffma(*(nx.f32_to_bits(x) for x in (a, b, c))))
    assert fma(a, b, c).view(np.uint32).tolist() == want.view(np.uint32).tolist()
    # (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: a binary32 midpoint; a tiny addend decides it
    x, tiny = np.float32(1 + 2.0 ** -12), np.float32(2.0 ** -60)
    exact = Fraction(float(x)) ** 2 + Fraction(float(tiny))
    got = Fraction(float(fma(x, x, tiny)))
    assert got == 1 + Fraction(1, 2 ** 11) + Fraction(1, 2 ** 23)  # up, not to even
    assert abs(got - exact) < Fraction(1, 2 ** 24)


@pytest.mark.parametrize("argv", [
    ["--size", "13", "--config", "tiny"],
    ["--m", "30", "--n", "21", "--k", "17"],
    ["--size", "20", "--config", "full", "--bx", "8", "--by", "8"],
])
def test_example_script_passes(argv: list[str], capsys) -> None:
    assert _example().main(argv) == 0, capsys.readouterr().out


def test_example_refuses_bad_tiles(capsys) -> None:
    assert _example().main(["--bx", "12"]) == 2
    assert _example().main(["--bx", "8", "--by", "3"]) == 2
    assert _example().main(["--config", "tiny", "--bx", "8", "--by", "2"]) == 2
    assert _example().main(["--m", "0"]) == 2
    err = capsys.readouterr().err
    assert "--by 3" in err and "m=0" in err
