"""Floating-point contraction: a multiply feeding an add or subtract becomes one ``ffma``.

``ffma`` rounds once (sim/numerics.py), so a contracted expression is at least as accurate
as the multiply and add it replaces and costs one instruction instead of two. Both code
generators read the contracted IR (``ffma`` on this ISA, ``fma.rn.ftz.f32`` in PTX), so the
ISS, the RTL and an NVIDIA GPU still give the same bits. The pass is on by default, as
Triton's ``enable_fp_fusion`` is; ``enable_fp_fusion=False`` (a launch option, a
``compile_function`` argument, ``simtgpu compile --no-fp-fusion``) keeps every product
rounded on its own.
"""

from __future__ import annotations

from .ir import F32, Block, Function, Op, Value, const_value


def _use_counts(fn: Function) -> dict[int, int]:
    uses: dict[int, int] = {}
    for op in fn.walk():
        for v in op.operands:
            uses[v.id] = uses.get(v.id, 0) + 1
    return uses


def _product(v: Value, block: Block, uses: dict[int, int]) -> Op | None:
    """The ``fmul`` defining ``v`` when it sits in ``block`` and ``v`` has no other use."""
    op = v.owner
    if isinstance(op, Op) and op.name == "fmul" and op.parent is block and uses.get(v.id) == 1:
        return op
    return None


def contract_fma(fn: Function) -> Function:
    """Contract ``fadd``/``fsub`` of a single-use ``fmul`` into ``ffma``.

    Guarantees: for a multiply ``m = x * y`` whose only use is an add or subtract in the same
    block (never one in a loop body or branch below it, which would repeat the multiply):
    ``m + c`` and ``c + m`` become ``ffma(x, y, c)``, ``m - c`` becomes
    ``ffma(x, y, -c)`` and ``c - m`` becomes ``ffma(-x, y, c)`` (``ffma(-y, x, c)``
    when only ``y`` is a constant): the exact ``x * y ± c``
    rounded once. When both operands of an add are such products, the left one is fused.
    Multiplies with other uses stay (fusing would compute the product twice). The negation
    of a constant folds away; on the ISA a negated variable costs the ``fneg`` the
    ``fmul`` saved, on a GPU the negation is free (a modifier of FFMA).
    """
    uses = _use_counts(fn)
    for block in _blocks(fn.body):
        new_ops: list[Op] = []
        dead: set[int] = set()
        for op in block.ops:
            if op.name in ("fadd", "fsub"):
                _contract(op, block, uses, new_ops, dead)
            new_ops.append(op)
        block.ops = [o for o in new_ops if id(o) not in dead]
    return fn


def _contract(op: Op, block: Block, uses: dict[int, int], new_ops: list[Op],
              dead: set[int]) -> None:
    for i in (0, 1):
        m = _product(op.operands[i], block, uses)
        if m is None:
            continue
        x, y = m.operands
        c = op.operands[1 - i]
        if op.name == "fsub":
            if i == 1 and const_value(y) is not None and const_value(x) is None:
                x, y = y, x  # negate the constant factor: the negation folds away
            neg = Op("fneg", [c if i == 0 else x], [F32], loc=op.loc)
            neg.parent = block
            new_ops.append(neg)  # use counts stay right: x, y and c each move to one new use
            if i == 0:
                c = neg.result
            else:
                x = neg.result
        op.name = "ffma"
        op.operands = [x, y, c]
        dead.add(id(m))
        return


def _blocks(b: Block):
    yield b
    for op in b.ops:
        for r in op.regions:
            yield from _blocks(r)
