"""Software pipelining of loops that stage global tiles in shared memory (``num_stages``).

A ``for`` loop whose body loads global tiles and stores them into shared memory (what
``tl.dot`` lowers to: load, barrier, store to shared, barrier, compute) waits for every
global load of an iteration before it can compute. With ``num_stages = S`` this pass issues
the global loads of iteration ``i + S - 1`` while iteration ``i`` computes: the loaded values
travel as loop-carried registers through ``S - 1`` buffers (stage 0 is consumed, the rest
shift down every iteration), and the address computation of the loads runs ``S - 1``
iterations ahead on its own copy of the loop-carried pointers.

* Prologue: the loads of the first ``S - 1`` iterations, each masked by ``lo + j*step < hi``
  (so trip counts 0 to ``S - 2``, static or not, touch no memory they should not).
* Steady state: at the top of the body, the loads of iteration ``i + S - 1``, masked by
  ``i + (S-1)*step < hi``; there is no separate epilogue: the last ``S - 1`` iterations issue
  masked-off loads, whose values are never consumed (as Triton's pipeliner predicates).

Every consumed value is the one the unpipelined loop loads from the same address, so results
are bit-identical with ``num_stages=1``. A loop qualifies when (conservatively):

* its step is positive (``step_sign`` 1), and nothing in it stores or does atomics to global
  memory (a prefetched load must not pass a store that could alias it);
* a top-level global load's value is stored to shared memory in the same body (the staged
  tile), and the load's operands follow from the induction variable, loop-invariant values
  and loop-carried values through pure ops only, whose next values also follow that way
  (pointer increments: ``a_ptrs += BLOCK_K * stride``).

On this ISA the loads go ahead into registers, which hides a DRAM latency of about one
loop body per stage. On PTX, where it can (:func:`_staged_stores`), the loop copies its
staged tiles straight into ``S`` shared-memory slots instead (``cp_async``, Triton's
``cp.async`` with commit and wait groups: :func:`_async_body`), else it stages them in
registers as on the ISA (docs/compiler.md). A loop's ``tl.range(..., num_stages=k)``
(attribute ``stages``) sets its own ``S``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from . import ir
from .ir import I32, Block, Function, Op, Value, const_value

DEFAULT_STAGES = {"ptx": 3, "isa": 1}
"""``num_stages`` when a launch does not say: Triton's CUDA default (3) on PTX; off on this
ISA, whose 32 registers hold a stage ahead only for small per-thread tiles (and a spill
costs more than the latency it hides: docs/performance.md), so it is asked for per launch."""


def pipeline_loops(fn: Function, num_stages: int, async_copy: bool = False,
                   most: int | None = None) -> int:
    """Pipeline every qualifying ``for`` loop of ``fn`` with ``num_stages`` stages, or the
    stages its ``tl.range(..., num_stages=k)`` asks for (attribute ``stages``), at most
    ``most``; the largest stage count used (1: no loop changed). ``async_copy`` (PTX):
    staged tiles go to shared memory by ``cp_async`` where they can (:func:`_staged_stores`),
    else through registers."""
    loops = [op for op in fn.walk() if op.name == "for"]
    used = 1
    for op in reversed(loops):
        k = op.attrs.get("stages", num_stages)
        k = k if most is None else min(k, most)
        if k >= 2 and _pipeline(fn, op, k - 1, async_copy):
            used = max(used, k)
    for op in [o for o in fn.walk() if o.name == "for" and o.attrs.get("num_stages")]:
        _drop_dead_carried(fn, op)
    return used


def _drop_dead_carried(fn: Function, loop: Op) -> None:
    """Remove the carried values of ``loop`` that nothing reads but their own update (the
    pointers of the loads that moved ahead): each cost a register and an add per trip."""
    from .passes import dce

    dce(fn)
    body = loop.regions[0]
    yld = body.terminator
    uses = _uses(body)
    used_after = {v.id for o in fn.walk() if not _inside(o, loop) for v in o.operands}
    drop = []
    for k, arg in enumerate(body.args[1:]):
        y = yld.operands[k]
        users = uses.get(arg.id, [])
        upd = y.owner if isinstance(y.owner, Op) else None
        if loop.results[k].id in used_after or not all(u is upd for u in users):
            continue
        if upd is not None and (not upd.pure or uses.get(y.id, []) != [yld]):
            continue
        drop.append(k)
    if not drop:
        return
    keep = [k for k in range(len(body.args) - 1) if k not in drop]
    body.args = [body.args[0]] + [body.args[1 + k] for k in keep]
    yld.operands = [yld.operands[k] for k in keep]
    loop.operands = loop.operands[:3] + [loop.operands[3 + k] for k in keep]
    loop.results = [loop.results[k] for k in keep]
    dce(fn)


def _uses(block: Block) -> dict[int, list[Op]]:
    out: dict[int, list[Op]] = {}
    for op in block.walk():
        for v in op.operands:
            out.setdefault(v.id, []).append(op)
    return out


def _slice(roots: list[Value], defs: dict[int, Op], carried: dict[int, int],
           ops: set[int], need: set[int]) -> bool:
    """Add to ``ops`` the body ops that compute ``roots`` and to ``need`` the carried
    argument indices they read; False when one of them is not a pure, region-free op."""
    stack = list(roots)
    while stack:
        v = stack.pop()
        if v.id in carried:
            need.add(carried[v.id])
            continue
        op = defs.get(v.id)
        if op is None or id(op) in ops:
            continue  # defined outside the body (or the induction variable), or seen
        if not op.pure or op.regions:
            return False
        ops.add(id(op))
        stack.extend(op.operands)
    return True


def _pipeline(fn: Function, loop: Op, ahead: int, async_copy: bool) -> bool:
    if loop.attrs.get("step_sign", 1) <= 0 or loop.parent is None:
        return False
    body = loop.regions[0]
    if any(o.name in ("atomic", "exit") or (o.name == "store" and o.operands[0].type.space
                                            == "global") for o in body.walk()):
        return False
    uses = _uses(body)
    defs = {r.id: o for o in body.ops for r in o.results}
    carried = {a.id: k for k, a in enumerate(body.args[1:])}
    yld = body.terminator
    loads = [o for o in body.ops if o.name == "load" and o.operands[0].type.space == "global"
             and any(u.name == "store" and u.operands[0].type.space == "shared"
                     and u.operands[1] is o.result for u in uses.get(o.result.id, []))]
    slice_ops: set[int] = set()
    need: set[int] = set()
    loads = [ld for ld in loads if _slice(ld.operands, defs, carried, set(slice_ops), set())]
    if not loads or not all(_slice(ld.operands, defs, carried, slice_ops, need)
                            for ld in loads):
        return False
    done: set[int] = set()
    while need - done:  # the carried values the slice reads must advance within the slice
        k = min(need - done)
        done.add(k)
        if not _slice([yld.operands[k]], defs, carried, slice_ops, need):
            return False
    chain = sorted(need)
    order = [o for o in body.ops if id(o) in slice_ops]
    lo, hi, step = loop.operands[:3]
    iv = body.args[0]

    def emit(b: ir.Builder, at: Value, state: list[Value]
             ) -> tuple[list[tuple[Value, Value, list[Value]]], list[Value]]:
        """The address computation of the loads for induction value ``at`` with the chain
        values ``state``: per load (in range: ``at < hi``, its mask or None, its operands),
        and the chain advanced one iteration."""
        m = {iv.id: at}
        m.update({body.args[1 + k].id: s for k, s in zip(chain, state, strict=True)})
        for o in order:
            c = b.op(o.name, [m.get(v.id, v) for v in o.operands], dict(o.attrs),
                     [r.type for r in o.results])
            m.update({r.id: n for r, n in zip(o.results, c.results, strict=True)})
        inr = b("icmp", at, hi, cond="lt")
        got = []
        for ld in loads:
            ops = [m.get(v.id, v) for v in ld.operands]
            got.append((inr, ops[1] if len(ops) > 1 else None, ops))
        nxt = []
        for k in chain:
            y = yld.operands[k]
            nxt.append(m.get(y.id, y))
        return got, nxt

    def load(b: ir.Builder, got) -> list[Value]:
        """The loads (masked off out of range) of what ``emit`` returned."""
        out = []
        for ld, (inr, mask, ops) in zip(loads, got, strict=True):
            ops = [ops[0], inr if mask is None else b("and", mask, inr)] + ops[2:]
            out.append(b.op("load", ops, dict(ld.attrs), [ld.result.type]).result)
        return out

    copies = _staged_stores(fn, loop, loads, ahead + 1) if async_copy else None
    # prologue, just before the loop
    pro = Block()
    b = ir.Builder(pro)
    b.loc = loop.loc
    state = [loop.operands[3 + k] for k in chain]
    bufs: list[list[Value]] = []
    if copies is not None and _shared_before(fn, loop):
        b.op("barrier", [])  # the copies must not overwrite what earlier code still reads
    for j in range(ahead):
        at = lo if j == 0 else b("add", lo, b("mul", step, b.const(j, I32)))
        got, state = emit(b, at, state)
        if copies is None:
            bufs.append(load(b, got))
        else:
            _copy(b, copies, got, b.const(j * copies.slot, I32))
            b.op("cp_commit", [])
    nbuf = 0 if copies is not None else ahead  # register buffers (none: shared slots)
    # the new loop: carried values, the chain ahead (unless every chain value advances by a
    # loop-invariant amount: then it is derived from the current one, saving registers),
    # then the buffers stage by stage (or, copying, the byte offset of this trip's slot)
    incs = [_invariant_step(yld.operands[k], body.args[1 + k], defs, body) for k in chain]
    derive = all(inc is not None for inc in incs)
    if derive:
        state = []
    n_old = len(body.args) - 1
    extra_types = ([loop.operands[3 + k].type for k in chain if not derive]
                   + [ld.result.type for _ in range(nbuf) for ld in loads]
                   + ([I32] if copies is not None else []))
    new_args = [Value(t, body) for t in extra_types]
    body.args.extend(new_args)
    n_chain = 0 if derive else len(chain)
    ahead_args = new_args[:n_chain]
    buf_args = [new_args[n_chain + s * len(loads):n_chain + (s + 1) * len(loads)]
                for s in range(nbuf)]
    top = Block()
    b = ir.Builder(top)
    b.loc = loop.loc
    at = b("add", iv, b("mul", step, b.const(ahead, I32)))
    if derive:
        ahead_args = [b(op.name, body.args[1 + k], b("mul", op.operands[1],
                                                     b.const(ahead, op.operands[1].type)))
                      for k, op in zip(chain, incs, strict=True)]
    got, nxt = emit(b, at, ahead_args)
    if derive:
        nxt = []
    if copies is None:
        got = load(b, got)
        for o in top.ops:
            o.parent = body
        _replace_in(body, {ld.result.id: a for ld, a in zip(loads, buf_args[0], strict=True)})
        body.ops = [o for o in body.ops if o not in loads]
        # the ahead loads go first: the barriers, the shared stores and the compute overlap
        # them (on the RTL this beat placing them after the stores: docs/compiler.md)
        body.ops[0:0] = top.ops
        tail = [v for s in range(1, nbuf) for v in buf_args[s]] + got
    else:
        tail = [_async_body(body, copies, top, got, new_args[-1])]
    yld.operands = yld.operands[:n_old] + nxt + tail
    operands = list(loop.operands)
    if derive:
        _shift_chain(fn, loop, ahead, chain, incs, ahead_args, pro, operands)
    operands += state + [v for s in bufs for v in s]
    if copies is not None:
        operands.append(ir.Builder(pro).const(0, I32))
    new = Op("for", operands, [r.type for r in loop.results] + extra_types, dict(loop.attrs),
             [body], loc=loop.loc)
    new.attrs["num_stages"] = ahead + 1
    if copies is not None:
        new.attrs["async_copy"] = True
    parent = loop.parent
    i = parent.ops.index(loop)
    after = [Op("cp_wait", [], [], {"n": 0}, loc=loop.loc)] if copies is not None else []
    for o in pro.ops + [new] + after:
        o.parent = parent
    parent.ops[i:i + 1] = pro.ops + [new] + after
    _replace_in(fn.body, {r.id: n for r, n in zip(loop.results, new.results, strict=False)})
    return True


@dataclass
class _Copies:
    """The staged tiles of a loop that copies them with ``cp_async``: ``stores[k]`` the
    shared-memory store of load ``k``; ``slot`` the bytes of one stage's copy of shared
    memory; ``stages`` the number of slots."""

    stores: list[Op]
    slot: int
    stages: int


def _staged_stores(fn: Function, loop: Op, loads: list[Op], stages: int) -> _Copies | None:
    """The copies of a PTX loop whose staged loads can go straight to shared memory
    (``cp.async``), else None (then the loads are staged in registers). Each such load must
    be a 32-bit one whose only use is one unmasked store to shared memory at the body's top
    level and followed by a barrier, zero where masked off (``cp.async`` zero-fills); the
    body may touch shared memory only at its top level and by loads and stores (every
    access moves to its trip's slot); the kernel must not report asserts or prints (they
    keep flags in shared memory) nor hold user shared arrays (``shared_array``: their data
    may cross trips or the loop's ends, where a per-trip slot would lose it; the compiler's
    own scratch lives within a trip); and ``stages`` copies of the shared memory must fit
    the 48 KiB of a static array."""
    body = loop.regions[0]
    if fn.meta.get("asserts") or fn.meta.get("prints") or fn.meta.get("user_shared_bytes"):
        return None
    for o in body.walk():
        if o.name in ("load", "store", "atomic") and o.operands[0].type.space == "shared" \
                and (o.parent is not body or o.name == "atomic"):
            return None
    uses = _uses(body)
    stores = []
    for ld in loads:
        us = uses.get(ld.result.id, [])
        other = ld.operands[2] if len(ld.operands) > 2 else None
        if (len(us) != 1 or us[0].parent is not body or len(us[0].operands) != 2
                or ld.result.type.is_half or ld.operands[0].type.elem_size != 4
                or other is not None and _bits(other) != 0):
            return None
        stores.append(us[0])
    after = body.ops[max(body.ops.index(st) for st in stores):]
    if not any(o.name == "barrier" for o in after):
        return None  # (the copies go after that barrier: every thread is past its reads)
    slot = fn.meta.setdefault("slot_bytes", -(-max(fn.shared_bytes, 4) // 16) * 16)
    if stages * slot > 48 * 1024:
        return None
    fn.shared_bytes = max(fn.shared_bytes, stages * slot)
    return _Copies(stores, slot, stages)


def _bits(v: Value) -> int | None:
    """The bit pattern of a 32-bit constant (``-0.0`` is not zero), else None."""
    c = const_value(v)
    if isinstance(c, float):
        return struct.unpack("<I", struct.pack("<f", c))[0]
    return None if c is None else int(c) & 0xFFFFFFFF


def _shared_before(fn: Function, loop: Op) -> bool:
    """Whether code that runs before ``loop`` may access shared memory: an op before it
    in program order, or any, when it is nested (the previous trip of an enclosing loop
    may still be reading the slots)."""
    if loop.parent is not fn.body:
        return True
    for o in fn.walk():
        if o is loop:
            return False
        if o.name in ("load", "store", "atomic") and o.operands[0].type.space == "shared":
            return True
    return False


def _copy(b: ir.Builder, copies: _Copies, got, offset: Value) -> None:
    """One ``cp_async`` per staged load, into the slot ``offset`` bytes on."""
    memo: dict[int, Value] = {}
    for st, (inr, mask, ops) in zip(copies.stores, got, strict=True):
        dst = _rebased(b, st.operands[0], offset, None, memo)
        # out of range, a zero-size copy (no branch around it, as ptxas makes of a guard)
        b.op("cp_async", [dst, ops[0], inr if mask is None else b("and", mask, inr)])


def _async_body(body: Block, copies: _Copies, top: Block, got, slot: Value) -> Value:
    """Rewrite the loop body for copies into ``copies.stages`` shared-memory slots, trip
    ``i`` reading slot ``i % stages`` (byte offset ``slot``, carried): the first staged
    store becomes ``cp_wait [stages - 2]`` and the others go (this trip's copies have
    landed; the barrier after the stores makes the other threads' visible); every shared
    access moves to the slot; right after that barrier come the copies of trip
    ``i + stages - 1`` into the slot trip ``i - 1`` read (every thread is past it) and a
    ``cp_commit``, so they fly while the trip computes. The barrier before the stores
    guarded them against the previous trip's reads; with the copies after the other
    barrier it has nothing left to guard and goes. Returns the next slot."""
    s, size = copies.stages, copies.slot
    pre = Block()
    b = ir.Builder(pre)
    last = b.const((s - 1) * size, I32)
    nxt = b("select", b("icmp", slot, last, cond="eq"), b.const(0, I32),
            b("add", slot, b.const(size, I32)))
    dead = {id(o) for o in copies.stores}
    dead.update(id(o.operands[1].owner) for o in copies.stores)
    at = min(body.ops.index(st) for st in copies.stores)
    ops = [o for o in body.ops[:at] if id(o) not in dead]
    rest = [o for o in body.ops[at:] if id(o) not in dead and o is not body.terminator]
    if ops and ops[-1].name == "barrier" and rest and rest[0].name == "barrier":
        ops.pop()
    ops.append(Op("cp_wait", [], [], {"n": s - 2}))
    ops += rest
    memo: dict[int, Value] = {}
    out = list(pre.ops)
    for o in ops:
        if o.name in ("load", "store") and o.operands[0].type.space == "shared":
            rb = Block()
            o.operands[0] = _rebased(ir.Builder(rb), o.operands[0], slot, body, memo)
            out += rb.ops
        out.append(o)
    b = ir.Builder(top)
    write = b("select", b("icmp", slot, b.const(0, I32), cond="eq"), last,
              b("sub", slot, b.const(size, I32)))
    _copy(b, copies, got, write)
    b.op("cp_commit", [])
    bar = next(k for k, o in enumerate(out) if o.name == "cp_wait")
    bar = next(k for k in range(bar, len(out)) if out[k].name == "barrier")
    body.ops = out[:bar + 1] + top.ops + out[bar + 1:] + [body.terminator]
    for o in body.ops:
        o.parent = body
    return nxt


def _rebased(b: ir.Builder, p: Value, slot: Value, body: Block | None,
             memo: dict[int, Value]) -> Value:
    """Shared pointer ``p`` moved ``slot`` bytes on; a constant ``gep`` from outside
    ``body`` stays on top, where the PTX address folds it (one add per base pointer)."""
    if p.id in memo:
        return memo[p.id]
    o = p.owner
    if isinstance(o, Op) and o.name == "gep" and o.parent is not body \
            and const_value(o.operands[1]) is not None:
        r = b("gep", _rebased(b, o.operands[0], slot, body, memo), o.operands[1])
    else:
        r = b("ptradd", p, slot)
    memo[p.id] = r
    return r


def _shift_chain(fn: Function, loop: Op, ahead: int, chain: list[int], incs: list[Op],
                 ahead_vals: list[Value], pro: Block, operands: list[Value]) -> None:
    """A carried pointer that only feeds the moved loads and its own increment (and is not
    read after the loop) starts ``ahead`` iterations on instead: the loop then carries the
    ahead pointer itself, with no extra register or add per iteration."""
    from .passes import dce

    body = loop.regions[0]
    dce(fn)
    uses = _uses(body)
    after = {v.id for o in fn.walk() if o is not loop and not _inside(o, loop)
             for v in o.operands}
    b = ir.Builder(pro)
    b.loc = loop.loc
    for k, inc, av in zip(chain, incs, ahead_vals, strict=True):
        arg = body.args[1 + k]
        if loop.results[k].id in after or not all(
                u is inc or u is av.owner for u in uses.get(arg.id, [])):
            continue
        step = inc.operands[1]
        operands[3 + k] = b(inc.name, operands[3 + k], b("mul", step, b.const(ahead,
                                                                              step.type)))
        _replace_in(body, {av.id: arg})


def _inside(op: Op, loop: Op) -> bool:
    blk = op.parent
    while blk is not None:
        if blk.parent is loop:
            return True
        blk = blk.parent.parent if blk.parent is not None else None
    return False


def _invariant_step(y: Value, arg: Value, defs: dict[int, Op], body: Block) -> Op | None:
    """The ``add``/``ptradd`` op when ``y`` is ``arg`` plus a loop-invariant amount."""
    op = defs.get(y.id)
    if op is None or op.name not in ("add", "ptradd") or op.operands[0] is not arg:
        return None
    inc = op.operands[1]
    if inc.id in defs or any(inc is a for a in body.args):
        return None
    return op


def _replace_in(block: Block, mapping: dict[int, Value]) -> None:
    for op in block.walk():
        op.operands = [mapping.get(v.id, v) for v in op.operands]


__all__ = ["DEFAULT_STAGES", "pipeline_loops"]
