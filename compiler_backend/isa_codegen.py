"""Code generator for this GPU's ISA: instruction selection, register allocation, assembly.

1. Instruction selection walks the IR in order and emits machine instructions on virtual
   registers (one per IR value; ``for``/``if`` results share the register of their carried
   value). Constants, shared addresses and constant ``gep`` offsets become immediates where
   an instruction takes one and are materialised (``li``) only where a register is needed.
   Masks become guards (``@p ldg``); ``for``/``if`` become branches bracketed by
   ``ssy``/``sync`` unless the condition is warp-uniform
   (:func:`simtgpu.compiler_backend.uniformity.uniformity`).
2. Register allocation is linear scan over live intervals on the linear code; a value
   used inside a loop and defined before it lives through the whole loop. General
   registers r1..r30 (r31 is the scratch of parallel moves and spill addresses),
   predicates p0..p5 (p6 is the scratch). When more values are live than registers, the
   ones reaching furthest are spilled: predicates to a 0/1 general register, general
   registers to this thread's words of shared memory (in front of the kernel's shared
   data), reloaded before each use.
3. Emission prints assembly that :func:`simtgpu.assembler.assemble` accepts.

Mnemonics come from :data:`simtgpu.isa.BY_MNEMONIC`, and ``_EMITTERS`` holds one emitter per
IR op; both are checked at import.
"""

from __future__ import annotations

import bisect
import heapq
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from simtgpu.isa import BY_MNEMONIC, IMM_MAX, IMM_MIN, SREG_BY_NAME
from simtgpu.isa.abi import LOCAL_PARAM

from . import chunking, half_codegen, ir
from .errors import CompileError
from .ir import F32, I1, Function, Op, Value
from .isa_instr import MI, Label, Mem, Sym
from .uniformity import uniformity

GPRS = tuple(range(1, 31))
SCRATCH_GPR = 31
LOCAL_GPR = 30
"""Holds this thread's local-memory address in a kernel that spills to local memory."""
PREDS = tuple(range(0, 6))
SCRATCH_PRED = 6

_PSEUDOS = {"li", "mov", "label"}  # assembler pseudo-instructions and labels


def _check_mnemonic(m: str) -> str:
    if m not in BY_MNEMONIC and m not in _PSEUDOS:
        raise AssertionError(f"instruction selection uses unknown mnemonic {m}")
    return m


_INT_RR = {n: n for n in ("add", "sub", "and", "or", "xor", "shl", "shr", "sra", "min", "max",
                          "minu", "maxu", "mul", "mulhi", "mulhu")}
_INT_RI = {"add": "addi", "and": "andi", "or": "ori", "xor": "xori", "shl": "shli",
           "shr": "shri", "sra": "srai", "mul": "muli"}
_COMMUTATIVE = {"add", "and", "or", "xor", "mul", "min", "max", "minu", "maxu"}
_FLOAT = {"fadd": "fadd", "fsub": "fsub", "fmul": "fmul", "fmin": "fmin", "fmax": "fmax",
          "fneg": "fneg", "fabs": "fabs", "ffma": "ffma"}
_SFU = {n: f"sfu.{n}" for n in ("rcp", "rsqrt", "sqrt", "exp2", "log2", "sin", "cos")}
_CVT = {n: f"cvt.{n}" for n in ("i2f", "u2f", "f2i", "f2u")}
_PLOGIC = {"and": "pand", "or": "por", "xor": "pxor"}
_UNIT = {**_FLOAT, **_SFU, **_CVT}  # ops that are one instruction on registers
for _m in (list(_INT_RR.values()) + list(_INT_RI.values()) + list(_UNIT.values())
           + list(_PLOGIC.values())):
    _check_mnemonic(_m)


def _fits11(x: int) -> bool:
    return IMM_MIN <= x <= IMM_MAX


def _const_bits(v) -> int:
    if isinstance(v, float):
        return struct.unpack("<I", struct.pack("<f", v))[0]
    if isinstance(v, bool):
        return int(v)
    return int(v) & 0xFFFFFFFF


def _is_zero_const(op: Op) -> bool:
    return op.name == "const" and _const_bits(op.attrs["value"]) == 0 and op.result.type != I1


class ISel:
    """IR to machine instructions on virtual registers."""

    def __init__(self, fn: Function, smem_shift: int = 0):
        self.smem_shift = smem_shift  # bytes of spill area in front of the shared data
        self.fn = fn
        self.code: list[MI] = []
        self.alias: dict[int, Value] = {}
        # rematerialisable values -> defining op (const, smem, constant gep) or parameter
        self.lazy: dict[int, Op | ir.Param] = {}
        self.labels = 0
        self.loops: list[tuple[int, int]] = []  # (first, last) MI index of each loop
        self.uni = uniformity(fn)
        self.scopes: list[dict] = [{"cache": {}, "loop": False}]
        self.uses: dict[int, int] = {}
        for op in fn.walk():
            for v in op.operands:
                self.uses[v.id] = self.uses.get(v.id, 0) + 1

    def label(self, stem: str) -> str:
        self.labels += 1
        return f"{stem}{self.labels}"

    def emit(self, op: str, *args, defs=(), guard=None, gneg=False, partial=False) -> MI:
        mi = MI(_check_mnemonic(op), list(args), list(defs), guard, gneg, partial)
        self.code.append(mi)
        return mi

    def v(self, x: Value) -> Value:
        while x.id in self.alias:
            x = self.alias[x.id]
        return x

    # --- operands ---------------------------------------------------------------------------
    def reg(self, x: Value) -> Value | Sym:
        """``x`` in a register. Constants, shared addresses and parameters are
        rematerialised where they are needed (``li``/``ldparam`` in the current region, or
        in the pre-header of the outermost enclosing loop) instead of living in a register
        from the kernel's entry; constant-offset pointers are materialised at the use."""
        x = self.v(x)
        op = x.owner
        if isinstance(op, Op) and op.name in ("const", "smem") and x.type != I1:
            if _is_zero_const(op) or (op.name == "smem" and self.smem(op) == 0):
                return Sym("r0")
        if isinstance(op, Op) and op.name == "const" and x.type == I1:
            return Sym("pt") if op.attrs["value"] else Sym("!pt")
        if x.id in self.lazy:
            return self.remat(x, self.lazy[x.id])
        return x

    def remat(self, x: Value, op: Op | ir.Param) -> Value:
        for sc in reversed(self.scopes):
            if x.id in sc["cache"]:
                return sc["cache"][x.id]
        v = ir.Value(x.type)
        if isinstance(op, Op) and op.name == "gep":
            self.code.append(self.materialize(op, v))
            self.scopes[-1]["cache"][x.id] = v
            return v
        outer = next((sc for sc in self.scopes if sc["loop"]), None)
        if outer is None:
            self.code.append(self.materialize(op, v))
            self.scopes[-1]["cache"][x.id] = v
        else:
            head = self.code[outer["ph"]]
            mi = self.materialize(op, v)
            head.group.append(mi)
            head.defs.append(v)
            outer["cache"][x.id] = v
        return v

    def materialize(self, op: Op | ir.Param, r: Value) -> MI:
        if isinstance(op, ir.Param):
            return MI("ldparam", [r, Sym(op.name)], [r])
        if op.name == "const":
            return MI("li", [r, _const_bits(op.attrs["value"])], [r])
        if op.name == "smem":
            return MI("li", [r, self.smem(op)], [r])
        if op.name == "gep":
            k = op.operands[0].type.elem_size * ir.const_value(op.operands[1])
            base, c = self.addr(op.operands[0], extra=k)
            return MI("addi", [r, base, c + k], [r])
        raise AssertionError(op.name)

    def smem(self, op: Op) -> int:
        """A shared address after the spill area."""
        return op.attrs["offset"] + self.smem_shift

    def const_of(self, x: Value):
        return ir.const_value(self.v(x))

    def addr(self, p: Value, extra: int = 0) -> tuple[Value | Sym, int]:
        """A pointer as (base register, byte offset) for a memory operand; the offset plus
        ``extra`` (what a caller adds to it, itself in range) fits the immediate field."""
        p = self.v(p)
        op = p.owner
        off = 0
        while isinstance(op, Op) and op.name == "gep" and self.const_of(op.operands[1]) \
                is not None:
            c = p.type.elem_size * self.const_of(op.operands[1])
            if not _fits11(off + c + extra):
                break
            off += c
            p = self.v(op.operands[0])
            op = p.owner
        if isinstance(op, Op) and op.name == "smem" and _fits11(off + self.smem(op) + extra):
            return Sym("r0"), off + self.smem(op)
        return self.reg(p), off

    # --- driver ------------------------------------------------------------------------------
    def run(self) -> list[MI]:
        for p in self.fn.params:
            self.lazy[p.value.id] = p
        self.block(self.fn.body)
        self.emit("exit")
        return self.code

    def block(self, b: ir.Block) -> None:
        for op in b.ops:
            _EMITTERS[op.name](self, op)

    def unit_op(self, op: Op) -> None:
        """An op that is one instruction on registers (FPU, SFU, conversions)."""
        r = op.result
        self.emit(_UNIT[op.name], r, *[self.reg(x) for x in op.operands], defs=[r])

    def logic_op(self, op: Op) -> None:
        """and/or/xor: predicate logic on i1, the integer ALU on i32."""
        r = op.result
        if r.type == I1:
            self.emit(_PLOGIC[op.name], r, *[self.reg(x) for x in op.operands], defs=[r])
        else:
            self.int_op(op)

    def lazy_op(self, op: Op) -> None:
        self.lazy[op.result.id] = op

    def op_gep(self, op: Op) -> None:
        r = op.result
        c = self.const_of(op.operands[1])
        size = op.operands[0].type.elem_size
        if c is not None and _fits11(size * c):
            self.lazy_op(op)
            return
        base = self.reg(op.operands[0])
        idx = op.operands[1]
        if size == 1:  # bytes: the index is the byte offset
            self.emit("add", r, base, self.reg(idx), defs=[r])
            return
        t = ir.Value(ir.I32)
        self.emit("shli", t, self.reg(idx), size.bit_length() - 1, defs=[t])
        self.emit("add", r, base, t, defs=[r])

    def op_ptradd(self, op: Op) -> None:
        r = op.result
        c = self.const_of(op.operands[1])
        if c is not None and _fits11(c):
            self.emit("addi", r, self.reg(op.operands[0]), c, defs=[r])
            return
        self.emit("add", r, self.reg(op.operands[0]), self.reg(op.operands[1]), defs=[r])

    def op_same_bits(self, op: Op) -> None:
        """inttoptr/ptrtoint of a 32-bit word (an address is the word itself) and bitcast
        (registers hold 32 bits of any type)."""
        if op.operands[0].type == ir.I64 or op.result.type == ir.I64:
            self.op_wide(op)
        self.alias[op.result.id] = self.v(op.operands[0])

    def op_wide(self, op: Op) -> None:
        raise AssertionError(f"{op.name} on i64 reached ISA code generation without "
                             "wide.legalize_i64")

    def op_sreg(self, op: Op) -> None:
        name = op.attrs["name"]
        if name not in SREG_BY_NAME:
            raise CompileError(f"unknown special register {name}")
        self.emit("s2r", op.result, Sym(name), defs=[op.result])

    def int_op(self, op: Op) -> None:
        n = op.name
        r = op.result
        a, b = op.operands
        ca, cb = self.const_of(a), self.const_of(b)
        if n in _COMMUTATIVE and ca is not None and cb is None and n in _INT_RI:
            a, b, ca, cb = b, a, cb, ca
        if n == "sub" and cb is not None and _fits11(-cb):
            self.emit("addi", r, self.reg(a), -cb, defs=[r])
            return
        if n in _INT_RI and cb is not None and _fits11(cb):
            self.emit(_INT_RI[n], r, self.reg(a), cb, defs=[r])
            return
        self.emit(_INT_RR[n], r, self.reg(a), self.reg(b), defs=[r])

    def op_not(self, op: Op) -> None:
        self.emit("pxor", op.result, self.reg(op.operands[0]), Sym("pt"), defs=[op.result])

    def op_icmp(self, op: Op) -> None:
        self.emit(f"isetp.{op.attrs['cond']}", op.result, self.reg(op.operands[0]),
                  self.reg(op.operands[1]), defs=[op.result])

    def op_fcmp(self, op: Op) -> None:
        self.emit(f"fsetp.{op.attrs['cond']}", op.result, self.reg(op.operands[0]),
                  self.reg(op.operands[1]), defs=[op.result])

    def op_select(self, op: Op) -> None:
        c, a, b = op.operands
        r = op.result
        if r.type == I1:
            t1, t2 = ir.Value(I1), ir.Value(I1)
            self.emit("pand", t1, self.reg(c), self.reg(a), defs=[t1])
            nc = ir.Value(I1)
            self.emit("pxor", nc, self.reg(c), Sym("pt"), defs=[nc])
            self.emit("pand", t2, nc, self.reg(b), defs=[t2])
            self.emit("por", r, t1, t2, defs=[r])
            return
        self.emit("sel", r, self.reg(a), self.reg(b), self.reg(c), defs=[r])

    def op_shfl(self, op: Op) -> None:
        r = op.result
        self.emit(f"shfl.{op.attrs['mode']}", r, self.reg(op.operands[0]),
                  self.reg(op.operands[1]), defs=[r])

    def op_vote(self, op: Op) -> None:
        r = op.result
        self.emit(f"vote.{op.attrs['mode']}", r, self.reg(op.operands[0]), defs=[r])

    def op_barrier(self, op: Op) -> None:
        self.emit("bar")

    def op_fence(self, op: Op) -> None:
        self.emit("fence")

    def op_exit(self, op: Op) -> None:
        self.emit("exit")

    def op_ptx_only(self, op: Op) -> None:
        """The asynchronous copies of PTX's pipelining: this ISA pipelines through registers
        (pipeline.py), so they never reach it."""
        raise CompileError(f"'{op.name}' is a PTX-only op (the ISA pipelines in registers)")

    def guard_of(self, mask: Value) -> tuple[Value | None, bool]:
        g = self.reg(mask)
        if isinstance(g, Sym):
            return (None, g.text == "!pt")
        mo = self.v(mask).owner
        if isinstance(mo, Op) and mo.name == "not":
            return self.reg(mo.operands[0]), True
        return g, False

    def op_load(self, op: Op) -> None:
        r = op.result
        p = op.operands[0]
        if p.type.elem_size < 4:  # a half, an 8/16-bit integer, a bool byte
            half_codegen.isa_load(self, op)
            return
        m = "ldg" if p.type.space == "global" else "lds"
        base, off = self.addr(p)
        if len(op.operands) >= 2:
            g, neg = self.guard_of(op.operands[1])
            if g is None and not neg:
                self.emit(m, r, Mem(base, off), defs=[r])
                return
            if len(op.operands) == 3:
                self.emit("mov", r, self.reg(op.operands[2]), defs=[r])
            if g is None:
                return
            self.emit(m, r, Mem(base, off), defs=[r], guard=g, gneg=neg, partial=True)
            return
        self.emit(m, r, Mem(base, off), defs=[r])

    def write_guard(self, op: Op) -> tuple[Value | None, bool] | None:
        """The guard of a store or atomic from its optional mask (``ir.write_mask``), or
        None when the mask is constant false and nothing is written."""
        mask = ir.write_mask(op)
        if mask is None:
            return None, False
        g, neg = self.guard_of(mask)
        return None if g is None and neg else (g, neg)

    def op_store(self, op: Op) -> None:
        p, val = op.operands[:2]
        m = "stg" if p.type.space == "global" else "sts"
        guard = self.write_guard(op)
        if guard is None:
            return
        g, neg = guard
        if p.type.elem_size < 4:  # a half, an 8/16-bit integer, a bool byte
            half_codegen.isa_store(self, op, g, neg)
            return
        base, off = self.addr(p)
        self.emit(m, Mem(base, off), self.reg(val), guard=g, gneg=neg)

    def op_atomic(self, op: Op) -> None:
        p = op.operands[0]
        prefix = "atom" if p.type.space == "global" else "atoms"
        guard = self.write_guard(op)
        if guard is None:
            return
        g, neg = guard
        r = op.result
        dst = r if self.uses.get(r.id) else Sym("r0")
        base = self.reg(p)
        data = [self.reg(v) for v in op.operands[1:3 if op.attrs["op"] == "cas" else 2]]
        self.emit(f"{prefix}.{op.attrs['op']}", dst, Mem(base, 0), *data,
                  defs=[r] if dst is r else [], guard=g, gneg=neg, partial=dst is r)

    def pmove(self, pairs: list[tuple[Value, Value]]) -> None:
        moves = []
        for d, s in pairs:
            d = self.v(d)
            src = self.reg(s)
            if isinstance(src, Value) and src.id == d.id:
                continue
            moves.append((d, src))
        if moves:
            mi = MI("pmove", [], [d for d, _ in moves])
            mi.moves = moves
            self.code.append(mi)

    def op_for(self, op: Op) -> None:
        lb, ub, step = op.operands[:3]
        body = op.regions[0]
        iv = body.args[0]
        for res, arg in zip(op.results, body.args[1:], strict=True):
            self.alias[res.id] = arg
        self.pmove([(iv, lb)] + list(zip(body.args[1:], op.operands[3:], strict=True)))
        self.code.append(MI("group", group=[]))
        # a chunk loop (chunking.py) with many constants materialises them where they are
        # used, as the unrolled code did, instead of keeping them all live across it
        self.scopes.append({"cache": {}, "loop": "chunks" not in op.attrs
                            or chunking.constants(op) <= chunking.HOISTED_CONSTANTS,
                            "ph": len(self.code) - 1})
        uniform = iv in self.uni
        done, exit_l, loop_l = self.label("L_done"), self.label("L_exit"), self.label("L_loop")
        cond = "lt" if op.attrs.get("step_sign", 1) > 0 else "gt"
        if not uniform:
            self.emit("ssy", Label(done))
        clb, cub = self.const_of(lb), self.const_of(ub)
        if not (clb is not None and cub is not None and (clb < cub if cond == "lt" else
                                                           clb > cub)):
            p = ir.Value(I1)
            self.emit(f"isetp.{'ge' if cond == 'lt' else 'le'}", p, self.reg(iv),
                      self.reg(ub), defs=[p])
            self.emit("bra", Label(exit_l), guard=p)
        start = len(self.code)
        self.emit("label", Label(loop_l))
        self.block(body)
        y = body.terminator
        self.coalesce_yield(body, y, start)
        cstep = self.const_of(step)
        if cstep is not None and _fits11(cstep):
            self.emit("addi", iv, iv, cstep, defs=[iv])
        else:
            self.emit("add", iv, iv, self.reg(step), defs=[iv])
        p = ir.Value(I1)
        self.emit(f"isetp.{cond}", p, iv, self.reg(ub), defs=[p])
        self.emit("bra", Label(loop_l), guard=p)
        self.loops.append((start, len(self.code) - 1))
        self.scopes.pop()
        self.emit("label", Label(exit_l))
        if not uniform:
            self.emit("sync")
            self.emit("label", Label(done))

    def op_while(self, op: Op) -> None:
        """A rotated loop with one copy of the test: ``bra TEST; BODY: body; TEST: test;
        @p bra BODY``, bracketed by ``ssy DONE ... sync`` unless the test is uniform."""
        cond_b, body = op.regions
        for res, ca, ba in zip(op.results, cond_b.args, body.args, strict=True):
            self.alias[res.id] = ba
            self.alias[ca.id] = ba
        self.pmove(list(zip(body.args, op.operands, strict=True)))
        self.code.append(MI("group", group=[]))
        self.scopes.append({"cache": {}, "loop": True, "ph": len(self.code) - 1})
        test = cond_b.terminator.operands[0]
        uniform = test in self.uni
        done, test_l, body_l = (self.label("L_done"), self.label("L_test"),
                                self.label("L_body"))
        if not uniform:
            self.emit("ssy", Label(done))
        self.emit("bra", Label(test_l))
        start = len(self.code)
        self.emit("label", Label(body_l))
        self.scopes.append({"cache": {}, "loop": False})
        self.block(body)
        self.coalesce_yield(body, body.terminator, start, list(body.args))
        self.scopes.pop()
        self.emit("label", Label(test_l))
        self.scopes.append({"cache": {}, "loop": False})
        self.block(cond_b)
        g, neg = self.guard_of(test)
        self.scopes.pop()
        if g is not None:
            self.emit("bra", Label(body_l), guard=g, gneg=neg)
        elif not neg:
            self.emit("bra", Label(body_l))  # always true: only a return leaves the loop
        self.loops.append((start, len(self.code) - 1))
        self.scopes.pop()
        if not uniform:
            self.emit("sync")
            self.emit("label", Label(done))

    def op_yield(self, op: Op) -> None:
        pass  # handled by the owner (for/if/while) after its region

    def coalesce_yield(self, body: ir.Block, y: Op, start: int,
                       args: list[Value] | None = None) -> None:
        """Yield moves for a loop body; a yielded value computed in the body whose last use
        is the yield and that is written after the last read of its carried value takes
        that value's register directly (no move). ``args`` are the carried block arguments
        (a ``for`` body's after its induction variable).

        One scan of the body serves every carried value (the renames do not interact: a
        carried value is a block argument, a renamed one never is)."""
        pairs = []
        yielded = {self.v(v).id for v in y.operands}
        def_at: dict[int, int | None] = {}  # the body's one definition of a value, or None
        last: dict[int, int] = {}  # the body's last instruction reading or writing a value
        for i in range(start, len(self.code)):
            mi = self.code[i]
            for d in {d.id: d for d in mi.defs}:
                def_at[d] = None if d in def_at else i
                last[d] = i
            for u in _mi_uses(mi):
                last[u.id] = i
        renames: dict[int, Value] = {}
        for arg, val in zip(body.args[1:] if args is None else args, y.operands, strict=True):
            val = self.v(val)
            if arg.id not in yielded and self.can_coalesce(arg, val, def_at, last):
                self.alias[val.id] = arg
                renames[val.id] = arg
            else:
                pairs.append((arg, val))
        self.rename(renames)
        self.pmove(pairs)

    def def_index(self, v: Value, start: int) -> int | None:
        idx = None
        for i in range(start, len(self.code)):
            mi = self.code[i]
            if v in mi.defs:  # (values compare by identity)
                if idx is not None:
                    return None
                idx = i
        return idx

    def can_coalesce(self, arg: Value, val: Value, def_at: dict[int, int | None],
                     last: dict[int, int]) -> bool:
        if val is arg or isinstance(val.owner, ir.Block) or val.id in self.alias:
            return False
        if val.id in self.lazy:
            return False
        d = def_at.get(val.id)
        # arg must not be read or written after val's definition; val must not be needed
        # after the yield: it is body-local, so only the yield uses it beyond the code
        # emitted so far; and arg must not be read at the def itself by a
        # multi-instruction expansion (all ours read before writing)
        return d is not None and last.get(arg.id, -1) <= d

    def rename(self, renames: dict[int, Value]) -> None:
        """Replace values (by id) with others in all code so far (the caller sets the
        aliases)."""
        if renames:
            for mi in self.code:
                _replace_values(mi, renames)

    def op_if(self, op: Op) -> None:
        c = op.operands[0]
        then_b, else_b = op.regions
        uniform = c in self.uni
        join, els = self.label("L_join"), self.label("L_else")
        g, neg = self.guard_of(c)
        empty_else = not [o for o in else_b.ops if o.name != "yield"] and not op.results
        if g is None:
            # constant condition (after folding this is rare): take one region
            taken = else_b if neg else then_b
            self.block(taken)
            self.pmove(list(zip(op.results, taken.terminator.operands, strict=True)))
            return
        if not uniform:
            self.emit("ssy", Label(join))
        self.emit("bra", Label(els), guard=g, gneg=not neg)
        start = len(self.code)
        self.scopes.append({"cache": {}, "loop": False})
        self.block(then_b)
        self.if_moves(op, then_b, start)
        self.scopes.pop()
        if not empty_else:
            if uniform:
                self.emit("bra", Label(join))
            else:
                self.emit("sync")
        self.emit("label", Label(els))
        start = len(self.code)
        self.scopes.append({"cache": {}, "loop": False})
        self.block(else_b)
        self.if_moves(op, else_b, start)
        self.scopes.pop()
        if not uniform:
            self.emit("sync")
        self.emit("label", Label(join))

    def if_moves(self, op: Op, b: ir.Block, start: int) -> None:
        pairs = []
        for res, val in zip(op.results, b.terminator.operands, strict=True):
            res = self.v(res)
            val = self.v(val)
            if (not isinstance(val.owner, ir.Block) and val.owner is not op
                    and val.id not in self.lazy
                    and val.id not in self.alias and self.def_index(val, start) is not None
                    and not any(isinstance(p, Value) and p is val for _, p in pairs)):
                self.alias[val.id] = res
                self.rename({val.id: res})
            else:
                pairs.append((res, val))
        self.pmove(pairs)


# The one emitter of each IR op; checked against the IR's op list at import.
_EMITTERS: dict[str, Callable[[ISel, Op], None]] = {
    **dict.fromkeys(ir.INT_BINARY, ISel.int_op),
    **dict.fromkeys(("and", "or", "xor"), ISel.logic_op),
    **dict.fromkeys(_UNIT, ISel.unit_op),
    "const": ISel.lazy_op, "smem": ISel.lazy_op, "gep": ISel.op_gep,
    "ptradd": ISel.op_ptradd, "sreg": ISel.op_sreg, "not": ISel.op_not, "icmp": ISel.op_icmp,
    "fcmp": ISel.op_fcmp, "select": ISel.op_select, "shfl": ISel.op_shfl,
    "vote": ISel.op_vote, "barrier": ISel.op_barrier, "fence": ISel.op_fence,
    "exit": ISel.op_exit, "load": ISel.op_load, "store": ISel.op_store,
    "atomic": ISel.op_atomic, "for": ISel.op_for, "if": ISel.op_if, "yield": ISel.op_yield,
    "while": ISel.op_while, **dict.fromkeys(ir.ASYNC_COPY_OPS, ISel.op_ptx_only),
    **dict.fromkeys(ir.HALF_OPS, half_codegen.isa_half_op), "mma": half_codegen.isa_mma,
    **dict.fromkeys(("sext", "zext", "trunc"), ISel.op_wide),
    "inttoptr": ISel.op_same_bits, "ptrtoint": ISel.op_same_bits, "bitcast": ISel.op_same_bits,
}
ir.check_op_table(_EMITTERS, "the ISA code generator")


def _mi_uses(mi: MI) -> list[Value]:
    """Registers an instruction reads (a guarded def also 'reads' its destination: lanes
    outside the guard keep the old value)."""
    if mi.op == "pmove":
        return [s for _, s in mi.moves if isinstance(s, Value)]
    args = mi.args[1:] if mi.defs and mi.args and mi.args[0] is mi.defs[0] else mi.args
    out: list[Value] = []
    for a in args:
        if isinstance(a, Value):
            out.append(a)
        elif isinstance(a, Mem) and isinstance(a.base, Value):
            out.append(a.base)
    if mi.guard is not None:
        out.append(mi.guard)
    if mi.partial:
        out.extend(mi.defs)
    return out


# ---------------------------------------------------------------------------------------
# Register allocation

class PredicatePressure(CompileError):
    """More predicates live than registers; carries the live candidates for spilling."""

    def __init__(self, message: str, live: list[tuple[int, Value]]):
        super().__init__(message)
        self.live = live


class GprPressure(PredicatePressure):
    """More general-purpose values live than registers; ``spans`` gives each live value's
    first and last instruction (before loop extension: where it is read or written)."""

    def __init__(self, message: str, live: list[tuple[int, Value]],
                 spans: dict[int, tuple[int, int]]):
        super().__init__(message, live)
        self.spans = spans


class SpillReach(CompileError):
    """The shared spill area lies beyond an immediate offset's reach."""


class CodeTooLong(CompileError):
    """The code under allocation already holds more instructions than the budget allows.
    Allocation rounds only add instructions (reloads, stores, re-derived predicates), so
    the finished code would be longer still: raised at the round that passes the budget
    rather than after all of them."""

    def __init__(self, instructions: int, budget: int, spilled: int):
        super().__init__(f"more than {budget} instructions ({instructions} already, "
                         + (f"with {spilled} values spilled so far" if spilled else
                            "before any register is allocated") + ")")
        self.instructions = instructions
        self.budget = budget
        self.spilled = spilled


def _length(code: list[MI]) -> int:
    """Instructions ``code`` assembles into at least (labels none, a parallel copy none or
    more, a pre-header group its members)."""
    return sum(len(mi.group) if mi.group else mi.op not in ("label", "pmove") for mi in code)


@dataclass
class SpillStride:
    """Bytes between two threads' spill areas, known once spilling is finished."""

    value: int = 0

    def __str__(self) -> str:
        return str(self.value)


def _replace_values(mi: MI, new: dict[int, Value]) -> None:
    """Replace the values whose ids ``new`` maps, in ``mi`` and the instructions it groups."""

    def sub(a):
        if isinstance(a, Value):
            return new.get(a.id, a)
        if isinstance(a, Mem) and isinstance(a.base, Value) and a.base.id in new:
            return Mem(new[a.base.id], a.offset)
        return a

    mi.args = [sub(a) for a in mi.args]
    mi.defs = [new.get(d.id, d) for d in mi.defs]
    if mi.guard is not None:
        mi.guard = new.get(mi.guard.id, mi.guard)
    if mi.moves:
        mi.moves = [(sub(d), sub(s)) for d, s in mi.moves]
    for child in mi.group or ():
        _replace_values(child, new)


def spill_gpr(code: list[MI], loops: list[tuple[int, int]], spills: list[tuple[Value, int]],
              stride: SpillStride, uses: UseCache | None = None, local: bool = False,
              window: tuple[int, int] | None = None
              ) -> tuple[list[MI], list[tuple[int, int]]]:
    """Keep each ``v`` of ``spills`` in this thread's word of shared memory at ``offset +
    tid * stride``: reload it into a short-lived register before each use and store it after
    each definition (``s2r r31, tid; muli r31, r31, stride; lds/sts [r31+offset]``). With
    ``local``, the word is in local memory at ``offset`` from this thread's address in r30
    (``ldg/stg [r30+offset]``, or ``li r31, offset; add r31, r31, r30`` first when the
    offset is beyond an immediate's reach).

    One pass serves the whole batch and gives the code of spilling them one after another:
    the reloads before an instruction in batch order, its stores in reverse order, and the
    short-lived registers numbered value by value. ``window`` (first, last), when given,
    holds every instruction that reads or writes a value of ``spills`` (the allocator knows
    their live ranges): only those are visited, the code around is kept as it is."""
    for _, offset in spills:
        if offset > IMM_MAX and not local:
            raise SpillReach("the kernel needs more registers than this GPU has and its "
                               "spill area lies beyond the reach of a memory offset; use a "
                               "smaller BLOCK, more warps or less shared memory")
    scratch = Sym(f"r{SCRATCH_GPR}")
    uses = UseCache() if uses is None else uses
    cached, fill = uses.get, uses.fill
    index = {v.id: k for k, (v, _) in enumerate(spills)}
    # (position, used, defined) of each instruction touching a spilled value, per value
    hits: list[list[tuple[int, bool, bool]]] = [[] for _ in spills]
    lo, hi = (0, len(code) - 1) if window is None else window
    for i in range(lo, hi + 1):
        mi = code[i]
        used = cached(id(mi))
        if used is None:
            used = fill(mi)
        seen = None
        for u in used:
            k = index.get(u.id)
            if k is not None:
                if seen is None:
                    seen = {}
                seen[k] = True
        for d in mi.defs:
            k = index.get(d.id)
            if k is not None:
                if seen is None:
                    seen = {}
                seen.setdefault(k, False)
        if seen is not None:
            for k, was_used in seen.items():
                v = spills[k][0]
                hits[k].append((i, was_used, v in mi.defs))
    # short-lived registers in the order one-by-one spilling creates them
    temps: dict[tuple[int, int], Value] = {}
    for k, (v, _) in enumerate(spills):
        for i, _, _ in hits[k]:
            temps[(i, k)] = ir.Value(v.type)
    at: dict[int, list[int]] = {}
    for k in range(len(spills)):
        for i, _, _ in hits[k]:
            at.setdefault(i, []).append(k)
    flags = {(i, k): (used, defined) for k in range(len(spills)) for i, used, defined in hits[k]}

    base = Sym(f"r{LOCAL_GPR}")
    load, store = ("ldg", "stg") if local else ("lds", "sts")

    def addr(offset: int) -> tuple[list[MI], Mem]:
        if not local:
            return ([MI("s2r", [scratch, Sym("tid")]), MI("muli", [scratch, scratch, stride])],
                    Mem(scratch, offset))
        if offset <= IMM_MAX:
            return [], Mem(base, offset)
        return [MI("li", [scratch, offset]), MI("add", [scratch, scratch, base])], Mem(scratch, 0)

    out: list[MI] = code[:lo]
    where: list[int] = []  # new index of instruction lo + j
    placed: list[int] | None = []  # new index of instruction lo + j itself (after reloads)
    fresh: list[tuple[Value, int, int]] = []  # the short-lived registers' live positions
    for i in range(lo, hi + 1):
        mi = code[i]
        where.append(len(out))
        ks = at.get(i)
        if ks is None:
            if placed is not None:
                placed.append(len(out))
            out.append(mi)
            continue
        ks.sort()
        if (mi.op == "pmove" and local) or mi.clobbers:
            placed = None  # (values move to other instructions: positions are rescanned)
        if mi.op == "pmove" and local:  # (shared spilling keeps its code as it was)
            out += _spill_pmove(mi, index, spills, addr, load, store)
            uses.drop(mi)
            continue
        stores: list[MI] = []
        temp_at: list[tuple[Value, int, MI | None]] = []  # (temp, reload index, its store)
        for k in ks:
            v, offset = spills[k]
            t = temps[(i, k)]
            used, defined = flags[(i, k)]
            reload = -1
            if used:  # (a reload inside an mma sequence stays off the mma registers)
                pre, mem = addr(offset)
                out += pre
                reload = len(out)
                out.append(MI(load, [t, mem], [t], clobbers=mi.clobbers))
            _replace_values(mi, {v.id: t})
            uses.drop(mi)
            st = None
            if defined:
                pre, mem = addr(offset)
                st = MI(store, [mem, t])
                stores = pre + [st] + stores
            temp_at.append((t, reload, st))
        me = len(out)
        if placed is not None:
            placed.append(me)
        out.append(mi)
        out += stores
        for t, reload, st in temp_at:  # (a reload defines it, a store reads it)
            first = 2 * reload + 1 if reload >= 0 else 2 * me + 1
            last = 2 * me if st is None else \
                2 * (me + 1 + next(j for j, x in enumerate(stores) if x is st))
            fresh.append((t, first, last))
    shift = len(out) - hi - 1  # (instructions after the window move by the code added)
    out += code[hi + 1:]
    if uses.positions is not None and uses.positions.code is code and window is not None:
        uses.positions.respill(out, uses, lo, hi, shift, set(index), placed, fresh)

    def moved(i: int) -> int:
        return i if i < lo else where[i - lo] if i <= hi else i + shift

    return out, [(moved(s), moved(e + 1) - 1) for s, e in loops]


def _spill_pmove(mi: MI, index: dict[int, int], spills: list[tuple[Value, int]], addr,
                 load: str, store: str) -> list[MI]:
    """A parallel copy touching spilled values, without holding them all in registers at
    once (a loop's carried values can outnumber the registers): a move into a spilled value
    becomes a store before the copy (its source read before the copy writes anything), a
    move from one a load after it; a source whose word the copy also writes is read first.
    """
    before: list[MI] = []
    stores: list[MI] = []
    after: list[MI] = []
    moves = []
    written = {index[d.id] for d, _ in mi.moves if d.id in index}
    for d, src in mi.moves:
        dk = index.get(d.id)
        sk = index.get(src.id) if isinstance(src, Value) else None
        if sk is not None and (dk is not None or sk in written):
            t = ir.Value(src.type)
            pre, mem = addr(spills[sk][1])
            before += pre + [MI(load, [t, mem], [t])]
            src, sk = t, None
        if dk is None and sk is None:
            moves.append((d, src))
        elif dk is None:
            pre, mem = addr(spills[sk][1])
            after += pre + [MI(load, [d, mem], [d])]
        else:
            pre, mem = addr(spills[dk][1])
            stores += pre + [MI(store, [mem, src])]
    mi.moves = moves
    mi.defs = [d for d, _ in moves]
    return before + stores + [mi] + after


def spill_predicate(code: list[MI], loops: list[tuple[int, int]], v: Value,
                    uses: UseCache | None = None
                    ) -> tuple[list[MI], list[tuple[int, int]]] | None:
    """Keep predicate ``v`` as 0/1 in a general register and re-derive it before each use
    (``mov g, r0; @v addi g, r0, 1`` after its definition, ``isetp.ne t, g, r0`` before a
    use). Returns the rewritten code, or None when ``v`` is not a simple single definition.
    Where the allocator knows ``v``'s live range (``uses.positions``), only that window is
    visited and the positions are carried to the next round (:meth:`_Positions.respill`),
    as :func:`spill_gpr` does: the code is the same."""
    uses = UseCache() if uses is None else uses
    known = uses.positions
    if known is not None and known.code is code and v.id in known.start:
        lo, hi = known.start[v.id] // 2, known.end[v.id] // 2  # (every sighting of v)
    else:
        known, lo, hi = None, 0, len(code) - 1
    defs = [i for i in range(lo, hi + 1) if v in code[i].defs]  # (values: by identity)
    if len(defs) != 1 or code[defs[0]].op in ("pmove", "group") or code[defs[0]].partial:
        return None
    cached, fill = uses.get, uses.fill
    g = ir.Value(ir.I32)
    out: list[MI] = code[:lo]
    where: list[int] = []  # new index of instruction lo + j (its isetp where it has one)
    placed: list[int] = []  # new index of instruction lo + j itself
    fresh: list[tuple[Value, int, int]] = []  # the new values' first and last positions
    g_seen: list[int] = []
    for i in range(lo, hi + 1):
        mi = code[i]
        where.append(len(out))
        used = cached(id(mi))
        if used is None:
            used = fill(mi)
        if v in used:
            uses.drop(mi)
            t = ir.Value(I1)
            k = len(out)
            out.append(MI("isetp.ne", [t, g, Sym("r0")], [t]))
            where[-1] = k if mi.op != "label" else k + 1
            mi.args = [t if a is v else a for a in mi.args]
            if mi.guard is v:
                mi.guard = t
            if mi.moves:
                mi.moves = [(d, t if s is v else s) for d, s in mi.moves]
            fresh.append((t, 2 * k + 1, 2 * (k + 1)))  # (the isetp defines it, mi reads it)
            g_seen.append(2 * k)
        placed.append(len(out))
        out.append(mi)
        if i == defs[0]:
            m = len(out)
            out.append(MI("mov", [g, Sym("r0")], [g]))
            out.append(MI("addi", [g, Sym("r0"), 1], [g], guard=v, partial=True))
            fresh.append((v, 2 * (m - 1) + 1, 2 * (m + 1)))  # (defined, read as the guard)
            g_seen += [2 * m + 1, 2 * (m + 1) + 1]
    fresh.append((g, min(g_seen), max(g_seen)))
    shift = len(out) - hi - 1  # (instructions after the window move by the code added)
    out += code[hi + 1:]
    if known is not None:
        known.respill(out, uses, lo, hi, shift, {v.id}, placed, fresh)

    def moved(i: int) -> int:
        return i if i < lo else where[i - lo] if i <= hi else i + shift

    return out, [(moved(s), moved(e + 1) - 1) for s, e in loops]


def _sightings(code: list[MI], uses: UseCache, first: int, last: int):
    """First and last position of each value read or written by ``code[first:last + 1]``
    (uses of instruction i at 2i, definitions at 2i + 1), the values by id, and the
    positions of instructions that clobber registers with the mask of those registers."""
    cached, fill = uses.get, uses.fill
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    vals: dict[int, Value] = {}
    clobbered: list[tuple[int, int]] = []
    pos = 2 * first
    for i in range(first, last + 1):  # positions rise: a first sighting starts, a last ends
        mi = code[i]
        used = cached(id(mi))
        if used is None:
            used = fill(mi)
        for v in used:
            vid = v.id
            if vid not in end:
                start[vid] = pos
                vals[vid] = v
            end[vid] = pos
        pos += 1
        for v in mi.defs:
            vid = v.id
            if vid not in end:
                start[vid] = pos
                vals[vid] = v
            end[vid] = pos
        if mi.clobbers:
            clobbered.append((pos, sum(1 << r for r in mi.clobbers)))
        pos += 1
    return start, end, vals, clobbered


@dataclass
class _Positions:
    """The sightings of one code list (:func:`_sightings` of all of it), kept between
    allocation rounds: a spill rewrites a window of the code, so the next round rescans
    only that window and moves the positions after it."""

    code: list[MI]
    start: dict[int, int]
    end: dict[int, int]  # last sighting, before loop extension
    vals: dict[int, Value]
    clobbered: list[tuple[int, int]]
    # the scan's state every SNAPSHOT_EVERY intervals: (seq, start of interval seq, heap of
    # the active intervals, free registers), and the registers it assigned: a round resumes
    # from the last state before the code the spill changed
    states: list[tuple[int, int, list, dict[str, int]]] = field(default_factory=list)
    assign: dict[int, str] = field(default_factory=dict)

    def respill(self, code: list[MI], uses: UseCache, lo: int, hi: int, shift: int,
                gone: set[int], placed: list[int] | None = None,
                fresh: list[tuple[Value, int, int]] = ()) -> None:
        """Follow the spill that rewrote ``self.code[lo:hi + 1]`` into ``code[lo:hi + shift
        + 1]`` and took the values ``gone`` (all their sightings in that window) out. With
        ``placed`` (the new index of each instruction of the window) and ``fresh`` (the
        values the spill added, with their first and last positions), every other value's
        sightings stayed on their instructions and only move; without, the window is
        rescanned."""
        cut, d, lo2 = 2 * (hi + 1), 2 * shift, 2 * lo
        start, end, vals = self.start, self.end, self.vals
        for vid in gone:
            del start[vid], end[vid], vals[vid]
            self.assign.pop(vid, None)
        self.states = [st for st in self.states if st[1] < lo2]
        if placed is not None:
            def moved(p: int) -> int:  # (a position in the window follows its instruction)
                return p if p < lo2 else p + d if p >= cut else 2 * placed[(p >> 1) - lo] + (p & 1)

            start = {k: moved(p) for k, p in start.items()}
            end = {k: moved(p) for k, p in end.items()}
            for t, first, last in fresh:
                start[t.id], end[t.id], vals[t.id] = first, last, t
            self.clobbered = [(moved(p), m) for p, m in self.clobbered]
            self.code, self.start, self.end = code, start, end
            return
        ws, we, wv, wc = _sightings(code, uses, lo, hi + shift)
        if d:
            start = {k: p + d if p >= cut else p for k, p in start.items()}
            end = {k: p + d if p >= cut else p for k, p in end.items()}
        for vid, p in ws.items():
            s0 = start.get(vid)
            if s0 is None or s0 >= lo2:  # (a value in the window starts there or before)
                start[vid] = p
                vals[vid] = wv[vid]
            e0 = end.get(vid)
            if e0 is None or e0 < cut + d:  # (and ends there or after)
                end[vid] = we[vid]
        self.clobbered = ([c for c in self.clobbered if c[0] < lo2] + wc
                          + [(p + d, m) for p, m in self.clobbered if p >= cut])
        self.code, self.start, self.end = code, start, end


def allocate(code: list[MI], loops: list[tuple[int, int]],
             uses: UseCache | None = None, gprs: tuple[int, ...] = GPRS) -> dict[int, str]:
    """Linear scan: map each virtual register to one of ``gprs`` (r1..r30) or p0..p5, the
    lowest free one. A value live across an instruction that ``clobbers`` (an mma sequence)
    avoids the fixed mma registers."""
    uses = UseCache() if uses is None else uses
    known = uses.positions
    if known is None or known.code is not code:
        known = uses.positions = _Positions(code, *_sightings(code, uses, 0, len(code) - 1))
    start, vals, clobbered = known.start, known.vals, known.clobbered
    end = dict(known.end)  # (extended below)
    if loops:  # a value live into a loop lives through it (the least fixed point)
        spans = [(2 * s, 2 * e + 1) for s, e in loops]
        first = min(s for s, _ in spans)
        last = max(e for _, e in spans)
        for vid, s0 in start.items():
            e0 = end[vid]
            if e0 < first or s0 >= last:
                continue
            grown = True
            while grown:
                grown = False
                for ls, le in spans:
                    if s0 < ls <= e0 < le:
                        e0 = le
                        grown = True
            end[vid] = e0
    order = sorted(sorted(start), key=start.__getitem__)  # by (start, id)
    kinds: dict[int, str] = {}  # register class by type object (types compare slowly)
    assign, states = known.assign, known.states
    names = {c: [f"{c}{r}" for r in range(32)] for c in ("r", "p")}
    clobber_pos = [p for p, _ in clobbered]
    active: list[tuple[int, int, int, str, int]]  # heap of (end, seq, vid, cls, reg)
    if states:  # (the intervals before it are the same, their ends may have moved)
        first_seq, _, was, free = states[-1]
        active = [(end[a[2]], *a[1:]) for a in was]
        heapq.heapify(active)
        free = dict(free)
    else:
        first_seq, active = 0, []
        # the free registers of each class as a bit mask (the lowest set bit: the lowest)
        free = {"r": sum(1 << r for r in gprs), "p": sum(1 << r for r in PREDS)}
    heappop, heappush = heapq.heappop, heapq.heappush
    for seq in range(first_seq, len(order)):
        vid = order[seq]
        s0 = start[vid]
        if not seq % SNAPSHOT_EVERY and (not states or states[-1][0] < seq):
            states.append((seq, s0, list(active), dict(free)))
        while active and active[0][0] < s0:
            _, _, _, c, r = heappop(active)
            free[c] |= 1 << r
        e0 = end[vid]
        t = vals[vid].type
        cls = kinds.get(id(t))
        if cls is None:
            cls = kinds[id(t)] = "p" if t == I1 else "r"
        pool = free[cls]
        if cls == "r" and clobbered:
            k, k_end = (bisect.bisect_left(clobber_pos, s0),
                        bisect.bisect_right(clobber_pos, e0))
            for _, c in clobbered[k:k_end]:
                pool &= ~c
        if not pool:
            live = sorted((a for a in active if a[3] == cls), key=lambda a: a[1])
            live_vals = [(a[0], vals[a[2]]) for a in live] + [(e0, vals[vid])]
            n = len(live) + 1
            if cls == "p":
                raise PredicatePressure(
                    f"the kernel needs more than {len(PREDS)} predicate registers ({n} live "
                    "at once); use a smaller BLOCK or more warps (num_warps)", live_vals)
            raise GprPressure(
                f"the kernel needs more than {len(gprs)} general-purpose registers ({n} live "
                "at once)", live_vals,
                {v.id: (start[v.id] // 2, known.end[v.id] // 2) for _, v in live_vals})
        reg = (pool & -pool).bit_length() - 1
        free[cls] &= ~(1 << reg)
        assign[vid] = names[cls][reg]
        heappush(active, (e0, seq, vid, cls, reg))
    return assign


SNAPSHOT_EVERY = 256
"""Intervals between two saved states of the linear scan (:class:`_Positions`)."""


class UseCache(dict):
    """The registers each instruction reads (:func:`_mi_uses`), by instruction identity, for
    the allocation rounds of one kernel; a pass that rewrites an instruction drops it. Look
    up with ``cache.get(id(mi)) or cache.fill(mi)``. It also keeps the positions of the code
    allocated last (:class:`_Positions`), which :func:`spill_gpr` brings up to date."""

    def fill(self, mi: MI) -> list[Value]:
        uses = _mi_uses(mi)
        self[id(mi)] = uses
        self.keep.append(mi)  # (an id stays unique while its instruction lives)
        return uses

    def drop(self, mi: MI) -> None:
        self.pop(id(mi), None)

    def __init__(self) -> None:
        super().__init__()
        self.keep: list[MI] = []
        self.positions: _Positions | None = None  # of the code allocated last


# ---------------------------------------------------------------------------------------
# Emission

def _fmt(a, regs: dict[int, str]) -> str:
    if isinstance(a, Value):
        return regs[a.id]
    if isinstance(a, Sym):
        return a.text
    if isinstance(a, Label):
        return a.name
    if isinstance(a, Mem):
        base = _fmt(a.base, regs)
        if a.offset:
            return f"[{base}{'+' if a.offset > 0 else '-'}{abs(a.offset)}]"
        return f"[{base}]"
    if isinstance(a, int):
        return str(a) if IMM_MIN <= a <= IMM_MAX or a < 0 else hex(a)
    return str(a)  # SpillStride and others print their value


def _expand_pmove(moves: list[tuple[Value, Value | Sym]], regs: dict[int, str]) -> list[str]:
    """Sequentialise a parallel copy, breaking cycles with the scratch register."""
    pending = []
    for d, s in moves:
        dr = regs[d.id]
        sr = s.text if isinstance(s, Sym) else regs[s.id]
        if dr != sr:
            pending.append((dr, sr))
    out: list[str] = []

    def mv(d: str, s: str) -> str:
        if d.startswith("p"):
            if s in ("pt", "!pt"):
                return f"pand {d}, pt, pt" if s == "pt" else f"pxor {d}, pt, pt"
            return f"pand {d}, {s}, pt"
        return f"mov {d}, {s}"

    while pending:
        srcs = {s for _, s in pending}
        ready = [(d, s) for d, s in pending if d not in srcs]
        if ready:
            for d, s in ready:
                out.append(mv(d, s))
            pending = [m for m in pending if m not in ready]
            continue
        d, s = pending[0]
        tmp = f"p{SCRATCH_PRED}" if d.startswith("p") else f"r{SCRATCH_GPR}"
        out.append(mv(tmp, s))
        pending = [(dd, tmp if ss == s else ss) for dd, ss in pending]
    return out


def param_kind(t: ir.Type) -> str:
    """A parameter's kind in a compiled kernel: ptr, f32, i32, u32, i64 or u64 (a 64-bit
    integer is two parameter words on this ISA, one 8-byte parameter in PTX)."""
    if t.is_ptr:
        return "ptr"
    if t == F32:
        return "f32"
    bits = "64" if t == ir.I64 else "32"
    return ("u" if t.unsigned else "i") + bits


@dataclass
class IsaResult:
    text: str
    registers: int
    instructions: int
    spilled: int = 0  # values kept in memory for want of registers
    spill_space: str = ""  # where they are: "shared", "local" or "" (none)
    local_bytes: int = 0  # bytes of local memory per thread (the driver allocates them)


def generate(fn: Function, shared_limit: int | None = None,
             budget: int | None = None) -> IsaResult:
    """IR (after passes) to assembly text for one kernel. Spilled registers stay in shared
    memory (faster) while the spill area fits in front of the kernel's shared data, within
    ``shared_limit`` bytes and an immediate offset's reach; otherwise they go to per-thread
    local memory in device memory (docs/execution-model.md). With ``budget`` (instructions),
    :class:`CodeTooLong` as soon as the code is known to exceed it: shared spilling costs
    three instructions an access and local spilling one, so a kernel too long with the one
    is tried with the other before it is refused."""
    try:
        res = _generate_shared(fn, budget)
    except SpillReach:
        return _generate_local(fn, budget)
    except CodeTooLong as e:
        if not e.spilled:  # (selection alone is too long: local spilling cannot help)
            raise
        return _generate_local(fn, budget)
    if res.spilled and shared_limit is not None and \
            shared_size(res.text) > shared_limit:
        return _generate_local(fn, budget)
    return res


def shared_size(text: str) -> int:
    """The ``.shared`` bytes of a kernel's assembly text (0 without the directive)."""
    for line in text.splitlines()[1:]:
        if line.strip().startswith(".shared "):
            return int(line.split()[1])
    return 0


def _generate_local(fn: Function, budget: int | None = None) -> IsaResult:
    """Spill to local memory: r30 holds this thread's address there, so allocation has
    one register fewer."""
    isel = ISel(fn, 0)
    code = isel.run()
    code, loops, regs, spill_slots, _ = _allocate_spilling(code, isel.loops, fn.threads,
                                                           budget)
    return _emit(fn, code, regs, fn.shared_bytes, spill_slots, local=spill_slots > 0)


def _generate_shared(fn: Function, budget: int | None = None) -> IsaResult:
    reserve = 0  # spill slots per thread reserved at the front of shared memory
    isel = ISel(fn, 0)
    first = isel.run()
    if budget is not None and (n := _length(first)) > budget:
        raise CodeTooLong(n, budget, 0)  # (before the shape, a walk of all of it)
    first_loops = list(isel.loops)
    shape = _shape(first)  # (before allocation rewrites the instructions)
    code, loops, regs, spill_slots, stride = _allocate_spilling(first, isel.loops,
                                                                budget=budget)
    for _ in range(6):
        if spill_slots <= reserve:
            break
        reserve = spill_slots + 2  # shared offsets move: allocate again with room to spare
        isel = ISel(fn, reserve * 4 * fn.threads)
        again = isel.run()
        if shape is not None and isel.loops == first_loops and \
                _shape(again) == shape:
            # only immediates moved (no shared address changed form): the allocation is
            # the same, so the first one serves with the new immediates
            _move_immediates(first, again)
            break
        shape = None
        code, loops, regs, spill_slots, stride = _allocate_spilling(again, isel.loops,
                                                                    budget=budget)
    else:
        raise CompileError("register allocation with spilling did not settle")
    stride.value = 4 * reserve
    spill_bytes = reserve * 4 * fn.threads
    shared = spill_bytes + fn.shared_bytes
    return _emit(fn, code, regs, shared, spill_slots)


def _flat(code: list[MI]) -> list[MI]:
    return [c for mi in code for c in ((mi, *mi.group) if mi.group else (mi,))]


def _shape(code: list[MI]) -> tuple | None:
    """Instruction selection's output with registers numbered by first appearance and
    immediates left out: two selections of one shape allocate alike."""
    number: dict[int, int] = {}
    ids: list[int] = []

    def reg(v) -> object:
        if isinstance(v, Value):
            n = number.get(v.id)
            if n is None:
                n = number[v.id] = len(number)
                ids.append(v.id)
            return n, v.type
        if isinstance(v, Mem):
            return "mem", reg(v.base)
        if isinstance(v, int):
            return "imm"
        return repr(v)

    out = []
    for mi in _flat(code):
        out.append((mi.op, tuple(reg(a) for a in mi.args), tuple(reg(d) for d in mi.defs),
                    reg(mi.guard), mi.gneg, mi.partial, mi.clobbers, bool(mi.group),
                    tuple((reg(d), reg(s)) for d, s in mi.moves or ())))
    # registers are allocated in order of (start, id): the ids must rank alike
    rank = tuple(number[i] for i in sorted(ids))
    return tuple(out), rank


def _move_immediates(first: list[MI], again: list[MI]) -> None:
    """Give the (allocated) instructions of ``first`` the immediates of ``again``."""
    for a, b in zip(_flat(first), _flat(again), strict=True):
        a.args = [y if isinstance(y, int) else Mem(x.base, y.offset) if isinstance(y, Mem)
                  else x for x, y in zip(a.args, b.args, strict=True)]


def _allocate_spilling(code: list[MI], loops: list[tuple[int, int]], local_threads: int = 0,
                       budget: int | None = None):
    """Allocation; values that do not fit go to this thread's spill words at the front of
    shared memory (``tid * stride + 4 * slot``), or with ``local_threads`` (the block's
    threads) to local memory at ``4 * local_threads * slot`` from this thread's address in
    r30 (slot-major: a warp's lanes spill to consecutive words). :class:`CodeTooLong` once
    the code passes ``budget`` instructions (checked before each round)."""
    gprs = tuple(r for r in GPRS if r != LOCAL_GPR) if local_threads else GPRS
    step = 4 * local_threads if local_threads else 4
    spilled: set[int] = set()
    spill_slots = 0
    stride = SpillStride()
    uses = UseCache()
    length = _length(code)  # (every spill adds only instructions: updated by the growth)
    while True:
        if budget is not None and length > budget:
            raise CodeTooLong(length, budget, len(spilled))
        before = len(code)
        try:
            regs = allocate(code, loops, uses, gprs)
            break
        except GprPressure as e:
            # spill the live values whose intervals reach furthest to shared memory (a few
            # more per round as spilling goes on, so big kernels allocate in few rounds)
            batch = 1 + len(spilled) // 4
            chosen: list[tuple[Value, int]] = []
            for _, v in sorted(e.live, key=lambda x: -x[0]):
                if v.id in spilled:
                    continue
                spilled.add(v.id)
                chosen.append((v, step * (spill_slots + len(chosen))))
                if len(chosen) == batch:
                    break
            if not chosen:
                raise CompileError(str(e)) from None
            window = (min(e.spans[v.id][0] for v, _ in chosen),
                      max(e.spans[v.id][1] for v, _ in chosen))
            code, loops = spill_gpr(code, loops, chosen, stride, uses, bool(local_threads),
                                    window)
            spill_slots += len(chosen)
        except PredicatePressure as e:
            # spill the live predicate whose interval reaches furthest
            for _, v in sorted(e.live, key=lambda x: -x[0]):
                if v.id in spilled:
                    continue
                spilled.add(v.id)
                res = spill_predicate(code, loops, v, uses)
                if res is not None:
                    code, loops = res
                    break
            else:
                raise CompileError(str(e)) from None
        length += len(code) - before
    return code, loops, regs, spill_slots, stride


def _local_prologue(slots: int, threads: int) -> list[str]:
    """r30 = this thread's local-memory address: the area's base (the hidden parameter) +
    4 * (block * slots * threads + tid), the block numbered linearly with x fastest. Slot
    ``s`` is at ``r30 + 4 * threads * s``."""
    r, t = f"r{LOCAL_GPR}", f"r{SCRATCH_GPR}"
    chunk = slots * threads
    scale = [f"muli {r}, {r}, {chunk}"] if chunk <= IMM_MAX else \
        [f"li {t}, {chunk}", f"mul {r}, {r}, {t}"]
    return [f"s2r {r}, ctaid.z", f"s2r {t}, nctaid.y", f"mul {r}, {r}, {t}",
            f"s2r {t}, ctaid.y", f"add {r}, {r}, {t}", f"s2r {t}, nctaid.x",
            f"mul {r}, {r}, {t}", f"s2r {t}, ctaid.x", f"add {r}, {r}, {t}", *scale,
            f"s2r {t}, tid", f"add {r}, {r}, {t}", f"shli {r}, {r}, 2",
            f"ldparam {t}, {LOCAL_PARAM}", f"add {r}, {r}, {t}"]


def _emit(fn: Function, code: list[MI], regs: dict[int, str], shared: int,
          spill_slots: int, local: bool = False) -> IsaResult:
    lines = [f".kernel {fn.name}"]
    for p in fn.params:
        lines.append(f"    .param {p.name}, {param_kind(p.type)}")
    if local:
        lines.append(f"    .param {LOCAL_PARAM}, ptr")
    if shared:
        lines.append(f"    .shared {shared}")
    count = 0
    used_regs = 0
    if local:
        for text in _local_prologue(spill_slots, fn.threads):
            lines.append(f"        {text}")
            count += 1
    flat: list[MI] = []
    for mi in code:
        flat.extend(mi.group if mi.op == "group" else [mi])
    for mi in flat:
        if mi.op == "label":
            lines.append(f"{mi.args[0].name}:")
            continue
        if mi.op == "pmove":
            for text in _expand_pmove(mi.moves, regs):
                lines.append(f"        {text}")
                count += 1
            continue
        g = ""
        if mi.guard is not None:
            g = f"@{'!' if mi.gneg else ''}{regs[mi.guard.id]} "
        elif mi.gneg:
            g = "@!pt "
        args = ", ".join(_fmt(a, regs) for a in mi.args)
        lines.append(f"    {g:>5}{mi.op} {args}".rstrip())
        count += 1
    for r in regs.values():
        if r.startswith("r"):
            used_regs = max(used_regs, int(r[1:]))
    if local:
        used_regs = max(used_regs, LOCAL_GPR)
    lines.append(".end")
    space = ("local" if local else "shared") if spill_slots else ""
    return IsaResult("\n".join(lines) + "\n", used_regs + 1, count, spill_slots, space,
                     4 * spill_slots if local else 0)
