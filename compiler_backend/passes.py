"""IR passes. Each is a function ``Function -> Function`` (it rewrites in place and returns
the function) whose docstring states what it guarantees. :func:`optimize` runs them in the
order both code generators rely on, so the ISA and PTX see the same op order."""

from __future__ import annotations

import struct

import numpy as np
from simtgpu.sim import numerics as nx
from simtgpu.sim.numerics import f32_to_bits
from simtgpu.sim.semantics import ICMP_OPS, INT_OPS, MUL_OPS

from . import ir
from .ir import F32, I1, I32, I64, Block, Function, Op, Value, const_value

MASK32 = 0xFFFFFFFF


def _s32(x: int) -> int:
    x &= MASK32
    return x - (1 << 32) if x >= 1 << 31 else x


def _replace_uses(fn: Function, mapping: dict[int, Value]) -> None:
    if not mapping:
        return
    for op in fn.walk():
        op.operands = [mapping.get(v.id, v) for v in op.operands]
        for i, v in enumerate(op.operands):
            while v.id in mapping:
                v = mapping[v.id]
            op.operands[i] = v


def _reg(c: int | float | bool) -> np.ndarray:
    """An IR constant as the 32-bit register pattern the ISA holds (one-element uint32 array;
    float constants round to float32 first, as the code generators emit them)."""
    if isinstance(c, float):
        return f32_to_bits(np.array([c], np.float32))
    return np.array([int(c) & MASK32], np.uint32)


def _from_reg(bits: np.ndarray, t) -> int | float | bool:
    """A register pattern back as an IR constant of type ``t``."""
    b = int(np.asarray(bits).reshape(-1)[0])
    if t == F32:
        return float(np.array([b], np.uint32).view(np.float32)[0])
    if t == I1:
        return bool(b)
    return _s32(b)


# IR op -> the function the ISS executes for it (sim/semantics.py, sim/numerics.py), each on
# register patterns; the special-function ops are not folded (PTX's .approx ops differ).
_INT_FOLD = {**INT_OPS, **{n: MUL_OPS[n] for n in ("mul", "mulhi", "mulhu")}}
_FLOAT_FOLD = {"fadd": nx.fadd, "fsub": nx.fsub, "fmul": nx.fmul, "ffma": nx.ffma,
               "fmin": nx.fmin, "fmax": nx.fmax, "fneg": nx.fneg, "fabs": nx.fabs}
FOLDABLE_OPS = frozenset(ir.INT_BINARY) | frozenset(_FLOAT_FOLD) | frozenset(ir.CASTS) | {
    "icmp", "fcmp", "select", "not", "sext", "zext", "trunc"}
"""The ops :func:`constant_fold` evaluates; a property test checks each against the ISS."""


def _fold_int(name: str, a: int, b: int) -> int:
    """The i32 result of the integer op ``name`` on two constants (as the ISS computes it)."""
    with np.errstate(all="ignore"):
        return _from_reg(_INT_FOLD[name](_reg(a), _reg(b)), I32)


def _fold(op: Op) -> object | None:
    """The constant an op evaluates to when its operands are constant, else None: computed
    by the functions the ISS runs for the same instruction, on the same bit patterns."""
    cs = [const_value(v) for v in op.operands]
    if op.name not in ir.PURE_OPS or not op.operands or any(c is None for c in cs):
        return None
    n = op.name
    t = op.results[0].type
    if n in ("and", "or", "xor") and t == I1:
        return {"and": cs[0] and cs[1], "or": cs[0] or cs[1], "xor": cs[0] != cs[1]}[n]
    if n == "not":
        return not cs[0]
    if n == "select":
        return cs[1] if cs[0] else cs[2]
    if t == I64 or op.operands[0].type == I64:
        return _fold_i64(op, cs)
    regs = [_reg(c) for c in cs]
    with np.errstate(all="ignore"):
        if n in _INT_FOLD and t == I32:
            return _from_reg(_INT_FOLD[n](*regs), I32)
        if n == "icmp":
            return _from_reg(ICMP_OPS[op.attrs["cond"]](*regs), I1)
        if n == "fcmp":
            return _from_reg(nx.fcmp(op.attrs["cond"], *regs), I1)
        if n in _FLOAT_FOLD:
            return _from_reg(_FLOAT_FOLD[n](*regs), F32)
        if n in ir.CASTS:
            return _from_reg(nx.cvt(n, regs[0]), t)
    return None


def _fold_i64(op: Op, cs: list) -> object | None:
    """An op on 64-bit constants, on exact Python ints wrapped to 64 bits (sim/numerics.py:
    the same functions define the reference of the int64 tests)."""
    n = op.name
    if n in nx.INT64_OPS:
        return nx.int64_op(n, cs[0], cs[1])
    if n == "icmp":
        return nx.int64_cmp(op.attrs["cond"], cs[0], cs[1])
    if n == "trunc":
        return _s32(cs[0])
    if n in ("sext", "zext"):
        return _s32(cs[0]) if n == "sext" else int(cs[0]) & MASK32
    if n in ("i2f", "u2f"):
        return _from_reg(np.array([nx.cvt64(n, cs[0])], np.uint32), F32)
    if n in ("f2i", "f2u"):
        return nx.cvt64(n, int(_reg(cs[0])[0]))
    return None


def constant_fold(fn: Function) -> Function:
    """Fold ops with constant operands and simple identities.

    Guarantees: a folded constant is what the ISS computes for the op on the same operands,
    bit for bit: folding calls the ISS's own functions (sim/semantics.py for integers,
    sim/numerics.py for float32 with RNE, flush-to-zero and the canonical NaN 0x7fffffff);
    special-function ops are never folded (PTX's approximations differ from this ISA's). Identities
    removed: x+0, x-0, x*1, x*0 (integers), x<<0, x>>0, x|0, x^0, x&-1, select on a constant
    condition, gep by 0, and i1 and/or with a constant.
    """
    mapping: dict[int, Value] = {}

    def visit(block: Block) -> None:
        new_ops = []
        for op in block.ops:
            op.operands = [mapping.get(v.id, v) for v in op.operands]
            for r in op.regions:
                visit(r)
            rep = _simplify(op)
            if rep is not None:
                if isinstance(rep, Value):
                    mapping[op.result.id] = rep
                    continue
                c = Op("const", [], [op.result.type], {"value": rep})
                c.parent = block
                c.results = [op.result]
                op.result.owner = c
                new_ops.append(c)
                continue
            new_ops.append(op)
        block.ops = new_ops

    visit(fn.body)
    _replace_uses(fn, mapping)
    return fn


def _simplify(op: Op):
    if len(op.results) != 1 or not op.pure or op.name == "const":
        return None
    f = _fold(op)
    if f is not None:
        t = op.result.type
        if t == F32:
            return float(f)
        if t == I1:
            return bool(f)
        return int(f)
    n = op.name
    cs = [const_value(v) for v in op.operands]
    a = op.operands[0] if op.operands else None
    if n in ("add", "or", "xor", "shl", "shr", "sra") and op.result.type in (I32, I64):
        if cs[1] == 0:
            return a
        if n in ("add", "or", "xor") and cs[0] == 0:
            return op.operands[1]
    if n == "sub" and cs[1] == 0:
        return a
    if n == "mul":
        if cs[1] == 1:
            return a
        if cs[0] == 1:
            return op.operands[1]
        if 0 in (cs[0], cs[1]):
            return 0
    if n == "and" and op.result.type == I32:
        if cs[1] == -1:
            return a
        if 0 in (cs[0], cs[1]):
            return 0
    if n in ("and", "or") and op.result.type == I1:
        for x, y in ((0, 1), (1, 0)):
            c = cs[x]
            if c is None:
                continue
            if (n == "and" and c) or (n == "or" and not c):
                return op.operands[y]
            return bool(c)
    if n == "select":
        if cs[0] is not None:
            return op.operands[1] if cs[0] else op.operands[2]
        if op.operands[1] is op.operands[2]:
            return op.operands[1]
    if n == "gep" and cs[1] == 0:
        return a
    return None


def cse(fn: Function) -> Function:
    """Common-subexpression elimination over pure ops.

    Guarantees: two pure ops with the same name, operands and attributes where the first
    dominates the second (earlier in the same block or in an enclosing block) become one;
    loads, stores, atomics, shuffles, votes and barriers are never merged.
    """
    mapping: dict[int, Value] = {}

    def key(op: Op):
        attrs = tuple(sorted((k, v) for k, v in op.attrs.items() if k != "loc"))
        if op.name == "const":
            v = op.attrs["value"]
            attrs = (("value", struct.pack("<f", v) if isinstance(v, float) else v),)
        return (op.name, tuple(v.id for v in op.operands), attrs,
                tuple(str(r.type) for r in op.results))

    def visit(block: Block, table: dict) -> None:
        local = dict(table)
        new_ops = []
        for op in block.ops:
            op.operands = [mapping.get(v.id, v) for v in op.operands]
            for r in op.regions:
                visit(r, local)
            if op.pure and len(op.results) == 1:
                k = key(op)
                if k in local:
                    mapping[op.result.id] = local[k]
                    continue
                local[k] = op.result
            new_ops.append(op)
        block.ops = new_ops

    visit(fn.body, {})
    _replace_uses(fn, mapping)
    return fn


def dce(fn: Function) -> Function:
    """Dead-code elimination.

    Guarantees: pure ops whose results are unused are removed (repeatedly, so whole dead
    chains go); ``if`` ops with no side effects inside and unused results are removed;
    unused ``for``/``if`` results are kept when the op must stay (their yields stay too).
    """
    def sweep(block: Block, used: set[int]) -> bool:
        changed = False
        keep = []
        for op in block.ops:
            for r in op.regions:
                changed |= sweep(r, used)
            dead = op.results and all(r.id not in used for r in op.results)
            if dead and op.pure:
                changed = True
                continue
            if op.name == "if" and all(r.id not in used for r in op.results) and all(
                    o.pure or o.name == "yield" for r in op.regions for o in r.walk()):
                changed = True
                continue
            keep.append(op)
        block.ops = keep
        return changed

    while True:
        used: set[int] = set()
        for op in fn.walk():
            used.update(v.id for v in op.operands)
        if not sweep(fn.body, used):
            return fn


def licm(fn: Function) -> Function:
    """Loop-invariant code motion.

    Guarantees: a pure op inside a ``for`` body (or a ``while``'s condition or body) whose
    operands are all defined outside the loop moves to just before the loop (outermost
    first, repeatedly). Pure ops never fault, so this is safe even for loops that run zero
    times. Loads stay where they are.
    """

    def visit(block: Block) -> None:
        i = 0
        while i < len(block.ops):
            op = block.ops[i]
            for r in op.regions:
                visit(r)
            if op.name in ("for", "while"):
                hoisted = _hoist(op)
                for h in hoisted:
                    h.parent = block
                block.ops[i:i] = hoisted
                i += len(hoisted)
            i += 1

    def _hoist(loop: Op) -> list[Op]:
        inside: set[int] = set()
        for region in loop.regions:  # a for's body; a while's condition and body
            for o in region.walk():
                inside.update(r.id for r in o.results)
            inside.update(a.id for a in region.args)
        out: list[Op] = []
        # a chunk loop (chunking.py) keeps its constants: unrolled they were immediates or
        # short-lived, hoisted they would all stay live across the loop
        chunk_loop = "chunks" in loop.attrs
        for body in loop.regions:
            keep = []
            for o in body.ops:
                if o.pure and not o.regions and all(v.id not in inside for v in o.operands) \
                        and not (chunk_loop and o.name == "const"):
                    out.append(o)
                    for r in o.results:
                        inside.discard(r.id)
                else:
                    keep.append(o)
            body.ops = keep
        return out

    visit(fn.body)
    return fn


def strength_reduce(fn: Function) -> Function:
    """Strength reduction of address and index arithmetic.

    Guarantees: ``mul x, 2**k`` becomes ``shl x, k``; ``gep(gep(p, a), b)`` with constant
    ``a`` and ``b`` becomes one ``gep(p, a + b)``; ``gep(p, add(x, c))`` with a constant
    ``c`` becomes ``gep(gep(p, x), c)`` so the constant lands in the memory instruction's
    offset; ``add(x, add(y, c))`` becomes ``add(add(x, y), c)`` for the same reason; a
    ``gep`` by a variable index becomes ``ptradd(p, shl(i, 2))`` (``shl(i, 1)`` for 16-bit
    elements) so equal scaled indices
    are computed once. Values are unchanged (all integer arithmetic wraps at 32 bits either way).
    """
    pending: dict[int, tuple[Op, list[Op]]] = {}  # anchor -> ops to insert before it
    for op in list(fn.walk()):
        if op.name == "mul":
            for i in (0, 1):
                c = const_value(op.operands[i])
                if c is not None and c > 0 and c & (c - 1) == 0:
                    x = op.operands[1 - i]
                    k = _new_const(op, c.bit_length() - 1, _int_type(x), pending)
                    op.name = "shl"
                    op.operands = [x, k]
                    break
    _flush(pending)
    for op in list(fn.walk()):
        # add(x, add(y, c)) -> add(add(x, y), c): constants move outwards, towards offsets
        if op.name != "add":
            continue
        for i in (0, 1):
            inner = op.operands[i].owner
            if isinstance(inner, Op) and inner.name == "add" and inner.parent is op.parent:
                ci = [const_value(v) for v in inner.operands]
                if ci[1] is not None and ci[0] is None and const_value(op.operands[1 - i]) is None:
                    s = Op("add", [op.operands[1 - i], inner.operands[0]],
                           [_int_type(op.result)])
                    _insert_before(op, s, pending)
                    op.operands = [s.result, inner.operands[1]]
                    break
    _flush(pending)
    for op in list(fn.walk()):
        if op.name != "gep":
            continue
        p, idx = op.operands
        io = idx.owner
        if isinstance(io, Op) and io.name == "add":
            for i in (0, 1):
                c = const_value(io.operands[i])
                if c is not None:
                    inner = Op("gep", [p, io.operands[1 - i]], [p.type])
                    _insert_before(op, inner, pending)
                    op.operands = [inner.result, io.operands[i]]
                    break
        p, idx = op.operands
        po = p.owner
        c2 = const_value(idx)
        if c2 is not None and isinstance(po, Op) and po.name == "gep":
            c1 = const_value(po.operands[1])
            if c1 is not None and idx.type == po.operands[1].type:
                wide = idx.type == I64
                op.operands = [po.operands[0], _new_const(
                    op, nx.wrap_i64(c1 + c2) if wide else _s32(c1 + c2), idx.type, pending)]
    _flush(pending)
    for op in list(fn.walk()):
        # gep(p, i) -> ptradd(p, shl(i, log2 size)): the scaled index becomes a value CSE
        # can share
        if op.name == "gep" and const_value(op.operands[1]) is None:
            size = op.operands[0].type.elem_size
            it = _int_type(op.operands[1])
            sh = Op("shl", [op.operands[1],
                            _new_const(op, size.bit_length() - 1, it, pending)], [it])
            _insert_before(op, sh, pending)
            op.name = "ptradd"
            op.operands = [op.operands[0], sh.result]
    _flush(pending)
    return fn


def _insert_before(anchor: Op, new: Op,
                   pending: dict[int, tuple[Op, list[Op]]] | None = None) -> None:
    """Put ``new`` just before ``anchor`` (after earlier insertions there); with
    ``pending``, only note it for :func:`_flush` (one rebuild of each block instead of a
    search per insertion)."""
    block = anchor.parent
    new.parent = block
    if pending is not None:
        pending.setdefault(id(anchor), (anchor, []))[1].append(new)
        return
    i = block.ops.index(anchor)
    block.ops.insert(i, new)


def _flush(pending: dict[int, tuple[Op, list[Op]]]) -> None:
    """Carry out the insertions noted by :func:`_insert_before`."""
    blocks = {id(anchor.parent): anchor.parent for anchor, _ in pending.values()}
    for block in blocks.values():
        ops: list[Op] = []
        for op in block.ops:
            hit = pending.get(id(op))
            if hit is not None:
                ops.extend(hit[1])
            ops.append(op)
        block.ops = ops
    pending.clear()


def _int_type(v: Value):
    """The IR integer type of ``v`` without the unsigned note: I64 or I32."""
    return I64 if v.type == I64 else I32


def _new_const(anchor: Op, value: int, type=I32,
               pending: dict[int, tuple[Op, list[Op]]] | None = None) -> Value:
    c = Op("const", [], [type], {"value": value})
    _insert_before(anchor, c, pending)
    return c.result


def _defined_in(block: Block) -> set[int]:
    ids = {a.id for a in block.args}
    for op in block.walk():
        ids.update(r.id for r in op.results)
    return ids


def _affine(v: Value, iv: Value, inside: set[int], depth: int = 0):
    """``v`` as ``(a, b)`` meaning ``a * iv + b`` (symbolic terms), or None."""
    if v is iv:
        return ("int", 1), ("int", 0)
    if const_value(v) is not None:
        return ("int", 0), ("int", const_value(v))
    if v.id not in inside:
        return ("int", 0), ("val", v)
    op = v.owner
    if depth > 8 or not isinstance(op, Op) or op.name not in ("add", "sub", "mul", "shl"):
        return None
    x, y = op.operands
    fx = _affine(x, iv, inside, depth + 1)
    fy = _affine(y, iv, inside, depth + 1)
    if fx is None or fy is None:
        return None
    if op.name in ("add", "sub"):
        return ((op.name, fx[0], fy[0]), (op.name, fx[1], fy[1]))
    if op.name == "mul":
        if fy[0] == ("int", 0):  # x * invariant
            return (("mul", fx[0], fy[1]), ("mul", fx[1], fy[1]))
        if fx[0] == ("int", 0):
            return (("mul", fy[0], fx[1]), ("mul", fy[1], fx[1]))
        return None
    k = const_value(y)
    if k is None:
        return None
    return (("shl", fx[0], k), ("shl", fx[1], k))


def _emit_term(t, anchor: Op) -> Value:
    """Materialise a symbolic term before ``anchor`` (folding what is constant)."""
    kind = t[0]
    if kind == "int":
        return _new_const(anchor, _s32(t[1]))
    if kind == "val":
        return t[1]
    if kind == "shl":
        x = _fold_term(t[1])
        if x[0] == "int":
            return _new_const(anchor, _s32(x[1] << t[2]))
        xv = _emit_term(x, anchor)
        op = Op("shl", [xv, _new_const(anchor, t[2])], [I32])
        _insert_before(anchor, op)
        return op.result
    x, y = _fold_term(t[1]), _fold_term(t[2])
    if x[0] == "int" and y[0] == "int":
        return _new_const(anchor, _fold_int(kind, x[1], y[1]))
    op = Op(kind, [_emit_term(x, anchor), _emit_term(y, anchor)], [I32])
    _insert_before(anchor, op)
    return op.result


def _fold_term(t):
    """Simplify a symbolic term: constant arithmetic and the identities 0 and 1."""
    kind = t[0]
    if kind in ("int", "val"):
        return t
    if kind == "shl":
        x = _fold_term(t[1])
        if x[0] == "int":
            return ("int", _s32(x[1] << t[2]))
        return ("shl", x, t[2])
    x, y = _fold_term(t[1]), _fold_term(t[2])
    if x[0] == "int" and y[0] == "int":
        return ("int", _fold_int(kind, x[1], y[1]))
    if kind == "add":
        if x == ("int", 0):
            return y
        if y == ("int", 0):
            return x
    if kind == "sub" and y == ("int", 0):
        return x
    if kind == "mul":
        if ("int", 0) in (x, y):
            return ("int", 0)
        if x == ("int", 1):
            return y
        if y == ("int", 1):
            return x
    return (kind, x, y)


def loop_strength_reduce(fn: Function) -> Function:
    """Induction-variable strength reduction of addresses in loops.

    Guarantees: a ``ptradd(p, off)`` at the top level of a ``for`` body, with ``p`` defined
    outside the loop and ``off`` an affine function ``a * iv + b`` of the induction variable
    (through add, sub, multiplication by loop invariants and constant shifts), becomes a
    pointer carried by the loop: it starts at ``p + a * lb + b`` and advances by
    ``a * step`` bytes per iteration. Addresses are unchanged (the arithmetic wraps at 32
    bits either way); the multiply and shift per iteration disappear.
    """
    loops = [op for op in fn.walk() if op.name == "for"]
    for loop in reversed(loops):  # inner loops first
        body = loop.regions[0]
        iv = body.args[0]
        inside = _defined_in(body)
        lb, step = loop.operands[0], loop.operands[2]
        for op in list(body.ops):
            if op.name != "ptradd" or op.operands[0].id in inside or \
                    op.operands[1].type != I32:
                continue
            f = _affine(op.operands[1], iv, inside)
            if f is None:
                continue
            a, b = _fold_term(f[0]), _fold_term(f[1])
            if a == ("int", 0) or any(t[0] == "val" and t[1].id in inside
                                      for t in _leaves(a) + _leaves(b)):
                continue
            init_off = _emit_term(_fold_term(("add", ("mul", a, ("val", lb)), b)), loop)
            init = Op("ptradd", [op.operands[0], init_off], [op.result.type])
            _insert_before(loop, init)
            incr = _emit_term(_fold_term(("mul", a, ("val", step))), loop)
            arg = Value(op.result.type, body)
            body.args.append(arg)
            loop.operands.append(init.result)
            res = Value(op.result.type, loop)
            loop.results.append(res)
            old = op.result
            for o in body.walk():
                o.operands = [arg if v is old else v for v in o.operands]
            y = body.terminator
            nxt = Op("ptradd", [arg, incr], [op.result.type])
            _insert_before(y, nxt)
            y.operands.append(nxt.result)
    return fn


def _leaves(t) -> list:
    if t[0] in ("int", "val"):
        return [t]
    if t[0] == "shl":
        return _leaves(t[1])
    return _leaves(t[1]) + _leaves(t[2])


from .fma import contract_fma  # noqa: E402 - the contraction pass has a module of its own
from .narrow import drop_unread_extensions  # noqa: E402 - with the narrow types
from .reductions import drop_repeated_barriers  # noqa: E402

# contract_fma runs after cse (a product merged with a twin has two uses and stays) and
# before licm (a fused op in a loop is no longer invariant, its multiply stays inside)
PIPELINE = (constant_fold, strength_reduce, constant_fold, cse, contract_fma, licm,
            loop_strength_reduce, constant_fold, cse, drop_unread_extensions, dce,
            drop_repeated_barriers)


def optimize(fn: Function, verify: bool = False, fp_fusion: bool = True) -> Function:
    """Run the standard pipeline (verifying between passes when ``verify``); without
    ``fp_fusion`` multiplies and adds are not contracted (Triton's ``enable_fp_fusion``)."""
    for p in PIPELINE:
        if p is contract_fma and not fp_fusion:
            continue
        fn = p(fn)
        if verify:
            ir.verify(fn)
    return fn
