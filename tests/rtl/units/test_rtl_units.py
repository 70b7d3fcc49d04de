"""Arithmetic units on Verilator (cocotb), bit-exact against the golden model.

References are the ISS's own semantic tables (``simtgpu.sim.semantics``) for the integer ops
and ``simtgpu.sim.numerics`` for FP32 and the SFU, so the RTL units are held to exactly what
the ISS computes. ``SIMTGPU_LONG=1`` raises the FP bench from 5,000 to 100,000 vectors per op
(and the multiplier's from 1,500 to 25,000).
"""

from __future__ import annotations

import numpy as np
import pytest
from simtgpu.rtl.fpu import FpuOp
from simtgpu.sim import numerics as nx
from simtgpu.sim import semantics as sem
from simtgpu.verification.fp_vectors import fp_operands, int_operands
from simtgpu.verification.units import build_unit, play
from units_harness import FPU_REFERENCE, LONG, SEED, fpu_expected

FP_VECTORS = 100_000 if LONG else 5_000


def _mismatches(what: str, inputs: dict, got: np.ndarray, want: np.ndarray) -> str:
    bad = np.nonzero(got.astype(np.uint64) != want.astype(np.uint64))[0]
    if not len(bad):
        return ""
    lines = [f"{what}: {len(bad)} of {len(got)} vectors differ (seed {SEED}); first ones:"]
    for i in bad[:8]:
        ops = ", ".join(f"{k}={int(v[i]):#010x}" for k, v in inputs.items())
        lines.append(f"  [{i}] {ops}: rtl {int(got[i]):#010x}, expected {int(want[i]):#010x}")
    return "\n".join(lines)


# --- ALU: every operation ---------------------------------------------------------------

def _alu_reference(name: str, a, b, c, pa, pb, psel) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(result, pred) the ISS computes for ALU op ``name`` (None where the op has none)."""
    m = name.lower().replace("_", ".")
    u = np.uint32
    with np.errstate(over="ignore"):
        if m in sem.INT_OPS:
            return sem.INT_OPS[m](a, b).astype(u), None
        if m in sem.INT_IMM_OPS:
            return sem.INT_IMM_OPS[m](a, b).astype(u), None
    imm = b & u(0xFFFF)
    if m == "movi":
        return ((imm ^ u(0x8000)) - u(0x8000)).astype(u), None
    if m == "lui":
        return (imm << u(16)).astype(u), None
    if m == "lli":
        return ((c & u(0xFFFF0000)) | imm).astype(u), None
    if m.startswith("isetp."):
        return None, sem.ICMP_OPS[m.split(".")[1]](a, b).astype(u)
    if m in sem.PLOGIC_OPS:
        return None, sem.PLOGIC_OPS[m](pa.astype(bool), pb.astype(bool)).astype(u)
    if m == "sel":
        return np.where(psel.astype(bool), a, b).astype(u), None
    raise KeyError(name)


@pytest.fixture(scope="module")
def alu():
    return build_unit("alu")[0]


def test_alu_every_op(alu):
    from simtgpu.rtl.alu import AluOp

    rng = np.random.default_rng(SEED)
    per_op = 400
    ops = list(AluOp)
    n = per_op * len(ops)
    a, b, c = int_operands(rng, n, 3)
    pa, pb, psel = (rng.integers(0, 2, n).astype(np.uint32) for _ in range(3))
    opcol = np.repeat([op.value for op in ops], per_op).astype(np.uint32)
    inputs = {"op": opcol, "a": a, "b": b, "c": c, "pa": pa, "pb": pb, "psel": psel}
    out = play(alu, inputs, ["result", "pred"], mode="comb", run_name="units_alu")
    problems = []
    for k, op in enumerate(ops):
        s = slice(k * per_op, (k + 1) * per_op)
        want_r, want_p = _alu_reference(op.name, a[s], b[s], c[s], pa[s], pb[s], psel[s])
        sub = {key: v[s] for key, v in inputs.items() if key != "op"}
        if want_r is not None:
            problems.append(_mismatches(f"alu {op.name} result", sub, out["result"][s], want_r))
        if want_p is not None:
            problems.append(_mismatches(f"alu {op.name} pred", sub, out["pred"][s], want_p))
    problems = [p for p in problems if p]
    assert not problems, "\n".join(problems)


# --- multiplier ---------------------------------------------------------------------------

def test_multiplier_every_op():
    from simtgpu.rtl.multiplier import MulOp

    bld, unit = build_unit("multiplier")
    rng = np.random.default_rng(SEED + 1)
    per_op = 25_000 if LONG else 1500
    ops = list(MulOp)
    n = per_op * len(ops)
    a, b = int_operands(rng, n, 2)
    opcol = np.repeat([op.value for op in ops], per_op).astype(np.uint32)
    out = play(bld, {"op": opcol, "a": a, "b": b}, ["result"], mode="pipe",
               latency=unit.latency, run_name="units_multiplier")
    problems = []
    for k, op in enumerate(ops):
        s = slice(k * per_op, (k + 1) * per_op)
        with np.errstate(over="ignore"):
            want = sem.MUL_OPS[op.name.lower()](a[s], b[s]).astype(np.uint32)
        problems.append(_mismatches(f"mul {op.name}", {"a": a[s], "b": b[s]},
                                    out["result"][s], want))
    problems = [p for p in problems if p]
    assert not problems, "\n".join(problems)


# --- FPU: add, sub, mul, fma, min, max, abs, neg, conversions ------------------------------

@pytest.fixture(scope="module")
def fpu():
    return build_unit("fpu")


@pytest.mark.parametrize("op", list(FpuOp), ids=lambda op: op.name)
def test_fpu_bit_exact(fpu, op):
    bld, unit = fpu
    arity, ref = FPU_REFERENCE[op]
    rng = np.random.default_rng(SEED + 100 + list(FpuOp).index(op))
    n = FP_VECTORS if op in (FpuOp.FADD, FpuOp.FSUB, FpuOp.FMUL, FpuOp.FFMA) \
        else max(1000, FP_VECTORS // 5)
    if op in (FpuOp.CVT_I2F, FpuOp.CVT_U2F):
        cols = int_operands(rng, n, 1)
    else:
        cols = fp_operands(rng, n, arity, edges=True)
    zero = np.zeros(len(cols[0]), dtype=np.uint32)
    full = (cols + [zero, zero, zero])[:3]
    inputs = {"op": np.full(len(zero), op.value, np.uint32),
              "a": full[0], "b": full[1], "c": full[2]}
    out = play(bld, inputs, ["result"], mode="pipe", latency=unit.latency,
               run_name=f"units_fpu_{op.name.lower()}")
    want = np.asarray(ref(*cols[:arity]), dtype=np.uint32)
    shown = {k: v for k, v in inputs.items() if k in "abc"[:arity]}
    msg = _mismatches(f"fpu {op.name}", shown, out["result"], want)
    assert not msg, msg


def test_fpu_mixed_ops(fpu):
    """A different op in every cycle: results must not leak between the ops in flight."""
    bld, unit = fpu
    rng = np.random.default_rng(SEED + 200)
    a, b, c = fp_operands(rng, FP_VECTORS, 3)
    ops = [list(FpuOp)[int(k)] for k in rng.integers(0, len(FpuOp), len(a))]
    inputs = {"op": np.array([op.value for op in ops], np.uint32), "a": a, "b": b, "c": c}
    out = play(bld, inputs, ["result"], mode="pipe", latency=unit.latency,
               run_name="units_fpu_mixed")
    msg = _mismatches("fpu mixed ops", inputs, out["result"], fpu_expected(ops, [a, b, c]))
    assert not msg, msg


# --- SFU -------------------------------------------------------------------------------------

def test_sfu_bit_exact():
    from simtgpu.rtl.sfu import SFU_LATENCY, SfuOp

    bld, _ = build_unit("sfu")
    rng = np.random.default_rng(SEED + 7)
    per_op = 2000 if LONG else 300
    ops = list(SfuOp)
    cols = [fp_operands(rng, per_op, 1, edges=True)[0] for _ in ops]
    per_op = len(cols[0])
    a = np.concatenate(cols).astype(np.uint32)
    opcol = np.repeat([op.value for op in ops], per_op).astype(np.uint32)
    out = play(bld, {"op": opcol, "a": a}, ["result"], mode="start_done",
               latency=SFU_LATENCY, run_name="units_sfu")
    problems = []
    for k, op in enumerate(ops):
        s = slice(k * per_op, (k + 1) * per_op)
        want = nx.sfu(op.name.lower(), a[s])
        problems.append(_mismatches(f"sfu {op.name}", {"a": a[s]}, out["result"][s], want))
    problems = [p for p in problems if p]
    assert not problems, "\n".join(problems)
    assert set(out["_cycles"].tolist()) == {SFU_LATENCY}, "SFU latency differs from SFU_LATENCY"


# --- decoder: every opcode of isa/ ----------------------------------------------------------

def _random_word(rng: np.random.Generator, instr) -> int | None:
    """A valid word of ``instr`` with random operand fields (None if none could be made)."""
    from simtgpu.isa import EncodingError, SReg, decode, encode, used_fields

    for _ in range(50):
        fields = {}
        for f in used_fields(instr):
            if f.name in ("op", "fn", "pred", "pneg"):
                continue
            fields[f.name] = int(rng.integers(0, 1 << f.width))
        for op in instr.operands:
            if op.align > 1:  # the first register of an aligned group (mma fragments)
                fields[op.fields[0]] -= fields[op.fields[0]] % op.align
            if op.kind.value == "sreg":
                fields[op.fields[0]] = int(rng.choice([int(s) for s in SReg]))
            if op.kind.value == "pred":
                fields["rd"] = int(rng.integers(0, 8))
        try:
            word = encode(instr, fields, pred=int(rng.integers(0, 8)),
                          pneg=bool(rng.integers(0, 2)))
            decode(word)
        except (EncodingError, ValueError, KeyError):
            continue
        return word
    return None


def test_decoder_every_opcode():
    """Every instruction of the ISA table, with random fields, against ``isa.decode``; and
    words ``isa.decode`` rejects must come out ``illegal``."""
    from amaranth.hdl import Shape
    from simtgpu.isa import INSTRUCTIONS, PT, EncodingError, decode
    from simtgpu.rtl.decoder import Decoder
    from simtgpu.rtl.layouts import DECODED

    bld, _ = build_unit("decoder", Decoder)
    rng = np.random.default_rng(SEED + 9)
    words, want = [], []
    for instr in INSTRUCTIONS:
        for _ in range(12):
            w = _random_word(rng, instr)
            assert w is not None, f"no valid word for {instr.mnemonic}"
            words.append(w)
            want.append(decode(w))
    bad_words = []
    while len(bad_words) < 400:
        w = int(rng.integers(0, 1 << 32))
        try:
            decode(w)
        except EncodingError:
            bad_words.append(w)
    out = play(bld, {"word": words + bad_words}, ["dec"], mode="comb", run_name="units_decoder")
    dec = [int(v) for v in out["dec"]]

    def field(v: int, name: str) -> int:
        f = DECODED[name]
        return (v >> f.offset) & ((1 << Shape.cast(f.shape).width) - 1)

    from simtgpu.rtl.isa_consts import Sem as RtlSem

    problems = []
    for w, d, v in zip(words, want, dec[:len(words)], strict=True):
        ins = d.instr
        used = {f.name for f in ins.fmt.fields}
        exp = {"illegal": 0, "sem": RtlSem[ins.sem.name].value, "guard": d.pred,
               "gneg": int(d.pneg),
               "wr_reg": int(ins.writes_reg and d.rd != 0),
               "wr_pred": int(ins.writes_pred and (d.rd & 7) != PT)}
        if ins.writes_reg or ins.writes_pred:
            exp["rd"] = d.rd if ins.writes_reg else d.rd & 7
        for r in ("rs1", "rs2", "rs3"):
            if r in used and any(o.fields and o.fields[0] == r and not o.is_dst
                                 for o in ins.operands):
                exp[r] = getattr(d, r)
        for k, e in exp.items():
            got = field(v, k)
            if k == "rd" and not ins.writes_reg:
                got &= 7
            if got != e:
                problems.append(f"{ins.mnemonic} {w:#010x}: {k} rtl {got}, expected {e}")
                break
    for w, v in zip(bad_words, dec[len(words):], strict=True):
        if field(v, "illegal") != 1:
            problems.append(f"{w:#010x}: isa.decode rejects it, the decoder does not")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:12])
