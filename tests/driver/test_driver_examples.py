"""examples/*.py at a couple of sizes and configurations (each compares with NumPy and
returns non-zero on a mismatch), and their references against hand-worked values."""

from __future__ import annotations

import numpy as np
import pytest
from example_scripts import load_example
from simtgpu.assembler.examples import EXAMPLES


def _example(name: str):
    return load_example(EXAMPLES, name)


CASES = [
    ("vector_add", ["--size", "1"]),
    ("vector_add", ["--size", "1001", "--config", "tiny"]),
    ("saxpy", ["--size", "333", "--alpha", "-0.75"]),
    ("saxpy", ["--size", "64", "--config", "full"]),
    ("reduction", ["--size", "1000", "--config", "tiny"]),
    ("reduction", ["--size", "3000", "--config", "full"]),
    ("reduction", ["--size", "77", "--block", "1"]),
    ("divergence", ["--size", "300"]),
    ("divergence", ["--size", "61", "--config", "tiny", "--seed", "3"]),
    ("matmul", ["--size", "9", "--config", "tiny"]),
    ("matmul", ["--m", "13", "--n", "21", "--k", "5"]),
]


@pytest.mark.parametrize("name,argv", CASES)
def test_example_passes(name, argv, capsys):
    rc = _example(name).main(argv)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "PASS" in out


def test_matmul_on_rtl_is_bit_identical_to_the_iss(capsys):
    """`examples/matmul.py --backend rtl` checks C against NumPy and, bit for bit, against
    the ISS; both verdicts must pass."""
    rc = _example("matmul").main(["--backend", "rtl", "--config", "tiny", "--m", "11",
                                  "--n", "9", "--k", "7"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "matmul on rtl against the ISS: PASS (all 99 elements bit-exact)" in out, out


def _cuda_usable() -> bool:
    try:
        from simtgpu.driver_model import Device
        Device(backend="cuda")
    except Exception:
        return False
    return True


@pytest.mark.skipif(_cuda_usable(), reason="an NVIDIA GPU is present, so cuda is available")
def test_unavailable_backend_exits_2(capsys):
    """Without an NVIDIA GPU and driver, asking for cuda exits 2 with a one-line reason."""
    with pytest.raises(SystemExit) as e:
        _example("vector_add").main(["--backend", "cuda"])
    assert e.value.code == 2
    assert "cuda backend unavailable" in capsys.readouterr().err


def test_classify_reference_by_hand():
    ref = _example("divergence").classify_reference
    x = np.array([27, 1, 0, -5, 6, 2, 3, 7], np.int32)
    # Collatz step counts: 27 -> 111, 6 -> 8, 2 -> 1, 3 -> 7, 7 -> 16.
    assert ref(x).tolist() == [111, 0, -1, -1, 8, 1, 7, 16]
    # 2**31 + 1 is odd: 3v + 1 wraps in 32 bits; 0xFFFFFFFF-style values are negative i32.
    big = np.array([(1 << 31) - 1], np.int32)
    assert 0 < ref(big)[0] <= 255


def test_tree_sums_reference_by_hand():
    tree = _example("reduction").tree_sums
    x = np.array([1, 2, 3, 4, 5], np.float32)
    assert tree(x, 4).tolist() == [10.0, 5.0]
    # Order matters in f32 (1e8 + 1 rounds back to 1e8). The tree adds x[t] + x[t + 2]
    # first: (1e8 + 1) + (-1e8 + 1) loses both ones, (1e8 - 1e8) + (1 + 1) keeps them.
    y = np.array([1e8, -1e8, 1, 1], np.float32)
    assert tree(y, 4).tolist() == [0.0]
    assert tree(np.array([1e8, 1, -1e8, 1], np.float32), 4).tolist() == [2.0]
