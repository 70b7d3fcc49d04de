"""Long randomized runs: 100,000 vectors per op through the Verilator model of the FPU and of
the multiplier, bit for bit against the references, plus a stream of mixed ops.

They run with ``SIMTGPU_LONG=1`` or ``-m regress``; otherwise they carry the project's
``regress`` mark and are deselected (building the FPU model takes about 30 s)."""

import numpy as np
import pytest
from fp_vectors import operands
from simtgpu.rtl.fpu import Fpu, FpuOp
from simtgpu.rtl.multiplier import MulOp, Multiplier
from test_unit_fpu import REFERENCE, expected
from test_unit_multiplier import reference as mul_reference
from units_harness import LONG, random_words, rng
from verilator_stream import build, stream

pytestmark = [pytest.mark.filterwarnings("ignore:invalid value encountered in cast")]
if not LONG:
    pytestmark.append(pytest.mark.regress)
N = 100_000


@pytest.fixture(scope="module")
def fpu_sim():
    return build(Fpu(), "fpu", has_c=True)


@pytest.mark.parametrize("op", list(FpuOp), ids=lambda o: o.name)
def test_fpu_long(fpu_sim, op: FpuOp) -> None:
    gen = rng(0x1000 + op.value)
    arity = REFERENCE[op][0]
    if op in (FpuOp.CVT_I2F, FpuOp.CVT_U2F):
        cols = [np.array(random_words(gen, N), dtype=np.uint32)]
    else:
        cols = operands(gen, N, max(arity, 2))[:arity]
    cols += [np.zeros_like(cols[0])] * (3 - len(cols))
    got = stream(fpu_sim, np.full(len(cols[0]), op.value), cols, latency=2)
    want = np.asarray(REFERENCE[op][1](*cols[:arity]), dtype=np.uint32)
    bad = np.flatnonzero(got != want)
    assert not len(bad), f"{op.name}: {len(bad)} mismatches, first at " + " ".join(
        f"{int(c[bad[0]]):#010x}" for c in cols) + f" rtl {int(got[bad[0]]):#010x} " \
        f"numerics {int(want[bad[0]]):#010x}"


def test_fpu_long_mixed_ops(fpu_sim) -> None:
    gen = rng(0x2000)
    cols = operands(gen, N, 3)
    ops = [list(FpuOp)[int(k)] for k in gen.integers(0, len(FpuOp), len(cols[0]))]
    got = stream(fpu_sim, np.array([op.value for op in ops]), cols, latency=2)
    assert np.array_equal(got, expected(ops, cols))


def test_multiplier_long() -> None:
    sim = build(Multiplier(), "multiplier", has_c=False)
    gen = rng(0x3000)
    a = np.array(random_words(gen, N), dtype=np.uint32)
    b = np.array(random_words(gen, N), dtype=np.uint32)
    ops = gen.integers(0, len(MulOp), N)
    got = stream(sim, ops, [a, b], latency=2)
    members = list(MulOp)
    want = [mul_reference(members[int(k)], int(x), int(y)) for k, x, y in zip(ops, a, b,
                                                                             strict=True)]
    assert got.tolist() == want
