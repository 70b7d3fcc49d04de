"""Front end: a ``@jit`` kernel's Python AST to IR.

The walker evaluates compile-time values (``tl.constexpr`` parameters, Python numbers,
tuples) in Python and builds IR for tensors. ``if`` on a tensor condition becomes an IR
``if``; ``for`` over ``range``/``tl.range`` becomes an IR ``for`` with the variables it
reassigns carried through; ``tl.static_range`` unrolls. Every user mistake becomes a
:class:`simtgpu.errors.SourceError` at the kernel's file, line and column.
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import operator
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass

from simtgpu.errors import SourceLocation

from . import dtypes, ir, language, triton_names
from .errors import CompileError, KernelError
from .ir import F32, I1, I32, Type
from .libmath import Namespace
from .loops import LoopLowering, _assigned_names, _Return, has_jump
from .methods import METHOD_NAMES, tensor_attribute
from .tiles import Lowering, Tile


@dataclass
class KernelSource:
    """A kernel's parsed source and where it sits in its file."""

    name: str
    file: str
    first_line: int  # 1-based line of the 'def' (or decorator) in the file
    indent: int
    lines: list[str]
    tree: ast.FunctionDef
    globals: dict
    params: list[str]
    constexpr_params: set[str]
    defaults: dict

    @classmethod
    def from_function(cls, fn) -> KernelSource:
        try:
            src_lines, first = inspect.getsourcelines(fn)
            file = inspect.getsourcefile(fn) or "<kernel>"
        except (OSError, TypeError) as e:
            raise CompileError(f"cannot read the source of {fn.__name__}: {e}") from None
        src = "".join(src_lines)
        indent = len(src_lines[0]) - len(src_lines[0].lstrip())
        tree = ast.parse(textwrap.dedent(src))
        fdef = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
        g = dict(fn.__globals__)
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=True):
                g[name] = cell.cell_contents
        params, cexpr = [], set()
        for a in fdef.args.args:
            params.append(a.arg)
            ann = a.annotation
            if ann is not None and _is_constexpr_annotation(ann, g):
                cexpr.add(a.arg)
        sig = inspect.signature(fn)
        defaults = {k: v.default for k, v in sig.parameters.items()
                    if v.default is not inspect.Parameter.empty}
        return cls(fn.__name__, file, first, indent, src_lines, fdef, g, params, cexpr,
                   defaults)

    def loc(self, node: ast.AST | None) -> SourceLocation:
        if node is None or not hasattr(node, "lineno"):
            node = self.tree
        line = self.first_line + node.lineno - 1
        col = node.col_offset + self.indent + 1
        text = self.lines[node.lineno - 1] if node.lineno - 1 < len(self.lines) else None
        return SourceLocation(self.file, line, col, text)


def _is_constexpr_annotation(ann: ast.AST, g: dict) -> bool:
    if isinstance(ann, ast.Attribute) and ann.attr == "constexpr":
        return True
    if isinstance(ann, ast.Name):
        v = g.get(ann.id)
        return v is language.constexpr or ann.id == "constexpr"
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        return ann.value.endswith("constexpr")
    return False


_WHAT = {
    "While": "a while loop", "Break": "break", "Continue": "continue",
    "With": "a with statement", "AsyncWith": "an async with statement",
    "Try": "a try statement", "TryStar": "a try statement", "Raise": "a raise statement",
    "Delete": "a del statement", "Global": "a global declaration",
    "Nonlocal": "a nonlocal declaration", "Import": "an import", "ImportFrom": "an import",
    "FunctionDef": "a nested function definition", "AsyncFunctionDef": "an async function",
    "ClassDef": "a class definition", "AsyncFor": "an async for loop",
    "Match": "a match statement", "TypeAlias": "a type alias",
    "ListComp": "a list comprehension", "SetComp": "a set comprehension",
    "DictComp": "a dict comprehension", "GeneratorExp": "a generator expression",
    "Dict": "a dict literal", "Set": "a set literal",
    "JoinedStr": "an f-string", "FormattedValue": "an f-string", "Await": "await",
    "Yield": "yield", "YieldFrom": "yield from", "NamedExpr": "an assignment expression (:=)",
    "Starred": "a starred expression",
}


def describe(node: ast.AST) -> str:
    """What the user wrote, in words ("a while loop"), for messages."""
    return _WHAT.get(type(node).__name__, f"this construct ({type(node).__name__})")


_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.Pow: operator.pow}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
          ast.Not: operator.not_}
_UNARY_TEXT = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~", ast.Not: "not"}
_CMPOPS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
           ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Is: operator.is_,
           ast.IsNot: operator.is_not}
def _is_constexpr(v) -> bool:
    """A compile-time value: what Triton holds as a ``tl.constexpr`` (numbers, strings,
    None, dtypes, tuples of them)."""
    from .dtypes import dtype

    if isinstance(v, tuple):
        return all(_is_constexpr(x) for x in v)
    return v is None or isinstance(v, bool | int | float | str | dtype | language.constexpr)


_PY_CALLS_OK = {builtins.float, builtins.int, builtins.min, builtins.max, builtins.len,
                builtins.abs, builtins.bool, builtins.round, builtins.isinstance, builtins.print,
                builtins.tuple, builtins.list}


class AstToIr(LoopLowering):
    """Walks one kernel's AST and emits IR through a :class:`Lowering`."""

    def __init__(self, src: KernelSource, arg_types: dict[str, Type], constexprs: dict,
                 threads: int, warp_size: int, name: str | None = None,
                 specialize: dict[str, str] | None = None, vec: int = 1):
        self.src = src
        fn = ir.Function(name or src.name, [], ir.Block(), threads=threads,
                         warp_size=warp_size)
        self.fn = fn
        specialize = specialize or {}
        fn.meta["divisible"] = {k: 16 for k, v in specialize.items() if v in ("a16", "d16")}
        self.ctx = Lowering(fn, threads, warp_size, vec)
        self.ctx.thread_level = self._uses_thread_intrinsics()
        if not self.ctx.thread_level and threads & (threads - 1):
            # tiles are spread over the threads by index bits (tiles.py)
            raise KernelError(src.loc(src.tree), f"a tile program runs on a power-of-two "
                              f"number of threads (num_warps a power of two, as in Triton), "
                              f"not {threads}")
        self.ctx.frontend = self  # builtins that call @jit functions (tl.reduce) inline here
        self.env: dict[str, object] = {}
        self.node: ast.AST | None = None
        self.calls: tuple[str, ...] = (src.name,)  # the @jit functions being expanded
        for pname in src.params:
            if pname in constexprs:
                self.env[pname] = constexprs[pname]
            elif pname in src.constexpr_params:
                if pname in src.defaults:
                    self.env[pname] = src.defaults[pname]
                else:
                    raise KernelError(src.loc(src.tree),
                                      f"constexpr parameter '{pname}' needs a value "
                                      f"(pass {pname}=... or -D {pname}=...)")
            else:
                t = arg_types.get(pname)
                if t is None:
                    raise KernelError(src.loc(src.tree), f"no type for parameter '{pname}'")
                v = ir.Value(t, None, pname)
                fn.params.append(ir.Param(pname, t, v))
                if specialize.get(pname) == "one":  # an integer equal to 1 is a constant
                    v = self.ctx.const(1, t)
                self.env[pname] = Tile(self.ctx, (), t, slots=[v])

    def _uses_thread_intrinsics(self) -> bool:
        for n in ast.walk(self.src.tree):
            if isinstance(n, ast.Attribute) and n.attr in language.THREAD_LEVEL_NAMES:
                return True
        return False

    # --- errors ------------------------------------------------------------------------------
    def error(self, node: ast.AST | None, msg: str) -> KernelError:
        return KernelError(self.src.loc(node or self.node), msg)

    # --- entry ---------------------------------------------------------------------------------
    def generate(self) -> ir.Function:
        try:
            self.block(self.src.tree.body)
        except _Return:
            pass
        except CompileError as e:
            raise e.at(self.src.loc(self.node)) from None
        self.ctx.finish_shared()
        return self.fn

    def block(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, node: ast.stmt) -> None:
        self.node = node
        self.ctx.b.loc = self.src.loc(node)
        meth = getattr(self, "stmt_" + type(node).__name__, None)
        if meth is None:
            raise self.error(node, f"{describe(node)} is not supported in a kernel")
        try:
            meth(node)
        except CompileError as e:
            raise e.at(self.src.loc(self.node)) from None

    # --- statements ----------------------------------------------------------------------------
    def stmt_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.discarded = node.value  # a call whose result is dropped (atomics.py reads it)
        self.expr(node.value)

    def stmt_Pass(self, node: ast.Pass) -> None:
        pass

    def stmt_Assign(self, node: ast.Assign) -> None:
        value = self.expr(node.value)
        for target in node.targets:
            self.assign(target, value)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            raise self.error(node, "a declaration without a value is not supported")
        self.assign(node.target, self.expr(node.value))

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, "unsupported operator")
        cur = self.expr(_load_form(node.target))
        self.node = node
        self.assign(node.target, self.apply(op, cur, self.expr(node.value)))

    def assign(self, target: ast.expr, value) -> None:
        self.node = target
        if isinstance(target, ast.Name):
            self.env[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            if not isinstance(value, tuple | list) or len(value) != len(target.elts):
                raise self.error(target, "cannot unpack this value into "
                                 f"{len(target.elts)} names")
            for t, v in zip(target.elts, value, strict=True):
                self.assign(t, v)
        elif isinstance(target, ast.Subscript):
            obj = self.expr(target.value)
            if not isinstance(obj, language.SharedArray):
                raise self.error(target, "only shared arrays can be assigned by index; "
                                 "use tl.store for global memory")
            obj[self.expr(target.slice)] = value
        else:
            raise self.error(target, "unsupported assignment target")

    def stmt_Assert(self, node: ast.Assert) -> None:
        cond = self.expr(node.test)
        if isinstance(cond, Tile):
            return  # device-side asserts are not checked
        if not cond:
            msg = self.expr(node.msg) if node.msg is not None else "assertion failed"
            raise self.error(node, f"static assertion failed: {msg}")

    def stmt_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            raise self.error(node, "a kernel cannot return a value; store it instead")
        if self.depth == 0:
            raise _Return()
        self.ctx.b.op("exit", [])
        raise _Return()

    depth = 0

    def stmt_If(self, node: ast.If) -> None:
        cond = self.expr(node.test)
        self.node = node
        if not isinstance(cond, Tile):
            self.block(node.body if cond else node.orelse)
            return
        if not cond.is_scalar:
            raise self.error(node.test, f"an 'if' condition must be a scalar, not a tile of "
                             f"shape {list(cond.shape)} (use tl.where for elementwise choice)")
        c = self.ctx.cast(cond, I1).scalar
        pre = dict(self.env)
        parent = self.ctx.b.block
        dirty0 = self.ctx.scratch_dirty
        results = []
        for body in (node.body, node.orelse):
            blk = ir.Block()
            self.ctx.b.block = blk
            self.env = dict(pre)
            self.ctx.scratch_dirty = dirty0
            returned = False
            self.depth += 1
            try:
                self.block(body)
            except _Return:
                returned = True
            finally:
                self.depth -= 1
            results.append((blk, self.env, returned, self.ctx.scratch_dirty))
        self.ctx.scratch_dirty = results[0][3] or results[1][3]
        (tb, tenv, tret, _), (eb, eenv, eret, _) = results
        names = [n for n in dict.fromkeys(list(tenv) + list(eenv))
                 if tenv.get(n, _MISSING) is not pre.get(n, _MISSING)
                 or eenv.get(n, _MISSING) is not pre.get(n, _MISSING)]
        if tret and eret:
            names = []  # no path continues after the if: the values before it stand
        merged: list[tuple[str, Tile | object]] = []
        yields_t: list = []
        yields_e: list = []

        def yield_both(n: str, tv, ev) -> tuple[tuple[int, ...], Type, int]:
            """Yield ``tv`` from the then-branch and ``ev`` from the else-branch as one
            shape and type; their place among the results. A branch that returned
            (``_DEAD``) yields zeros: its values are never read, and the other branch's
            are out of its scope."""
            shape, ty = self.merge_type(n, [v for v in (tv, ev) if v is not _DEAD], node)
            self.ctx.b.block = tb
            ts = self.as_tile(0 if tv is _DEAD else tv, shape, ty).materialize().slots
            self.ctx.b.block = eb
            yields_e.extend(self.as_tile(0 if ev is _DEAD else ev, shape, ty).materialize()
                            .slots)
            yields_t.extend(ts)
            return shape, ty, len(ts)

        for n in names:
            tv, ev = tenv.get(n, _MISSING), eenv.get(n, _MISSING)
            if tret:
                tv = _DEAD if isinstance(ev, Tile) else ev
            if eret:
                ev = _DEAD if isinstance(tv, Tile) else tv
            if tv is _MISSING or ev is _MISSING:
                continue  # defined on one path only: not visible after the if
            if not isinstance(tv, Tile) and not isinstance(ev, Tile):
                if tv is ev or (type(tv) is type(ev) and tv == ev):
                    merged.append((n, tv))
                    continue
                if getattr(tv, "_simtgpu_carry", False):  # a block pointer: merge its parts
                    tv.check_carried(ev, n, "the branches of a run-time 'if'")
                    self.ctx.b.block = tb  # constant offsets become values in their branch
                    tparts = tv.carry_parts()
                    self.ctx.b.block = eb
                    merged.append((n, _Parts(tv, [yield_both(n, tp, ep) for tp, ep in zip(
                        tparts, ev.carry_parts(), strict=True)])))
                    continue
                if not (isinstance(tv, int | float) and isinstance(ev, int | float)):
                    raise self.error(node, f"'{n}' gets different compile-time values in the "
                                     "branches of a run-time 'if'")
            merged.append((n, yield_both(n, tv, ev)))
        tb.append(ir.Op("yield", yields_t, []))
        eb.append(ir.Op("yield", yields_e, []))
        self.ctx.b.block = parent
        op = self.ctx.b.op("if", [c], types=[v.type for v in yields_t], regions=[tb, eb])
        self.env = dict(pre)
        for n in names:
            if n in self.env and n not in dict(merged):
                del self.env[n]
        i = 0
        for n, v in merged:
            if isinstance(v, _Parts):
                tiles = []
                for shape, ty, k in v.parts:
                    tiles.append(Tile(self.ctx, shape, ty, slots=op.results[i:i + k]))
                    i += k
                self.env[n] = v.obj.with_parts(tiles)
            elif isinstance(v, tuple) and len(v) == 3 and isinstance(v[1], Type):
                shape, ty, k = v
                self.env[n] = Tile(self.ctx, shape, ty, slots=op.results[i:i + k])
                i += k
            else:
                self.env[n] = v
        if tret and eret:
            if self.depth == 0:
                raise _Return()
            self.ctx.b.op("exit", [])
            raise _Return()

    def merge_type(self, name: str, vals: list, node) -> tuple[tuple[int, ...], Type]:
        """Shape and type a variable has when two definitions meet (if, loop)."""
        tiles = [v for v in vals if isinstance(v, Tile)]
        if not tiles:  # compile-time numbers that differ: a run-time scalar
            return (), F32 if any(isinstance(v, float) for v in vals) else I32
        shape = tiles[0].shape
        ty = tiles[0].type
        for t in tiles[1:]:
            if t.shape != shape and not t.is_scalar and shape != ():
                raise self.error(node, f"'{name}' has shape {list(shape)} on one path and "
                                 f"{list(t.shape)} on another")
            if t.shape != ():
                shape = t.shape
            if not ir.same_type(t.type, ty):
                if {t.type, ty} <= {I32, I1, F32} and not (t.type.is_ptr or ty.is_ptr):
                    raise self.error(node, f"'{name}' is {ty} on one path and {t.type} on "
                                     "another; convert with .to(...)")
                raise self.error(node, f"'{name}' changes type ({ty} vs {t.type})")
        for v in vals:
            if isinstance(v, float) and ty != F32:
                raise self.error(node, f"'{name}' is {ty} on one path and a float on another")
        return shape, ty

    def as_tile(self, v, shape: tuple[int, ...], ty: Type) -> Tile:
        ctx = self.ctx
        t = v if isinstance(v, Tile) else ctx.to_tile(v, like=Tile(ctx, (), ty, slots=[
            ctx.const(0, ty)]))
        if not ir.same_type(t.type, ty):
            t = ctx.cast(t, ty)
        return ctx.broadcast_to(t, shape)

    def stmt_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error(node, "for ... else is not supported")
        it = node.iter
        if not (isinstance(it, ast.Call)):
            raise self.error(it, "a kernel loop must iterate over range(...), tl.range(...) or "
                             "tl.static_range(...)")
        fobj = self.expr(it.func)
        args = [self.expr(a) for a in it.args]
        stages = None
        for kw in it.keywords:
            # (only num_stages is used; the other options are accepted and not evaluated)
            pairs = (self.double_starred(kw) if kw.arg is None else
                     [(kw.arg, self.expr(kw.value) if kw.arg == "num_stages" else None)])
            for name, value in pairs:
                if name not in ("num_stages", "loop_unroll_factor", "warp_specialize",
                                "disallow_acc_multi_buffer", "flatten"):
                    raise self.error(kw, f"unsupported loop option '{name}'")
                if name == "num_stages":
                    stages = value
                    if stages is not None and (not isinstance(stages, int) or isinstance(
                            stages, bool) or stages < 1):
                        what = "a run-time value" if isinstance(stages, Tile) else repr(stages)
                        raise self.error(kw, "num_stages must be a compile-time integer >= 1 "
                                         f"(tl.constexpr or a literal), not {what}")
        self.node = node
        if fobj not in (builtins.range, language.range, language.static_range):
            raise self.error(it, "a kernel loop must iterate over range(...), tl.range(...) "
                             "or tl.static_range(...)")
        if not 1 <= len(args) <= 3:
            raise self.error(it, "range takes 1 to 3 arguments")
        if len(args) == 1:
            args = [0, args[0], 1]
        elif len(args) == 2:
            args = [args[0], args[1], 1]
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a plain name")
        var = node.target.id
        static = all(isinstance(a, int) for a in args)
        if fobj is language.static_range:
            if not static:
                raise self.error(it, "tl.static_range needs compile-time bounds "
                                 "(tl.constexpr or literals)")
            self.check_unroll(it, args)
        if any(isinstance(a, Tile) and a.type in (ir.I64, ir.U64) for a in args):
            self.wide_for(node, var, args)
            return
        if has_jump(node.body):
            self.for_with_jumps(node, var, args, fobj is language.static_range)
            return
        if fobj is language.static_range:
            for i in builtins.range(*args):
                self.env[var] = i
                self.block(node.body)
            return
        self.dynamic_for(node, var, args, stages)

    def check_unroll(self, it: ast.expr, args: list[int]) -> None:
        """A static_range's bounds must give a range Python can build and a count small
        enough to unroll (a huge one would make the compile run for hours)."""
        if args[2] == 0:
            raise self.error(it, "tl.static_range step must not be zero")
        count = len(builtins.range(*args))
        if count > MAX_UNROLL:
            raise self.error(it, f"tl.static_range unrolls {count} iterations, more than "
                             f"{MAX_UNROLL}; use range(...) for a loop")

    def wide_for(self, node: ast.For, var: str, args: list) -> None:
        """``for var in range(lo, hi, step)`` with 64-bit bounds (Triton's loop counter is
        then int64): a ``while`` loop on a 64-bit counter, advanced before the body so that
        ``continue`` keeps it. The ``for`` op counts in 32 bits."""
        n = len(self.env)
        counter, stop, step = f"<counter{n}>", f"<stop{n}>", f"<step{n}>"  # not Python names
        for name, v in zip((counter, stop, step), args, strict=True):
            self.env[name] = self.ctx.cast(self.ctx.to_tile(v), ir.I64)
        down = isinstance(args[2], int) and args[2] < 0  # as the 32-bit loop: by its sign

        def name(n: str, ctx: ast.expr_context | None = None) -> ast.Name:
            return ast.Name(n, ctx or ast.Load())

        test = ast.Compare(name(counter), [ast.Gt() if down else ast.Lt()], [name(stop)])
        advance = [ast.Assign([name(var, ast.Store())], name(counter)),
                   ast.Assign([name(counter, ast.Store())],
                              ast.BinOp(name(counter), ast.Add(), name(step)))]
        loop = ast.copy_location(ast.While(test, advance + node.body, []), node)
        ast.fix_missing_locations(loop)
        try:
            self.stmt(loop)
        finally:
            self.node = node
            for k in (counter, stop, step):
                self.env.pop(k, None)

    def dynamic_for(self, node: ast.For, var: str, args: list, stages: int | None = None
                    ) -> None:
        ctx = self.ctx
        step = args[2]
        if isinstance(step, int) and step == 0:
            raise self.error(node.iter, "range step must not be zero")
        bounds = [ctx.cast(ctx.to_tile(a), I32) for a in args]
        if not all(t.is_scalar for t in bounds):
            raise self.error(node.iter, "range bounds must be scalars")
        carried = self.carry([n for n in _assigned_names(node.body) if n != var])
        init_slots = [s for c in carried for s in c.slots]
        body = ir.Block([I32] + [s.type for s in init_slots])
        pre = dict(self.env)
        parent = ctx.b.block
        ctx.b.block = body
        self.env[var] = Tile(ctx, (), I32, slots=[body.args[0]])
        self.bind_carried(carried, body.args[1:])
        ctx.scratch_dirty = True
        self.depth += 1
        ctx.loop_depth += 1
        try:
            self.block(node.body)
        except _Return:
            pass
        finally:
            self.depth -= 1
            ctx.loop_depth -= 1
        yields = self.loop_yields(node, carried)
        body.append(ir.Op("yield", yields, []))
        ctx.b.block = parent
        op = ctx.b.op("for", [b.scalar for b in bounds] + init_slots,
                      types=[s.type for s in init_slots], regions=[body])
        op.attrs["step_sign"] = -1 if isinstance(step, int) and step < 0 else 1
        if stages is not None:  # tl.range(..., num_stages=k): this loop's (pipeline.py)
            op.attrs["stages"] = stages
        ctx.scratch_dirty = True
        self.env = pre  # names assigned in the body but not carried keep their old values
        self.bind_carried(carried, op.results)

    # --- expressions -----------------------------------------------------------------------------
    def expr(self, node: ast.expr):
        self.node = node
        meth = getattr(self, "expr_" + type(node).__name__, None)
        if meth is None:
            raise self.error(node, f"{describe(node)} is not supported in a kernel")
        try:
            return meth(node)
        except CompileError as e:
            raise e.at(self.src.loc(node)) from None

    def expr_Constant(self, node: ast.Constant):
        return node.value

    def expr_Name(self, node: ast.Name):
        if node.id in self.env:
            return self.env[node.id]
        if node.id in self.src.globals:
            v = self.src.globals[node.id]
            return v.value if isinstance(v, language.constexpr) else v
        if hasattr(builtins, node.id):
            return getattr(builtins, node.id)
        raise self.error(node, f"name '{node.id}' is not defined")

    def expr_Attribute(self, node: ast.Attribute):
        obj = self.expr(node.value)
        self.node = node
        if isinstance(obj, Tile):
            return self.tensor_member(obj, node)
        try:
            v = getattr(obj, node.attr)
        except AttributeError as e:
            if isinstance(obj, Namespace):  # tl.math.foo: the namespace's own message
                raise self.error(node, str(e)) from None
            if obj is language and node.attr in triton_names.REASONS:
                # a Triton name this language lacks on purpose: say why
                raise self.error(node, f"tl.{node.attr} is not supported here: "
                                 f"{triton_names.REASONS[node.attr]}") from None
            if node.attr == "value" and _is_constexpr(obj):
                # Triton wraps compile-time values in tl.constexpr, whose .value helpers
                # read (dtype.value); here they are the plain values already
                return obj
            if (_is_number(obj) and (node.attr in ("to", "dtype", "type")
                                     or node.attr in METHOD_NAMES)
                    or isinstance(obj, bool) and node.attr in ("dtype", "type")):
                # a number assigned in a kernel is a scalar tensor in Triton (acc = 0;
                # acc = acc.to(tl.int64); value = 1; tl.full(..., dtype=value.dtype)):
                # its tensor members are the scalar's (int32, int64, float32, int1)
                return self.tensor_member(self.ctx.to_tile(obj), node)
            raise self.error(node, f"'{getattr(obj, '__name__', type(obj).__name__)}' has no "
                             f"attribute '{node.attr}'") from None
        return v.value if isinstance(v, language.constexpr) else v

    def tensor_member(self, obj: Tile, node: ast.Attribute):
        """Attribute ``node.attr`` of the tensor ``obj``."""
        if node.attr in ("dtype", "type"):  # ptr.type.element_ty, as in Triton
            return obj.dtype
        if node.attr == "shape":
            return obj.shape
        if node.attr == "numel":  # Triton's x.numel: the element count, a compile-time int
            return obj.numel
        if node.attr == "to":
            return obj.to
        m = tensor_attribute(obj, node.attr)
        if m is not None:
            return m
        raise self.error(node, f"tensors have no attribute '{node.attr}'")

    def expr_Tuple(self, node: ast.Tuple):
        return tuple(self.expr(e) for e in node.elts)

    expr_List = expr_Tuple

    def expr_Slice(self, node: ast.Slice):
        parts = [None if x is None else self.expr(x) for x in (node.lower, node.upper,
                                                                node.step)]
        return slice(*parts)

    def expr_Subscript(self, node: ast.Subscript):
        obj = self.expr(node.value)
        key = self.expr(node.slice)
        self.node = node
        if isinstance(obj, Tile | language.SharedArray):
            return obj[key]
        if isinstance(key, Tile):
            raise self.error(node, "cannot index a compile-time value with a tensor")
        try:
            return obj[key]
        except Exception as e:  # noqa: BLE001 - a user's compile-time indexing mistake
            raise self.error(node, f"indexing failed: {e}") from None

    def apply(self, op, a, b):
        if isinstance(a, Tile) or isinstance(b, Tile):
            if op is operator.pow:
                raise CompileError("** is not supported on tensors")
            return op(a, b)
        if _huge_int(op, a, b):  # 2**40**40 would run (and grow) without end
            raise CompileError(f"compile-time arithmetic gives an integer of more than "
                               f"{MAX_INT_BITS} bits")
        try:
            return op(a, b)
        except Exception as e:  # noqa: BLE001
            raise CompileError(f"compile-time arithmetic failed: {e}") from None

    def expr_BinOp(self, node: ast.BinOp):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, "unsupported operator")
        a, b = self.expr(node.left), self.expr(node.right)
        self.node = node
        return self.apply(op, a, b)

    def expr_UnaryOp(self, node: ast.UnaryOp):
        v = self.expr(node.operand)
        self.node = node
        if isinstance(v, Tile):
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return v
            if isinstance(node.op, ast.Invert):
                return ~v
            return self.ctx.unary("not", v)
        try:
            return _UNARY[type(node.op)](v)
        except TypeError:  # -tl, ~1.5: Python refuses the operand
            raise self.error(node, f"unary '{_UNARY_TEXT[type(node.op)]}' does not apply "
                             f"to {type(v).__name__}") from None

    def expr_Compare(self, node: ast.Compare):
        left = self.expr(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.expr(right_node)
            self.node = node
            f = _CMPOPS.get(type(op))
            if f is None:
                raise self.error(node, "unsupported comparison")
            if isinstance(op, ast.Is | ast.IsNot) and (isinstance(left, Tile)
                                                         or isinstance(right, Tile)):
                r = f(left, right)
            else:
                r = self.apply(f, left, right)
            result = r if result is None else self.apply(operator.and_, result, r)
            left = right
        return result

    def expr_BoolOp(self, node: ast.BoolOp):
        vals = [self.expr(v) for v in node.values]
        self.node = node
        if not any(isinstance(v, Tile) for v in vals):
            out = vals[0]
            for v in vals[1:]:
                out = (out and v) if isinstance(node.op, ast.And) else (out or v)
            return out
        out = self.ctx.cast(self.ctx.to_tile(vals[0]), I1)
        for v in vals[1:]:
            t = self.ctx.cast(self.ctx.to_tile(v), I1)
            out = out & t if isinstance(node.op, ast.And) else out | t
        return out

    def expr_IfExp(self, node: ast.IfExp):
        cond = self.expr(node.test)
        if not isinstance(cond, Tile):
            return self.expr(node.body if cond else node.orelse)
        if cond.is_scalar and _calls(node.body, node.orelse):
            return self.if_expression(node, cond)
        # arithmetic alone cannot fault or have effects: both sides and a select
        a, b = self.expr(node.body), self.expr(node.orelse)
        return language.where(cond, a, b, _ctx=self.ctx)

    def if_expression(self, node: ast.IfExp, cond: Tile):
        """``a if c else b`` with calls in a branch, on a run-time scalar ``c``, is a
        run-time ``if`` (as Triton lowers it): only the taken branch's loads, stores and
        calls happen, and a branch may be a call without a value
        (``tl.store(...) if c else tl.store(...)``)."""
        c_name, v_name = "<if-condition>", "<if-expression>"  # not Python names: no clash

        def branch(e: ast.expr) -> ast.stmt:
            return ast.copy_location(ast.Assign([ast.Name(v_name, ast.Store())], e), e)

        stmt = ast.copy_location(ast.If(ast.Name(c_name, ast.Load()), [branch(node.body)],
                                        [branch(node.orelse)]), node)
        ast.fix_missing_locations(stmt)
        self.env[c_name] = cond
        outer = self.node
        try:
            self.stmt(stmt)
        finally:
            self.node = outer
            self.env.pop(c_name, None)
        return self.env.pop(v_name, None)

    def starred(self, node: ast.Starred) -> list:
        """The arguments ``*value`` passes: Python's own unpacking, placed when the value
        cannot be unpacked (``f(*2.0)``)."""
        v = self.expr(node.value)
        try:
            return list(v)
        except TypeError:
            raise self.error(node, f"cannot unpack {type(v).__name__} with '*'") from None

    def double_starred(self, kw: ast.keyword) -> list[tuple[str, object]]:
        """The keyword arguments ``**value`` passes: a compile-time mapping's items (a global
        dict, ``dict(other=0.0)``), placed when the value is not one (a tensor, a number)."""
        v = self.expr(kw.value)
        if not isinstance(v, Mapping):
            what = "a tensor" if isinstance(v, Tile) else type(v).__name__
            raise self.error(kw, f"cannot unpack {what} with '**' (it takes a compile-time "
                             "dict of keyword arguments)")
        items = list(v.items())
        for k, _ in items:
            if not isinstance(k, str):
                raise self.error(kw, f"keywords must be strings, not {k!r} (in '**')")
        return items

    def expr_Call(self, node: ast.Call):
        f = self.expr(node.func)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.starred(a))
            else:
                args.append(self.expr(a))
        kwargs: dict[str, object] = {}
        for kw in node.keywords:
            for name, value in (self.double_starred(kw) if kw.arg is None
                                else [(kw.arg, self.expr(kw.value))]):
                if name in kwargs:
                    raise self.error(kw, f"keyword argument '{name}' given twice")
                kwargs[name] = value
        self.node = node
        if getattr(f, "_simtgpu_builtin", False):
            self.check_arguments(f, args, kwargs, node)
            self.ctx.result_unused = node is getattr(self, "discarded", None)
            return f(*args, _ctx=self.ctx, **kwargs)
        if getattr(f, "_simtgpu_jit", False):  # a @jit helper (jit.JITFunction)
            return self.inline(f, args, kwargs, node)
        if isinstance(f, _Lambda):
            return self.call_lambda(f, args, kwargs, node)
        if f in (language.range, language.static_range):
            raise self.error(node, "tl.range/tl.static_range can only be used in a for loop")
        if getattr(f, "__self__", None) is not None and isinstance(f.__self__, Tile):
            self.check_arguments(f, args, kwargs, node)
            return f(*args, **kwargs)  # tensor methods such as x.to(dtype)
        if f is builtins.print:  # as in Triton, Python's print in a kernel is tl.device_print
            self.check_arguments(language.device_print, args, kwargs, node)
            return language.device_print(*args, _ctx=self.ctx, **kwargs)
        if f in (builtins.min, builtins.max) and any(isinstance(a, Tile) for a in args):
            pick = language.minimum if f is builtins.min else language.maximum
            out = args[0]
            for a in args[1:]:
                out = pick(out, a, _ctx=self.ctx)
            return out
        if f is builtins.isinstance and len(args) == 2 and not kwargs:
            # a value's kind is known at compile time (tl.tensor, tl.tensor_descriptor ...)
            kinds = args[1] if isinstance(args[1], tuple) else (args[1],)
            if language.constexpr in kinds and _is_constexpr(args[0]):
                return True  # as in Triton, a compile-time value is a tl.constexpr
            try:
                return isinstance(args[0], args[1])
            except TypeError as e:
                raise self.error(node, f"compile-time call failed: {e}") from None
        if isinstance(f, dtypes.dtype):
            return self.dtype_call(f, args, kwargs, node)
        if f is language.constexpr:
            # tl.constexpr(v) is v itself here: compile-time values are plain Python values
            if len(args) != 1 or kwargs or isinstance(args[0], Tile):
                raise self.error(node, "tl.constexpr(value) takes one compile-time value")
            return args[0]
        if any(isinstance(a, Tile) for a in args + list(kwargs.values())):
            raise self.error(node, f"cannot call '{getattr(f, '__name__', f)}' on tensors "
                             "inside a kernel (only tl.* functions and @jit helpers)")
        if f in _PY_CALLS_OK or getattr(f, "__module__", "") in ("math",) or getattr(
                f, "_simtgpu_host", False) or isinstance(f, type) or isinstance(
                getattr(f, "__self__", None), dtypes.dtype | dtypes.pointer_type):
            # (a type's own questions, x.dtype.is_floating(), are compile-time calls too)
            try:
                return f(*args, **kwargs)
            except Exception as e:  # noqa: BLE001 - a compile-time evaluation mistake
                raise self.error(node, f"compile-time call failed: {e}") from None
        raise self.error(node, f"cannot call '{getattr(f, '__name__', f)}' inside a kernel")

    def dtype_call(self, dt: dtypes.dtype, args: list, kwargs: dict, node: ast.Call) -> Tile:
        """``tl.float32(x)``: as in Triton, calling a type converts its one argument to it
        (library kernels start running maxima with ``m = tl.float32(-float("inf"))``)."""
        if len(args) != 1 or kwargs:
            raise self.error(node, f"tl.{dt.name}(value) takes one value")
        value = args[0]
        if isinstance(value, Tile):
            return language.cast(value, dt, _ctx=self.ctx)
        if isinstance(value, bool | int | float):
            return language.full((), value, dt, _ctx=self.ctx)
        raise self.error(node, f"tl.{dt.name}(value) needs a number or a tensor, not "
                         f"{type(value).__name__}")

    def check_arguments(self, f, args: list, kwargs: dict, node: ast.Call) -> None:
        """A call of a language function or tensor method whose arguments do not fit its
        signature (an unknown keyword, a missing argument) is the kernel's mistake: say so
        at the call instead of failing inside the compiler."""
        target, lead, name = _callee_signature(f)
        if target is None:
            return
        try:
            _signature(target).bind(*lead, *args, **kwargs)
        except TypeError as e:
            raise self.error(node, f"{name}(): {e}") from None
        except ValueError:  # no signature to check (a C function)
            return

    def expr_Lambda(self, node: ast.Lambda) -> _Lambda:
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise self.error(node, "a lambda in a kernel takes plain positional parameters")
        return _Lambda(node, self)

    def call_lambda(self, lam: _Lambda, args: list, kwargs: dict, node: ast.Call) -> object:
        """``f = lambda x: tl.exp2(c * x)`` then ``f(v)`` (Triton-Puzzles' solutions): the
        body is expanded at each call, as a @jit helper is, with the parameters bound over
        the defining scope's variables as they are at the call (Python's late binding)."""
        a = lam.node.args
        names = [p.arg for p in a.args]
        defaults = dict(zip(names[len(names) - len(a.defaults):],
                            lam.defaults, strict=True))
        try:
            bound = inspect.Signature(
                [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                   default=defaults.get(n, inspect.Parameter.empty))
                 for n in names]).bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(node, f"lambda: {e}") from None
        bound.apply_defaults()
        frame = lam.frame
        sub = AstToIr.__new__(AstToIr)
        sub.calls, sub.src, sub.fn, sub.ctx = frame.calls, frame.src, frame.fn, frame.ctx
        sub.node, sub.depth = None, 0
        sub.env = {**frame.env, **bound.arguments}
        return sub.expr(lam.node.body)

    def inline(self, jf, args, kwargs, node) -> object:
        """Call a @jit helper: its body is expanded here, its return value is the result."""
        src = KernelSource.from_function(jf.fn)
        if src.name in self.calls:
            chain = " -> ".join((*self.calls, src.name))
            raise self.error(node, f"recursive call ({chain}): a @jit function is expanded "
                             "where it is called, so it cannot call itself")
        sub = AstToIr.__new__(AstToIr)
        sub.calls = (*self.calls, src.name)
        sub.src = src
        sub.fn = self.fn
        sub.ctx = self.ctx
        sub.node = None
        sub.depth = 0
        names = src.params
        if len(args) > len(names):
            raise self.error(node, f"{src.name} takes {len(names)} argument(s), "
                             f"{len(args)} given")
        env: dict[str, object] = dict(src.defaults)
        for n, a in zip(names, args, strict=False):
            env[n] = a
        for n in kwargs:
            if n not in names:
                raise self.error(node, f"{src.name} has no parameter '{n}'")
            if n in names[:len(args)]:
                raise self.error(node, f"{src.name} got two values for '{n}'")
        env.update(kwargs)
        for n in names:
            if n not in env:
                raise self.error(node, f"missing argument '{n}' for {src.name}")
        sub.env = env
        return sub.helper_block(src.tree.body)[1]

    def helper_block(self, body: list[ast.stmt]) -> tuple[bool, object]:
        """Lower a @jit helper's statements: (returned, value). A helper returns at its end,
        or inside an ``if`` whose condition is known at compile time (Triton's
        ``if isinstance(x, tl.tensor_descriptor): return x``): only the taken branch is
        lowered, so its return ends the helper there."""
        for s in body:
            if isinstance(s, ast.Return) and s.value is not None:
                return True, self.expr(s.value)
            returns = [r for r in ast.walk(s) if isinstance(r, ast.Return)]
            if isinstance(s, ast.If) and returns:
                self.node = s
                self.ctx.b.loc = self.src.loc(s)
                try:
                    cond = self.expr(s.test)
                except CompileError as e:
                    raise e.at(self.src.loc(s)) from None
                if isinstance(cond, Tile):
                    raise self.error(s, "a @jit helper may only return at its end or in an "
                                     "'if' on a compile-time condition; this one is decided "
                                     "at run time (assign a result and return it at the end)")
                done, value = self.helper_block(s.body if cond else s.orelse)
                if done:
                    return True, value
                continue
            if returns:
                raise self.error(returns[0], "a @jit helper may only return at its end")
            self.stmt(s)
        return False, None


_MISSING = object()
MAX_INT_BITS = 1 << 16  # the widest Python integer compile-time arithmetic may build
MAX_UNROLL = 1 << 14  # iterations of one tl.static_range the front end unrolls


def _huge_int(op, a, b) -> bool:
    """Whether ``a ** b`` or ``a << b`` on Python integers would exceed MAX_INT_BITS."""
    if not (isinstance(a, int) and isinstance(b, int)):
        return False
    if op is operator.pow:
        return abs(a) > 1 and b * a.bit_length() > MAX_INT_BITS
    return op is operator.lshift and a != 0 and b > MAX_INT_BITS


_DEAD = object()  # the value of a variable in a branch that returned (never read)


def _is_number(v) -> bool:
    """A Python int or float (not a bool): a kernel's numbers."""
    return isinstance(v, int | float) and not isinstance(v, bool)


def _calls(*nodes: ast.expr) -> bool:
    """Whether any of the expressions calls something."""
    return any(isinstance(n, ast.Call) for e in nodes for n in ast.walk(e))


def _callee_signature(f) -> tuple[object, tuple, str]:
    """(the function whose signature a call must fit, the arguments the front end adds in
    front of the user's, the name to show) for a builtin, a tensor member or a Tile method;
    (None, (), '') when there is none to check."""
    from .methods import BoundMethod

    if isinstance(f, BoundMethod):
        inner = getattr(f.fn, "__wrapped__", None)
        return (inner, (None, f.tile), f"x.{f.__name__}") if inner else (None, (), "")
    inner = getattr(f, "__wrapped__", None)
    if getattr(f, "_simtgpu_builtin", False) and inner is not None:
        return inner, (None,), f"tl.{f.__name__}"
    if isinstance(getattr(f, "__self__", None), Tile):
        return getattr(f, "__func__", f), (f.__self__,), f"x.{f.__name__}"
    return None, (), ""


@functools.cache
def _signature(fn) -> inspect.Signature:
    """A language function's signature (the same few are looked up at every call)."""
    return inspect.signature(fn)


class _Lambda:
    """A lambda defined in a kernel: its node, the frame that defined it (read when it is
    called) and its default values (evaluated where it is defined, as in Python)."""

    def __init__(self, node: ast.Lambda, frame: AstToIr):
        self.node = node
        self.frame = frame
        self.defaults = [frame.expr(d) for d in node.args.defaults]


@dataclass
class _Parts:
    """A compile-time object with run-time parts (a block pointer) merged after an ``if``:
    the shape, type and slot count of each part among the ``if``'s results."""

    obj: object
    parts: list[tuple[tuple[int, ...], Type, int]]


def _load_form(target: ast.expr) -> ast.expr:
    if isinstance(target, ast.Name):
        return ast.copy_location(ast.Name(target.id, ast.Load()), target)
    if isinstance(target, ast.Subscript):
        return ast.copy_location(ast.Subscript(target.value, target.slice, ast.Load()), target)
    return target


def lower_kernel(fn, arg_types: dict[str, Type], constexprs: dict, threads: int,
                 warp_size: int, name: str | None = None,
                 specialize: dict[str, str] | None = None, vec: int = 1) -> ir.Function:
    """Front end entry: the Python function ``fn`` to an IR function (``specialize`` and
    ``vec``: see :func:`simtgpu.compiler_backend.compiler.compile_function`)."""
    try:
        src = KernelSource.from_function(fn)
    except CompileError as e:
        raise e.at(SourceLocation(getattr(fn, "__code__", None)
                                  and fn.__code__.co_filename or "<kernel>", 1, 1)) from None
    return AstToIr(src, arg_types, constexprs, threads, warp_size, name, specialize,
                   vec).generate()
