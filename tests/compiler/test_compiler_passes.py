"""Each pass: a small IR in, the property its docstring promises out; and the whole pipeline
keeps results identical on the ISS."""

import numpy as np
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend import ir, passes
from simtgpu.compiler_backend.compiler import Target, compile_function
from simtgpu.compiler_backend.frontend import lower_kernel
from simtgpu.compiler_backend.ir import F32, I32, Block, Builder, Function, Op
from simtgpu.compiler_backend.jit import launch_compiled


def _fn():
    x = ir.Value(ir.ptr("f32"), None, "x")
    n = ir.Value(I32, None, "n")
    fn = Function("k", [ir.Param("x", x.type, x), ir.Param("n", I32, n)], Block())
    return fn, Builder(fn.body), x, n


def _names(fn):
    return [op.name for op in fn.walk()]


def test_constant_fold_integers_wrap_and_identities():
    fn, b, x, n = _fn()
    big = b("add", b.const(0x7FFFFFFF, I32), b.const(1, I32))
    y = b("mul", b("add", n, b.const(0, I32)), b.const(1, I32))
    b.op("store", [b("gep", x, b("add", y, big)), b.const(1.0, F32)])
    passes.constant_fold(fn)
    ir.verify(fn)
    consts = [op.attrs["value"] for op in fn.walk() if op.name == "const"]
    assert -(1 << 31) in consts  # 0x7fffffff + 1 wraps like the ISA
    adds = [op for op in fn.walk() if op.name == "add"]
    assert len(adds) == 1 and adds[0].operands[0] is n  # n+0 and *1 are gone


def test_constant_fold_float_is_ftz_and_never_folds_sfu():
    fn, b, x, n = _fn()
    tiny = b("fmul", b.const(1e-30, F32), b.const(1e-10, F32))  # denormal -> flushed
    r = b("rcp", b.const(3.0, F32))
    b.op("store", [x, b("fadd", tiny, r)])
    passes.constant_fold(fn)
    vals = {op.attrs["value"] for op in fn.walk() if op.name == "const"}
    assert 0.0 in vals
    assert "rcp" in _names(fn)


def test_cse_merges_pure_ops_not_loads():
    fn, b, x, n = _fn()
    a1 = b("add", n, n)
    a2 = b("add", n, n)
    l1 = b.op("load", [x]).result
    l2 = b.op("load", [x]).result
    b.op("store", [b("gep", x, b("add", a1, a2)), b("fadd", l1, l2)])
    passes.cse(fn)
    ir.verify(fn)
    names = _names(fn)
    assert names.count("add") == 2 and names.count("load") == 2


def test_dce_removes_dead_chains_keeps_effects():
    fn, b, x, n = _fn()
    d = b("mul", b("add", n, n), n)  # dead chain
    del d
    b.op("store", [x, b.const(2.0, F32)])
    b.op("atomic", [x, b.const(1.0, F32)], {"op": "fadd"})  # result unused, effect kept
    passes.dce(fn)
    names = _names(fn)
    assert "mul" not in names and "add" not in names
    assert "store" in names and "atomic" in names


def test_licm_hoists_invariant_pure_ops_only():
    fn, b, x, n = _fn()
    body = Block([I32])
    inner = Builder(body)
    inv = inner("mul", n, n)
    var = inner("add", body.args[0], inv)
    ld = inner.op("load", [inner("gep", x, var)]).result
    inner.op("store", [inner("gep", x, inv), ld])
    body.append(Op("yield", [], []))
    b.op("for", [b.const(0, I32), n, b.const(1, I32)], types=[], regions=[body])
    passes.licm(fn)
    ir.verify(fn)
    top = [op.name for op in fn.body.ops]
    assert top.index("mul") < top.index("for")
    assert [op.name for op in body.ops].count("load") == 1
    assert "add" in [op.name for op in body.ops]


def test_strength_reduction_of_address_arithmetic():
    fn, b, x, n = _fn()
    i = b("mul", n, b.const(8, I32))
    p = b("gep", x, b("add", i, b.const(3, I32)))
    b.op("store", [b("gep", p, b.const(2, I32)), b.const(1.0, F32)])
    passes.strength_reduce(fn)
    passes.constant_fold(fn)
    passes.dce(fn)
    ir.verify(fn)
    names = _names(fn)
    assert "mul" not in names and "shl" in names
    # the constant 3 moved out of the index and merged with the +2: one gep by 5
    geps = [op for op in fn.walk() if op.name == "gep"]
    assert [op.operands[1].owner.attrs["value"] for op in geps] == [5]
    assert "ptradd" in names


@triton.jit
def _mixed(x_ptr, y_ptr, n, K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in range(0, K):
        v = tl.load(x_ptr + offs * 1 + 0, mask=m, other=0.0)
        acc += v * (k + 1) + 0.0
    if n > 3:
        acc = acc + tl.max(acc, axis=0)
    tl.store(y_ptr + offs, acc, mask=m)


def test_pipeline_preserves_results(iss_device):
    n = 45
    x = np.linspace(-2, 2, n).astype(np.float32)
    types = {"x_ptr": ir.ptr("f32"), "y_ptr": ir.ptr("f32"), "n": I32}
    outs = []
    for opt in (False, True):
        ck = compile_function(_mixed.fn, types, {"K": 3, "BLOCK": 32}, Target("isa", 8),
                              optimize=opt)
        y = np.zeros(n, np.float32)
        launch_compiled(iss_device, ck, (2, 1, 1), {"x_ptr": x, "y_ptr": y, "n": n})
        outs.append((y, ck.stats["static_instructions"]))
    assert np.array_equal(outs[0][0], outs[1][0])
    assert outs[1][1] < outs[0][1]
    acc = np.zeros(64, np.float32)
    acc[:n] = x * 6  # masked-off elements load 0.0
    want = (acc.reshape(2, 32) + acc.reshape(2, 32).max(axis=1, keepdims=True)).ravel()[:n]
    assert np.allclose(outs[1][0], want, rtol=1e-6)


def test_front_end_output_verifies():
    f = lower_kernel(_mixed.fn, {"x_ptr": ir.ptr("f32"), "y_ptr": ir.ptr("f32"), "n": I32},
                     {"K": 2, "BLOCK": 64}, 32, 8)
    ir.verify(f)
    passes.optimize(f)
    assert "for" in _names(f) and "if" in _names(f)


def test_loop_strength_reduction_carries_the_pointer():
    fn, b, x, n = _fn()
    body = Block([I32])
    inner = Builder(body)
    off = inner("shl", inner("add", inner("mul", body.args[0], n), inner.const(3, I32)),
                inner.const(2, I32))
    p = inner("ptradd", x, off)
    inner.op("store", [p, inner.const(1.0, F32)])
    body.append(Op("yield", [], []))
    loop = b.op("for", [b.const(2, I32), n, b.const(3, I32)], types=[], regions=[body])
    passes.loop_strength_reduce(fn)
    passes.constant_fold(fn)
    passes.dce(fn)
    ir.verify(fn)
    assert len(loop.results) == 1 and len(body.args) == 2  # one carried pointer
    body_ops = [op.name for op in body.ops]
    assert "mul" not in body_ops and "shl" not in body_ops
    assert body_ops.count("ptradd") == 1  # the increment
    store = next(op for op in body.ops if op.name == "store")
    assert store.operands[0] is body.args[1]
    # start: x + (2 * n + 3) * 4 bytes; step: 3 * n * 4 bytes
    init = loop.operands[3].owner
    assert init.name == "ptradd" and init.operands[0] is x


def test_uniformity_follows_the_data_and_loops():
    from simtgpu.compiler_backend.uniformity import uniformity

    fn, b, x, n = _fn()
    tid = b.op("sreg", [], {"name": "tid"}).result
    bid = b.op("sreg", [], {"name": "ctaid.x"}).result
    by_block = b("add", n, bid)  # parameter + block id: uniform
    by_thread = b("add", n, tid)  # a thread id: not
    loaded = b.op("load", [b("gep", x, by_block)]).result  # one address for every lane
    scattered = b.op("load", [b("gep", x, by_thread)]).result
    voted = b("vote", b.op("icmp", [tid, n], {"cond": "lt"}).result, mode="any")
    zero, one = b.const(0, I32), b.const(1, I32)
    body = Block([I32, I32, I32])  # induction, a value that picks up tid, one that does not
    inner = Builder(body)
    body.append(Op("yield", [inner("add", body.args[1], tid), inner("add", body.args[2], one)],
                   []))
    loop = b.op("for", [zero, by_block, one, zero, zero], types=[I32, I32], regions=[body])
    u = uniformity(fn)
    assert all(v in u for v in (n, bid, by_block, loaded, voted, body.args[0], body.args[2],
                                loop.results[1]))
    assert not any(v in u for v in (tid, by_thread, scattered, body.args[1], loop.results[0]))
    # a trip count that depends on the thread makes every carried value divergent
    loop.operands[1] = by_thread
    u = uniformity(fn)
    assert not any(v in u for v in (body.args[0], body.args[2], loop.results[1]))
