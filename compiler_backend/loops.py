"""``while`` loops, and ``break``/``continue`` in every kind of kernel loop.

The IR's loops are structured (``for`` and ``while`` ops whose bodies run to their end), so
a jump out of a loop body is lowered the way structured compilers do it: ``break`` sets a
carried flag, ``continue`` a per-iteration one, and the statements after an ``if`` that may
jump run under ``if not (broken or continued)``; the loop's test becomes
``not broken and test``. A ``for`` loop that breaks becomes a ``while`` loop over its
induction variable; one that only continues stays a ``for``. Unrolled
``tl.static_range`` loops guard each iteration with the flag. Triton itself rejects
``break`` and ``continue`` (its code generator has no rule for them); kernels that use them
therefore run here but not under Triton.
"""

from __future__ import annotations

import ast
import builtins
import itertools

from . import ir
from .errors import CompileError
from .ir import I1, I32
from .tiles import Tile

_names = itertools.count()
_MISSING = object()


class _Return(Exception):
    """Unwinds the statements after a ``return`` in the current region."""


def _assigned_names(stmts: list[ast.stmt]) -> list[str]:
    out: list[str] = []

    def add_target(t):
        if isinstance(t, ast.Name):
            out.append(t.id)
        elif isinstance(t, ast.Tuple | ast.List):
            for e in t.elts:
                add_target(e)

    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    add_target(t)
            elif isinstance(n, ast.AugAssign | ast.AnnAssign):
                add_target(n.target)
            elif isinstance(n, ast.For):
                add_target(n.target)
    return list(dict.fromkeys(out))


def has_jump(stmts: list[ast.stmt]) -> bool:
    """Whether ``stmts`` hold a ``break`` or ``continue`` of the loop they are the body of
    (jumps inside nested loops belong to those)."""
    return any(_jumps(s, (ast.Break, ast.Continue)) for s in stmts)


def _jumps(node: ast.AST, kinds) -> bool:
    if isinstance(node, kinds):
        return True
    if isinstance(node, ast.For | ast.While | ast.FunctionDef | ast.Lambda):
        return False
    return any(_jumps(c, kinds) for c in ast.iter_child_nodes(node))


class _Flags:
    """The flag names of one loop (names no Python identifier can take)."""

    def __init__(self, body: list[ast.stmt]):
        k = next(_names)
        self.brk = f"@break{k}" if any(_jumps(s, ast.Break) for s in body) else None
        self.cont = f"@continue{k}" if any(_jumps(s, ast.Continue) for s in body) else None

    def guard(self, node: ast.AST) -> ast.expr:
        """``not (broken or continued)`` at ``node``'s place."""
        names = [ast.Name(n, ast.Load()) for n in (self.brk, self.cont) if n]
        test = names[0] if len(names) == 1 else ast.BoolOp(ast.Or(), names)
        return _at(ast.UnaryOp(ast.Not(), test), node)


def _at(new: ast.AST, old: ast.AST) -> ast.AST:
    for n in ast.walk(new):
        ast.copy_location(n, old)
    return new


def _set(name: str, value: str, node: ast.AST) -> ast.stmt:
    return _at(ast.Assign([ast.Name(name, ast.Store())], ast.Name(value, ast.Load())), node)


def _first_jump(node: ast.AST) -> ast.AST:
    for n in ast.walk(node):
        if isinstance(n, ast.Break | ast.Continue):
            return n
    return node


def rewrite(stmts: list[ast.stmt], flags: _Flags, error) -> list[ast.stmt]:
    """The loop body with its jumps turned into flag assignments and the code after a
    statement that may jump guarded by the flags; ``error(node, message)`` makes the
    error for a jump in a place this cannot handle."""
    out: list[ast.stmt] = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Break):
            out.append(_set(flags.brk, "@true", s))
            return out
        if isinstance(s, ast.Continue):
            out.append(_set(flags.cont, "@true", s))
            return out
        if isinstance(s, ast.If) and has_jump([s]):
            out.append(ast.copy_location(ast.If(s.test, rewrite(s.body, flags, error),
                                                rewrite(s.orelse, flags, error)), s))
            rest = stmts[i + 1:]
            if rest:
                g = ast.If(flags.guard(rest[0]), rewrite(rest, flags, error), [])
                out.append(ast.copy_location(g, rest[0]))
            return out
        if has_jump([s]):
            raise error(_first_jump(s), "break and continue may only appear in the loop body "
                        "itself or inside 'if' statements in it")
        out.append(s)
    return out


def _carriable(v) -> bool:
    return (isinstance(v, Tile) or getattr(v, "_simtgpu_carry", False)
            or isinstance(v, int | float) and not isinstance(v, bool))


class Carried:
    """A name a loop carries: a tile, a Python number (made a tile), or a compile-time
    object holding run-time scalars (a block pointer: ``carry_parts``/``with_parts``)."""

    def __init__(self, ctx, name: str, v):
        self.name = name
        self.obj = v if getattr(v, "_simtgpu_carry", False) else None
        parts = v.carry_parts() if self.obj is not None else [
            v if isinstance(v, Tile) else ctx.to_tile(v)]
        self.tiles = [t.materialize() for t in parts]
        self.slots = [s for t in self.tiles for s in t.slots]

    def rebuild(self, ctx, values: list) -> object:
        """The value of the name inside or after the loop, from its slots' new values."""
        out, k = [], 0
        for t in self.tiles:
            out.append(Tile(ctx, t.shape, t.type, slots=values[k:k + len(t.slots)]))
            k += len(t.slots)
        return self.obj.with_parts(out) if self.obj is not None else out[0]


class LoopLowering:
    """The ``while``/``break``/``continue`` part of the front end (mixed into ``AstToIr``)."""

    def carry(self, names: list[str]) -> list[Carried]:
        """The names among ``names`` that a loop carries, with their values before it."""
        return [Carried(self.ctx, n, self.env[n]) for n in names
                if n in self.env and _carriable(self.env[n])]

    def bind_carried(self, carried: list[Carried], values: list) -> None:
        k = 0
        for c in carried:
            self.env[c.name] = c.rebuild(self.ctx, values[k:k + len(c.slots)])
            k += len(c.slots)

    def loop_yields(self, node: ast.stmt, carried: list[Carried]) -> list:
        """The slots a loop body yields for its carried names, each of which must keep the
        type and shape it had before the loop."""
        yields = []
        for c in carried:
            n = c.name
            v = self.env.get(n, _MISSING)
            if v is _MISSING:
                raise self.error(node, f"'{n}' is deleted in the loop")
            if c.obj is not None:
                try:
                    c.obj.check_carried(v, n)
                except CompileError as e:
                    raise self.error(node, str(e)) from None
                for part, t in zip(v.carry_parts(), c.tiles, strict=True):
                    yields += self.as_tile(part, t.shape, t.type).materialize().slots
                continue
            t = c.tiles[0]
            if isinstance(v, Tile):
                if not ir.same_type(v.type, t.type) or (v.shape != t.shape and not v.is_scalar):
                    raise self.error(node, f"loop-carried '{n}' starts as {t.type} "
                                     f"{list(t.shape)} but becomes {v.type} {list(v.shape)}; "
                                     "give it its final type and shape before the loop "
                                     "(e.g. tl.zeros(shape, dtype))")
            elif isinstance(v, float) and t.type != ir.F32:
                raise self.error(node, f"loop-carried '{n}' starts as {t.type} but becomes "
                                 "a float")
            yields += self.as_tile(v, t.shape, t.type).materialize().slots
        return yields

    def stmt_Break(self, node: ast.Break) -> None:
        raise self.error(node, "'break' outside a loop")

    def stmt_Continue(self, node: ast.Continue) -> None:
        raise self.error(node, "'continue' outside a loop")

    def _flag_consts(self) -> None:
        ctx = self.ctx
        self.env["@true"] = ctx.scalar(ctx.const(True, I1))
        self.env["@false"] = ctx.scalar(ctx.const(False, I1))

    def stmt_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.error(node, "while ... else is not supported")
        body = node.body
        extra: dict[str, object] = {}
        flags = None
        if has_jump(body):
            flags = _Flags(body)
            self._flag_consts()
            body = rewrite(body, flags, self.error)
            if flags.cont:
                body = [_set(flags.cont, "@false", node)] + body
            if flags.brk:
                extra[flags.brk] = self.env["@false"]

        def test():
            return self.expr(node.test)

        self.while_loop(node, test, body, extra, flags.brk if flags else None)

    def for_with_jumps(self, node: ast.For, var: str, args: list, static: bool) -> None:
        """A ``for`` loop whose body breaks or continues."""
        flags = _Flags(node.body)
        self._flag_consts()
        body = rewrite(node.body, flags, self.error)
        if flags.cont:
            body = [_set(flags.cont, "@false", node)] + body
        if static:  # tl.static_range: each unrolled iteration runs while not broken
            if flags.brk:
                self.env[flags.brk] = self.env["@false"]
            for i in builtins.range(*args):
                self.env[var] = i
                if flags.brk and i != args[0]:
                    g = ast.If(_at(ast.UnaryOp(ast.Not(), ast.Name(flags.brk, ast.Load())),
                                   node), body, [])
                    self.stmt(ast.copy_location(g, node))
                else:
                    self.block(body)
            self.env.pop(flags.brk, None)
            return
        if not flags.brk:  # only continue: still a counted loop
            loop = ast.copy_location(ast.For(node.target, node.iter, body, [],
                                             node.type_comment), node)
            self.dynamic_for(loop, var, args)
            return
        ctx = self.ctx
        step = args[2]
        if isinstance(step, int) and step == 0:
            raise self.error(node.iter, "range step must not be zero")
        lb, ub, st = (ctx.cast(ctx.to_tile(a), I32) for a in args)
        if not all(t.is_scalar for t in (lb, ub, st)):
            raise self.error(node.iter, "range bounds must be scalars")
        iv = f"@iv{next(_names)}"
        down = isinstance(step, int) and step < 0

        def test():
            return ctx.binary(">" if down else "<", self.env[iv], ub)

        def prologue():
            self.env[var] = self.env[iv]
            self.env[iv] = ctx.binary("+", self.env[iv], st)

        self.while_loop(node, test, body, {iv: lb, flags.brk: self.env["@false"]},
                        flags.brk, prologue)
        self.env.pop(iv, None)

    def while_loop(self, node: ast.stmt, test, body: list[ast.stmt], extra: dict,
                   brk: str | None, prologue=None) -> None:
        """Lower a loop to the IR ``while`` op: ``test()`` is evaluated in the condition
        region (skipped once ``brk`` is set), ``body`` in the body region; names the body
        reassigns are carried, as in ``for`` loops."""
        ctx = self.ctx
        self.env.update(extra)
        assigned = list(dict.fromkeys(list(extra) + _assigned_names(body)))
        carried = self.carry(assigned)
        init_slots = [s for c in carried for s in c.slots]
        types = [s.type for s in init_slots]
        cond_b, body_b = ir.Block(types), ir.Block(types)
        pre = dict(self.env)
        parent = ctx.b.block

        def bind(block: ir.Block) -> None:
            self.bind_carried(carried, block.args)

        self.depth += 1
        ctx.loop_depth += 1
        try:
            # the condition region
            ctx.b.block = cond_b
            bind(cond_b)
            ctx.scratch_dirty = True
            if brk is None:
                c = self._test_value(node, test)
            else:  # once broken, the test is not evaluated (it may load out of range)
                then_b, else_b = ir.Block(), ir.Block()
                ctx.b.block = then_b
                then_b.append(ir.Op("yield", [ctx.const(False, I1)], []))
                ctx.b.block = else_b
                else_b.append(ir.Op("yield", [self._test_value(node, test)], []))
                ctx.b.block = cond_b
                c = ctx.b.op("if", [self.env[brk].scalar], types=[I1],
                             regions=[then_b, else_b]).result
            cond_b.append(ir.Op("yield", [c], []))
            # the body region
            self.env = dict(pre)
            ctx.b.block = body_b
            bind(body_b)
            ctx.scratch_dirty = True
            if prologue is not None:
                prologue()
            try:
                self.block(body)
            except _Return:
                pass
        finally:
            self.depth -= 1
            ctx.loop_depth -= 1
        yields = self.loop_yields(node, carried)
        body_b.append(ir.Op("yield", yields, []))
        ctx.b.block = parent
        op = ctx.b.op("while", init_slots, types=types, regions=[cond_b, body_b])
        ctx.scratch_dirty = True
        self.env = pre
        self.bind_carried(carried, op.results)
        for n in extra:
            if n.startswith("@"):
                self.env.pop(n, None)

    def _test_value(self, node: ast.stmt, test) -> ir.Value:
        c = test()
        test_node = getattr(node, "test", None) or getattr(node, "iter", None)
        if not isinstance(c, Tile):
            if isinstance(c, list | tuple | dict | str) or c is None:
                raise self.error(test_node, "a while condition must be a scalar")
            return self.ctx.const(bool(c), I1)
        if not c.is_scalar:
            raise self.error(test_node, f"a while condition must be a scalar, not a tile of "
                             f"shape {list(c.shape)} (reduce it, e.g. with tl.max or tl.sum)")
        if c.type.is_ptr:
            raise self.error(test_node, "a while condition cannot be a pointer")
        return self.ctx.cast(c, I1).scalar
