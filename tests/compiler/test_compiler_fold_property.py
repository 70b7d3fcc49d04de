"""Constant folding agrees with execution, bit for bit, for every op the folder evaluates.

For each op of ``passes.FOLDABLE_OPS`` Hypothesis draws 32 operand tuples (edge values
weighted: NaN payloads, infinities, -0.0, subnormals, INT_MIN, ...). The op runs unfolded on
the ISS (operands loaded from memory, one tuple per thread, through the ISA code generator and
the instruction the ISS executes), and the same op with constant operands goes through
``passes.constant_fold``; the folded constant must be the ISS's result. The 64-bit integer
ops (``.l`` cases) run as the register-pair code :func:`wide.legalize_i64` makes of them, so
folding with exact integers and the pair arithmetic are checked against each other.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from simtgpu.compiler_backend import ir, passes
from simtgpu.compiler_backend.compiler import CompiledKernel, Target
from simtgpu.compiler_backend.ir import F32, I1, I32, I64, Block, Builder, Function
from simtgpu.compiler_backend.isa_codegen import generate, param_kind
from simtgpu.compiler_backend.jit import launch_compiled
from simtgpu.compiler_backend.wide import legalize_i64

LANES = 32

FLOAT_EDGES = [0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x80800000,
               0x3F800000, 0xBF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000,
               0x7FFFFFFF, 0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF, 0x4F000000,
               0xCF000000, 0x4F800000, 0x3F000000, 0x34000000, 0x4B800000]
INT_EDGES = [0, 1, 2, 31, 32, 33, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0x80000001, 0xFFFF,
             0x10000, 0xFFFFFFFE]
LONG_EDGES = INT_EDGES + [63, 64, 65, 1 << 32, (1 << 32) + 1, 1 << 63, (1 << 63) - 1,
                          (1 << 64) - 1, (1 << 63) + 1, 0xFFFFFFFF00000000, 0x0123456789ABCDEF]
M64 = (1 << 64) - 1

# op name -> (operand kinds, result kind, attrs); kinds: i (i32), f (f32), p (i1)
CASES: dict[str, tuple[str, str, dict]] = {}
for _n in ir.INT_BINARY:
    CASES[_n] = ("ii", "i", {})
for _c in ir.INT_CONDS:
    CASES[f"icmp.{_c}"] = ("ii", "p", {"cond": _c})
for _n in ("fadd", "fsub", "fmul", "fmin", "fmax"):
    CASES[_n] = ("ff", "f", {})
CASES["ffma"] = ("fff", "f", {})
CASES["fneg"] = ("f", "f", {})
CASES["fabs"] = ("f", "f", {})
for _c in ir.FLOAT_CONDS:
    CASES[f"fcmp.{_c}"] = ("ff", "p", {"cond": _c})
CASES.update({"i2f": ("i", "f", {}), "u2f": ("i", "f", {}), "f2i": ("f", "i", {}),
              "f2u": ("f", "i", {}), "select.i": ("pii", "i", {}), "select.f": ("pff", "f", {}),
              "not": ("p", "p", {}), "and.p": ("pp", "p", {}), "or.p": ("pp", "p", {}),
              "xor.p": ("pp", "p", {})})
# 64-bit integers (kind l): the same ops on i64, and the conversions to and from it
for _n in ir.INT_BINARY:
    if _n not in ("mulhi", "mulhu"):
        CASES[f"{_n}.l"] = ("ll", "l", {})
for _c in ir.INT_CONDS:
    CASES[f"icmp.{_c}.l"] = ("ll", "p", {"cond": _c})
CASES.update({"sext": ("i", "l", {}), "zext": ("i", "l", {}), "trunc": ("l", "i", {}),
              "i2f.l": ("l", "f", {}), "u2f.l": ("l", "f", {}),
              "f2i.l": ("f", "l", {"bits": 64}), "f2u.l": ("f", "l", {"bits": 64}),
              "select.l": ("pll", "l", {})})

_TYPE = {"i": I32, "f": F32, "p": I1, "l": I64}
_ELEM = {"f": "f32", "l": "i64"}


def test_every_foldable_op_is_covered():
    assert {c.split(".")[0] for c in CASES} == set(passes.FOLDABLE_OPS)


def _as_ir_const(kind: str, bits: int):
    """The IR constant for a register pattern (a float constant is a Python float, so a
    signalling NaN is quietened as the code generators would emit it)."""
    if kind == "f":
        return float(np.array([bits], np.uint32).view(np.float32)[0])
    if kind == "p":
        return bool(bits & 1)
    if kind == "l":
        return bits - (1 << 64) if bits >= 1 << 63 else bits
    return bits - (1 << 32) if bits >= 1 << 31 else bits


def _const_bits(kind: str, value) -> int:
    if kind == "f":
        return struct.unpack("<I", struct.pack("<f", value))[0]
    return int(value) & (M64 if kind == "l" else 0xFFFFFFFF)


def _op_name(case: str) -> str:
    return case.split(".")[0]


def _kernel(case: str) -> CompiledKernel:
    """The op applied to operands loaded from memory (one tuple per thread), unoptimised."""
    kinds, rkind, attrs = CASES[case]
    params = []
    for i, k in enumerate(kinds + "o"):
        elem = _ELEM.get(rkind if k == "o" else k, "i32")
        v = ir.Value(ir.ptr(elem), None, f"p{i}")
        params.append(ir.Param(f"p{i}", v.type, v))
    fn = Function(f"fold_{case.replace('.', '_')}", params, Block(), threads=LANES,
                  warp_size=8)
    b = Builder(fn.body)
    tid = b.op("sreg", [], {"name": "tid"}).result
    ops = []
    for k, p in zip(kinds, params, strict=False):
        v = b.op("load", [b("gep", p.value, tid)]).result
        ops.append(b.op("icmp", [b("and", v, b.const(1, I32)), b.const(0, I32)],
                        {"cond": "ne"}).result if k == "p" else v)
    r = b.op(_op_name(case), ops, attrs).result
    if rkind == "p":
        r = b("select", r, b.const(1, I32), b.const(0, I32))
    b.op("store", [b("gep", params[-1].value, tid), r])
    fn.meta["block"] = (LANES, 1, 1)
    ir.verify(fn)
    if legalize_i64(fn):
        ir.verify(fn)
    res = generate(fn)
    return CompiledKernel(fn.name, Target("isa", 8), "", res.text,
                          [(p.name, param_kind(p.type)) for p in fn.params], 0, LANES,
                          (LANES, 1, 1), 0.0)


def _folded(case: str, consts: list) -> int:
    kinds, rkind, attrs = CASES[case]
    out = ir.Value(ir.ptr(_ELEM.get(rkind, "i32")), None, "o")
    fn = Function("f", [ir.Param("o", out.type, out)], Block())
    b = Builder(fn.body)
    cs = [b.const(c, _TYPE[k]) for k, c in zip(kinds, consts, strict=True)]
    r = b.op(_op_name(case), cs, attrs).result
    if rkind == "p":
        r = b("select", r, b.const(1, I32), b.const(0, I32))
    b.op("store", [out, r])
    passes.constant_fold(fn)
    stored = fn.body.ops[-1].operands[1]
    assert stored.owner.name == "const", f"{case} was not folded"
    return _const_bits(rkind if rkind in "fl" else "i", stored.owner.attrs["value"])


_KERNELS: dict[str, CompiledKernel] = {}


def _operand(kind: str):
    if kind == "f":
        return st.one_of(st.sampled_from(FLOAT_EDGES), st.integers(0, 0xFFFFFFFF),
                         st.floats(width=32, allow_nan=False).map(
                             lambda x: struct.unpack("<I", struct.pack("<f", x))[0]))
    if kind == "l":
        return st.one_of(st.sampled_from(LONG_EDGES), st.integers(0, M64),
                         st.integers(0, M64).map(lambda x: x >> (x & 63)))
    return st.one_of(st.sampled_from(INT_EDGES), st.integers(0, 0xFFFFFFFF))


@pytest.mark.parametrize("case", sorted(CASES))
def test_folding_equals_iss(iss_device, case):
    kinds, rkind, _ = CASES[case]
    tuples = st.tuples(*[_operand(k) for k in kinds])

    @settings(max_examples=8, deadline=None, derandomize=True,
              phases=[Phase.explicit, Phase.generate],  # no shrinking: the lane is named
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(tuples, min_size=LANES, max_size=LANES))
    def check(rows):
        consts = [[_as_ir_const(k, v) for k, v in zip(kinds, row, strict=True)] for row in rows]
        # the kernel reads exactly the patterns the constants stand for
        cols = [np.array([_const_bits(k if k in "fl" else "i", c[i]) for c in consts],
                         np.uint64 if k == "l" else np.uint32) for i, k in enumerate(kinds)]
        out = np.zeros(LANES, np.uint64 if rkind == "l" else np.uint32)
        ck = _KERNELS.get(case) or _KERNELS.setdefault(case, _kernel(case))
        view = {"f": np.float32, "l": np.int64}
        args = [c.view(view.get(k, np.int32)) for c, k in zip(cols, kinds, strict=True)]
        args.append(out.view(view.get(rkind, np.int32)))
        launch_compiled(iss_device, ck, (1, 1, 1), {f"p{i}": a for i, a in enumerate(args)})
        for lane, c in enumerate(consts):
            got = _folded(case, c)
            assert got == int(out[lane]), (
                f"{case}{tuple(hex(x) for x in cols_row(cols, lane))}: folded {got:#x}, "
                f"ISS {int(out[lane]):#x}")

    check()


def cols_row(cols, lane):
    return [int(c[lane]) for c in cols]


def test_folded_inf_minus_inf_is_the_canonical_nan():
    assert _folded("fsub", [float("inf"), float("inf")]) == 0x7FFFFFFF
