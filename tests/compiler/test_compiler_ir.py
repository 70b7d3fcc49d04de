"""The IR: the verifier accepts well-formed IR, rejects malformed IR with a clear message,
and the text form shows what was built."""

import pytest
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.ir import F32, I1, I32, Block, Builder, Function, IRError, Op

PARAMS = (("x", ir.ptr("f32")), ("n", I32))


def _fn(params=PARAMS) -> tuple[Function, Builder, list]:
    vals = [ir.Value(t, None, n) for n, t in params]
    fn = Function("k", [ir.Param(n, t, v) for (n, t), v in zip(params, vals, strict=True)],
                  Block())
    return fn, Builder(fn.body), vals


def _loop(b: Builder, init, yield_vals=None, yield_types=None) -> Op:
    lb, ub, st = b.const(0, I32), b.const(4, I32), b.const(1, I32)
    body = Block([I32] + [v.type for v in init])
    inner = Builder(body)
    ys = yield_vals(inner, body) if yield_vals else body.args[1:]
    body.append(Op("yield", ys, []))
    return b.op("for", [lb, ub, st, *init], types=[v.type for v in init], regions=[body])


def test_well_formed_kernel_verifies_and_prints():
    fn, b, (x, n) = _fn()
    tid = b.op("sreg", [], {"name": "tid"}).result
    p = b("gep", x, tid)
    m = b.op("icmp", [tid, n], {"cond": "lt"}).result
    v = b.op("load", [p, m, b.const(0.0, F32)]).result
    acc = _loop(b, [v], lambda bb, body: [bb("fadd", body.args[1], body.args[1])])
    b.op("store", [p, acc.results[0], m])
    ir.verify(fn)
    text = ir.print_function(fn)
    assert "kernel @k(" in text and "for " in text and "yield" in text
    assert "load" in text and "icmp [cond=\"lt\"]" in text


def test_use_before_definition():
    fn, b, (x, n) = _fn()
    later = Op("add", [n, n], [I32])
    b.op("add", [later.result, n])
    b.block.append(later)
    with pytest.raises(IRError, match="used before its definition"):
        ir.verify(fn)


def test_value_from_inner_region_is_out_of_scope():
    fn, b, (x, n) = _fn()
    leak = []

    def body(bb, blk):
        leak.append(bb("add", blk.args[0], n))
        return []

    _loop(b, [], body)
    b("add", leak[0], n)
    with pytest.raises(IRError, match="out of scope"):
        ir.verify(fn)


def test_operand_type_mismatch():
    fn, b, (x, n) = _fn()
    b.op("fadd", [n, n], types=[F32])
    with pytest.raises(IRError, match="type i32 where f32"):
        ir.verify(fn)


def test_result_type_must_follow_operands():
    fn, b, (x, n) = _fn()
    b.op("add", [n, n], types=[F32])
    with pytest.raises(IRError, match="do not follow"):
        ir.verify(fn)


def test_yield_must_match_loop_results():
    fn, b, (x, n) = _fn()
    f = b.const(1.0, F32)
    _loop(b, [f], lambda bb, body: [body.args[0]])  # yields i32 for an f32 carried value
    with pytest.raises(IRError, match="yields"):
        ir.verify(fn)


def test_region_without_yield():
    fn, b, (x, n) = _fn()
    c = b.op("icmp", [n, n], {"cond": "eq"}).result
    b.op("if", [c], types=[], regions=[Block(), Block()])
    with pytest.raises(IRError, match="does not end with yield"):
        ir.verify(fn)


def test_bad_condition_and_bad_load():
    fn, b, (x, n) = _fn()
    b.op("icmp", [n, n], {"cond": "bogus"}, types=[I1])
    with pytest.raises(IRError, match="bad condition"):
        ir.verify(fn)
    fn, b, (x, n) = _fn()
    b.op("load", [n], types=[I32])
    with pytest.raises(IRError, match="load needs"):
        ir.verify(fn)


def test_value_defined_twice():
    fn, b, (x, n) = _fn()
    op = b.op("add", [n, n])
    b.block.append(op)
    with pytest.raises(IRError, match="defined twice"):
        ir.verify(fn)


def test_unknown_op():
    fn, b, (x, n) = _fn()
    b.op("frobnicate", [n], types=[I32])
    with pytest.raises(IRError, match="unknown op"):
        ir.verify(fn)


@pytest.mark.parametrize("module", ["isa_codegen", "ptx_codegen"])
def test_each_code_generator_has_one_emitter_per_ir_op(module):
    import importlib

    gen = importlib.import_module(f"simtgpu.compiler_backend.{module}")
    assert set(gen._EMITTERS) == ir.ALL_OPS
    assert all(callable(e) for e in gen._EMITTERS.values())


def test_op_table_check_names_missing_and_unknown_ops():
    table = dict.fromkeys(ir.ALL_OPS, print)
    ir.check_op_table(table, "gen")
    del table["ffma"]
    table["fmadd"] = print
    with pytest.raises(RuntimeError, match="gen: .*no emitter for ffma; entries for ops the IR "
                                           "does not have: fmadd"):
        ir.check_op_table(table, "gen")


@pytest.mark.parametrize("module", ["isa_codegen", "ptx_codegen"])
def test_an_ir_op_without_an_emitter_stops_the_import(module):
    import subprocess
    import sys

    code = ("import simtgpu.compiler_backend.ir as ir\n"
            "ir.ALL_OPS = ir.ALL_OPS | {'frob'}\n"
            f"import simtgpu.compiler_backend.{module}\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode != 0
    assert "op table out of step with the IR; no emitter for frob" in r.stderr
