"""Code generator for PTX (``.version 8.0``, ``sm_80``/``sm_90``, 64-bit addresses).

Each IR value gets its own PTX virtual register (ptxas allocates). The op order is the IR's,
and FP32 arithmetic uses the ``.rn.ftz`` forms, so adds, multiplies and fused multiply-adds
give the same bits as this GPU's ISA (which flushes denormals the same way). Special
functions use the ``.approx.ftz`` forms (their results may differ in the last ulps).
Global pointers are 64-bit (``cvta.to.global`` on each pointer parameter); shared pointers
are 32-bit offsets from the kernel's ``smem`` array. ``_EMITTERS`` holds one emitter per IR
op, checked against the IR's op list at import.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from . import half_codegen, ir, vectorize
from .errors import CompileError
from .ir import F32, I1, I32, I64, Function, Op, Value, const_value

_INT = {"add": "add.s32", "sub": "sub.s32", "mul": "mul.lo.s32", "mulhi": "mul.hi.s32",
        "mulhu": "mul.hi.u32", "and": "and.b32", "or": "or.b32", "xor": "xor.b32",
        "shl": "shl.b32", "shr": "shr.u32", "sra": "shr.s32", "min": "min.s32",
        "max": "max.s32", "minu": "min.u32", "maxu": "max.u32"}
# the same ops on 64-bit integers (tl.int64: .s64 registers; shift amounts are .u32)
_INT64 = {n: i.replace("32", "64") for n, i in _INT.items()}
_FLOAT = {"fadd": "add.rn.ftz.f32", "fsub": "sub.rn.ftz.f32", "fmul": "mul.rn.ftz.f32",
          "fmin": "min.ftz.f32", "fmax": "max.ftz.f32", "fneg": "neg.ftz.f32",
          "fabs": "abs.ftz.f32", "ffma": "fma.rn.ftz.f32", "rcp": "rcp.approx.ftz.f32",
          "rsqrt": "rsqrt.approx.ftz.f32", "sqrt": "sqrt.approx.ftz.f32",
          "exp2": "ex2.approx.ftz.f32", "log2": "lg2.approx.ftz.f32",
          "sin": "sin.approx.ftz.f32", "cos": "cos.approx.ftz.f32"}
_CVT = {"i2f": "cvt.rn.f32.s32", "u2f": "cvt.rn.f32.u32", "f2i": "cvt.rzi.ftz.s32.f32",
        "f2u": "cvt.rzi.ftz.u32.f32"}
_UNIT = {**_FLOAT, **_CVT}  # ops that are one instruction on registers
# register class -> PTX type (16-bit float values live in "r" registers, low half; "h"
# registers are the 16-bit operands of conversions)
_REG_TYPE = {"p": "pred", "r": "b32", "f": "f32", "rd": "b64", "h": "b16"}
_PRED = {"and": "and.pred", "or": "or.pred", "xor": "xor.pred"}
_ATOM = {("add", "i32"): "add.u32", ("fadd", "f32"): "add.f32", ("min", "i32"): "min.s32",
         ("max", "i32"): "max.s32", ("exch", "i32"): "exch.b32", ("exch", "f32"): "exch.b32",
         ("and", "i32"): "and.b32", ("or", "i32"): "or.b32", ("xor", "i32"): "xor.b32",
         ("cas", "i32"): "cas.b32", ("cas", "f32"): "cas.b32"}


def _f32_hex(v: float) -> str:
    return f"0f{struct.unpack('<I', struct.pack('<f', v))[0]:08X}"


class PtxGen:
    def __init__(self, fn: Function, arch: str):
        self.fn = fn
        self.arch = arch
        self.names: dict[int, str] = {}
        self.counts = {"r": 0, "f": 0, "p": 0, "rd": 0, "h": 0}
        self.lines: list[str] = []
        self.labels = 0
        self.alias: dict[int, Value] = {}
        self.owner_preds: dict[int, str] = {}  # n -> predicate "tid < n" (emitted once)
        self.src_sizes: dict[tuple[int, int, int], str] = {}  # cp.async src-size registers
        self.current: ir.Block | None = None  # the block being emitted
        self.vec = vectorize.Analysis(fn)
        # shl(i, k) values read only as byte offsets of global pointers: each use becomes
        # one mul.wide.s32 (64-bit element addressing), so the 32-bit shift is not emitted
        uses: dict[int, list[Op]] = {}
        for op in fn.walk():
            for v in op.operands:
                uses.setdefault(v.id, []).append(op)
        self.wide_only: set[int] = set()
        for op in fn.walk():
            if self._wide_scale(op) is not None and all(
                    u.name == "ptradd" and u.operands[0].type.space == "global"
                    and u.operands[1] is op.result and u.operands[0] is not op.result
                    for u in uses.get(op.result.id, [])):
                self.wide_only.add(op.result.id)

    def cls(self, t: ir.Type) -> str:
        if t == I1:
            return "p"
        if t == F32:
            return "f"
        if t.is_ptr and t.space == "global" or t == I64:
            return "rd"
        return "r"

    def new(self, t_or_cls) -> str:
        c = t_or_cls if isinstance(t_or_cls, str) else self.cls(t_or_cls)
        self.counts[c] += 1
        return f"%{c}{self.counts[c]}"

    def r(self, v: Value) -> str:
        while v.id in self.alias:
            v = self.alias[v.id]
        if v.id not in self.names:
            self.names[v.id] = self.new(v.type)
        return self.names[v.id]

    def emit(self, text: str, guard: str | None = None) -> None:
        g = f"@{guard} " if guard else ""
        self.lines.append(f"\t{g}{text};")

    def label(self, stem: str) -> str:
        self.labels += 1
        return f"${stem}{self.labels}"

    def btype(self, t: ir.Type) -> str:
        return _REG_TYPE[self.cls(t)]

    # --- ops --------------------------------------------------------------------------------
    def generate(self) -> str:
        fn = self.fn
        name = fn.name
        params = []
        for p in fn.params:
            kind = "u64" if p.type.is_ptr or p.type == I64 else (
                "f32" if p.type == F32 else "u32")
            params.append(f"\t.param .{kind} {name}_param_{p.name}")
        self.entry: list[str] = []
        for p in fn.params:
            d = self.r(p.value)
            if p.type.is_ptr:
                raw = self.new("rd")
                self.emit(f"ld.param.u64 {raw}, [{name}_param_{p.name}]")
                self.emit(f"cvta.to.global.u64 {d}, {raw}")
            elif p.type == F32:
                self.emit(f"ld.param.f32 {d}, [{name}_param_{p.name}]")
            elif p.type == I64:
                self.emit(f"ld.param.u64 {d}, [{name}_param_{p.name}]")
            else:
                self.emit(f"ld.param.u32 {d}, [{name}_param_{p.name}]")
        top = len(self.lines)
        self.block(fn.body)
        self.lines[top:top] = self.entry
        self.emit("ret")
        # the shared array is sized at launch (dynamic, declared at module scope): a static
        # one is limited to 48 KiB
        shared = [".extern .shared .align 16 .b8 smem[];", ""] if shared_bytes(fn) else []
        head = [f"//\n// Generated by simtgpu.compiler_backend for kernel {name}\n//",
                ".version 8.0", f".target {self.arch}", ".address_size 64", "", *shared,
                f".visible .entry {name}(", ",\n".join(params), ")", "{"]
        decl = [f"\t.reg .{_REG_TYPE[c]} %{c}<{self.counts[c] + 1}>;" for c in _REG_TYPE
                if c != "h" or self.counts[c]]
        return "\n".join(head + decl + self.lines + ["}", ""])

    def block(self, b: ir.Block) -> None:
        outer, self.current = self.current, b
        self._block(b)
        self.current = outer

    def _block(self, b: ir.Block) -> None:
        lead: dict[int, vectorize.Run] = {}  # first load / last store of a run -> the run
        skip: set[int] = set()
        for run in vectorize.runs(self.vec, b):
            at = run.ops[0] if run.ops[0].name == "load" else run.ops[-1]
            lead[id(at)] = run
            skip.update(id(op) for op in run.ops if op is not at)
        for op in b.ops:
            if id(op) in lead:
                self.vector_access(lead[id(op)])
            elif id(op) not in skip:
                _EMITTERS[op.name](self, op)

    def vector_access(self, run: vectorize.Run) -> None:
        """One ``ld/st.{global,shared}.v2/v4`` for a run of adjacent 32-bit accesses (the
        first one's address and mask; vectorize.py says why they serve all)."""
        first = run.ops[0]
        p = first.operands[0]
        v = len(run.ops)
        if first.name == "cp_async":
            self.cp_async(first, 4 * v)
            return
        mask = 1 if first.name == "load" else 2
        guard = self.r(first.operands[mask]) if len(first.operands) > mask else None
        if first.name == "load":
            regs = [self.r(op.result) for op in run.ops]
            t = first.result.type
            if len(first.operands) == 3:
                for r in regs:
                    self._mov(r, self.r(first.operands[2]), t)
            self.emit(f"ld.{p.type.space}.v{v}.{self.ty(t)} {{{', '.join(regs)}}}, "
                      f"{self.addr(p)}", guard)
        else:
            vals = [self.r(op.operands[1]) for op in run.ops]
            t = first.operands[1].type
            self.emit(f"st.{p.type.space}.v{v}.{self.ty(t)} {self.addr(p)}, "
                      f"{{{', '.join(vals)}}}", guard)

    def unit_op(self, op: Op) -> None:
        """An op that is one instruction on registers (FP32, special functions, conversions)."""
        args = [self.r(v) for v in op.operands]
        self.emit(f"{_UNIT[op.name]} {self.r(op.result)}, {', '.join(args)}")

    @staticmethod
    def _wide_scale(op: Op | None) -> int | None:
        """The multiplier of ``shl(i, k)`` by a constant 0 <= k < 16 (an element size
        scaling), else None."""
        if not isinstance(op, Op) or op.name != "shl" or op.result.type != I32:
            return None
        k = const_value(op.operands[1])
        return 1 << k if isinstance(k, int) and 0 <= k < 16 else None

    def int_op(self, op: Op) -> None:
        n = op.name
        if op.result.id in self.wide_only:
            return  # folded into each user's mul.wide.s32
        args = [self.r(v) for v in op.operands]
        if op.result.type == I64:
            if n in ("shl", "shr", "sra"):  # a .u32 amount, modulo 64
                k = const_value(op.operands[1])
                if k is not None:
                    args[1] = str(k & 63)
                else:
                    t = self.new("r")
                    self.emit(f"cvt.u32.u64 {t}, {args[1]}")
                    self.emit(f"and.b32 {t}, {t}, 63")
                    args[1] = t
            if n not in _INT64 or n in ("mulhi", "mulhu"):
                raise CompileError(f"{n} on int64 has no PTX form here")
            self.emit(f"{_INT64[n]} {self.r(op.result)}, {', '.join(args)}")
            return
        if n in ("shl", "shr", "sra") and const_value(op.operands[1]) is None:
            t = self.new("r")
            self.emit(f"and.b32 {t}, {args[1]}, 31")  # the ISA masks shift amounts
            args[1] = t
        self.emit(f"{_INT[n]} {self.r(op.result)}, {', '.join(args)}")

    def logic_op(self, op: Op) -> None:
        """and/or/xor: predicate logic on i1, the integer instruction on i32."""
        if op.result.type != I1:
            self.int_op(op)
            return
        args = [self.r(v) for v in op.operands]
        self.emit(f"{_PRED[op.name]} {self.r(op.result)}, {', '.join(args)}")

    def op_const(self, op: Op) -> None:
        v = op.attrs["value"]
        r = self.r(op.result)
        t = op.result.type
        if t == F32:
            self.emit(f"mov.f32 {r}, {_f32_hex(float(v))}")
        elif t == I1:
            tmp = self.new("r")
            self.emit(f"mov.u32 {tmp}, {1 if v else 0}")
            self.emit(f"setp.ne.u32 {r}, {tmp}, 0")
        elif t == I64:
            self.emit(f"mov.u64 {r}, {int(v) & 0xFFFFFFFFFFFFFFFF}")
        else:
            self.emit(f"mov.u32 {r}, {int(v) & 0xFFFFFFFF}")

    _SREG = {"laneid": "%laneid", "clock": "%clock", "clockhi": "%clock_hi",
             "coreid": "%smid"}

    def op_sreg(self, op: Op) -> None:
        name = op.attrs["name"]
        r = self.r(op.result)
        if name[:-2] in ("tid", "ntid", "ctaid", "nctaid") and name[-2] == ".":
            self.emit(f"mov.u32 {r}, %{name}")
        elif name in self._SREG:
            self.emit(f"mov.u32 {r}, {self._SREG[name]}")
        elif name == "warpsize":
            self.emit(f"mov.u32 {r}, WARP_SZ")
        elif name == "tid" and self.fn.meta.get("block", (0, 0, 0))[1:] == (1, 1):
            self.emit(f"mov.u32 {r}, %tid.x")  # a 1-D block: the linear id is tid.x
        elif name in ("tid", "warpid", "nwarps"):
            a, b, c = self.new("r"), self.new("r"), self.new("r")
            if name == "nwarps":
                self.emit(f"mov.u32 {a}, %ntid.x")
                self.emit(f"mov.u32 {b}, %ntid.y")
                self.emit(f"mul.lo.u32 {a}, {a}, {b}")
                self.emit(f"mov.u32 {b}, %ntid.z")
                self.emit(f"mul.lo.u32 {a}, {a}, {b}")
                self.emit(f"add.u32 {a}, {a}, 31")
                self.emit(f"shr.u32 {r}, {a}, 5")
                return
            self.emit(f"mov.u32 {a}, %tid.z")
            self.emit(f"mov.u32 {b}, %ntid.y")
            self.emit(f"mov.u32 {c}, %tid.y")
            self.emit(f"mad.lo.u32 {a}, {a}, {b}, {c}")
            self.emit(f"mov.u32 {b}, %ntid.x")
            self.emit(f"mov.u32 {c}, %tid.x")
            if name == "tid":
                self.emit(f"mad.lo.u32 {r}, {a}, {b}, {c}")
            else:
                self.emit(f"mad.lo.u32 {a}, {a}, {b}, {c}")
                self.emit(f"shr.u32 {r}, {a}, 5")
        else:
            raise CompileError(f"special register {name} has no PTX equivalent")

    def op_not(self, op: Op) -> None:
        self.emit(f"not.pred {self.r(op.result)}, {self.r(op.operands[0])}")

    def op_icmp(self, op: Op) -> None:
        c = op.attrs["cond"]
        bits = "64" if op.operands[0].type == I64 else "32"
        ty = ("u" if c.endswith("u") else "s") + bits
        c = c[:-1] if c.endswith("u") else c
        a, b = (self.r(v) for v in op.operands)
        self.emit(f"setp.{c}.{ty} {self.r(op.result)}, {a}, {b}")

    def op_fcmp(self, op: Op) -> None:
        a, b = (self.r(v) for v in op.operands)
        self.emit(f"setp.{op.attrs['cond']}.ftz.f32 {self.r(op.result)}, {a}, {b}")

    def op_select(self, op: Op) -> None:
        c, a, b = (self.r(v) for v in op.operands)
        r = self.r(op.result)
        t = op.result.type
        if t == I1:
            t1, t2, nc = self.new("p"), self.new("p"), self.new("p")
            self.emit(f"and.pred {t1}, {c}, {a}")
            self.emit(f"not.pred {nc}, {c}")
            self.emit(f"and.pred {t2}, {nc}, {b}")
            self.emit(f"or.pred {r}, {t1}, {t2}")
            return
        self.emit(f"selp.{self.btype(t)} {r}, {a}, {b}, {c}")

    def op_smem(self, op: Op) -> None:
        r = self.r(op.result)
        self.emit(f"mov.u32 {r}, smem")
        if op.attrs["offset"]:
            self.emit(f"add.u32 {r}, {r}, {op.attrs['offset']}")

    def index32(self, i: Value) -> str:
        """A 32-bit register holding index ``i`` (the low word of an int64)."""
        if i.type != I64:
            return self.r(i)
        t = self.new("r")
        self.emit(f"cvt.u32.u64 {t}, {self.r(i)}")
        return t

    def op_gep(self, op: Op) -> None:
        p, i = op.operands
        r = self.r(op.result)
        c = const_value(i)
        glob = p.type.space == "global"
        if glob and c is None and i.type == I64:  # a 64-bit index: 64-bit arithmetic
            t = self.new("rd")
            self.emit(f"mul.lo.s64 {t}, {self.r(i)}, {p.type.elem_size}")
            self.emit(f"add.s64 {r}, {self.r(p)}, {t}")
            return
        if c is not None:
            self.emit(f"add.{'s64' if glob else 's32'} {r}, {self.r(p)}, "
                      f"{p.type.elem_size * c}")
            return
        if glob:
            t = self.new("rd")
            self.emit(f"mul.wide.s32 {t}, {self.r(i)}, {p.type.elem_size}")
            self.emit(f"add.s64 {r}, {self.r(p)}, {t}")
        else:
            t = self.new("r")
            self.emit(f"shl.b32 {t}, {self.index32(i)}, {p.type.elem_size.bit_length() - 1}")
            self.emit(f"add.s32 {r}, {self.r(p)}, {t}")

    def op_ptradd(self, op: Op) -> None:
        p, i = op.operands
        r = self.r(op.result)
        if p.type.space == "global":
            t = self.new("rd")
            scale = self._wide_scale(i.owner)
            if i.type == I64:  # a 64-bit byte offset
                t = self.r(i)
            elif scale is not None:
                # the 64-bit byte offset of a signed 32-bit index (as Triton writes it)
                self.emit(f"mul.wide.s32 {t}, {self.r(i.owner.operands[0])}, {scale}")
            else:
                self.emit(f"cvt.s64.s32 {t}, {self.r(i)}")
            self.emit(f"add.s64 {r}, {self.r(p)}, {t}")
        else:
            self.emit(f"add.s32 {r}, {self.r(p)}, {self.index32(i)}")

    def addr(self, p: Value) -> str:
        po = p.owner
        if isinstance(po, Op) and po.name == "gep" and const_value(po.operands[1]) is not None:
            off = po.operands[0].type.elem_size * const_value(po.operands[1])
            base = self.r(po.operands[0])
            # PTX writes a negative displacement as "+-4" ("[r-4]" does not parse); one past
            # a signed 32-bit immediate is read from the gep's own register
            if -2**31 <= off < 2**31:
                return f"[{base}+{off}]"
        return f"[{self.r(p)}]"

    def ty(self, t: ir.Type) -> str:
        return "f32" if t == F32 else "u16" if t.is_half else "u64" if t == I64 else "u32"

    def mem_ty(self, p: ir.Type, store: bool = False) -> str:
        """The type of a load or store through pointer type ``p``: its element's, a narrow
        integer's ``s8``/``u8``/``s16``/``u16`` (stores ``u8``/``u16``)."""
        if p.elem_size < 4 and p.elem not in ir.HALF_KINDS:
            t = half_codegen.ptx_mem_type(p)
            return "u" + t[1:] if store else t
        return self.ty(p.pointee)

    def op_load(self, op: Op) -> None:
        p = op.operands[0]
        r = self.r(op.result)
        sp = p.type.space
        guard = None
        if len(op.operands) >= 2:
            guard = self.r(op.operands[1])
            if len(op.operands) == 3:
                self.emit(f"mov.{self.btype(op.result.type)} {r}, {self.r(op.operands[2])}")
        self.emit(f"ld.{sp}.{self.mem_ty(p.type)} {r}, {self.addr(p)}", guard)

    def owners(self, n: int) -> str:
        """A predicate true in threads ``tid < n`` (computed once per ``n``, at the entry
        block so that every later use is dominated by it)."""
        if n not in self.owner_preds:
            t, p = self.new("r"), self.new("p")
            self.entry.append(f"\tmov.u32 {t}, %tid.x;")
            self.entry.append(f"\tsetp.lt.u32 {p}, {t}, {n};")
            self.owner_preds[n] = p
        return self.owner_preds[n]

    def op_store(self, op: Op) -> None:
        p, v = op.operands[:2]
        guard = self.r(op.operands[2]) if len(op.operands) == 3 else None
        n = op.attrs.get("owners")
        if n is not None and p.type.space == "global" and self.fn.meta.get(
                "block", (0, 0, 0))[1:] == (1, 1):
            # copies of a small tile: only the first n threads write (one store per element)
            own = self.owners(n)
            if guard is None:
                guard = own
            else:
                both = self.new("p")
                self.emit(f"and.pred {both}, {guard}, {own}")
                guard = both
        self.emit(f"st.{p.type.space}.{self.mem_ty(p.type, store=True)} {self.addr(p)}, "
                  f"{self.r(v)}", guard)

    def cp_async(self, op: Op, size: int) -> None:
        """``cp.async`` of ``size`` bytes (16: ``.cg``, through L2 only, as Triton emits;
        4 and 8: ``.ca``); a mask is the src-size operand: 0 bytes read, zeros written."""
        dst, src = op.operands[:2]
        tail = ""
        if len(op.operands) == 3:  # (one selp per mask and size in a block)
            key = (id(self.current), op.operands[2].id, size)
            if key not in self.src_sizes:
                self.src_sizes[key] = self.new("r")
                self.emit(f"selp.u32 {self.src_sizes[key]}, {size}, 0, "
                          f"{self.r(op.operands[2])}")
            tail = f", {self.src_sizes[key]}"
        self.emit(f"cp.async.{'cg' if size == 16 else 'ca'}.shared.global {self.addr(dst)}, "
                  f"{self.addr(src)}, {size}{tail}")

    def op_cp_async(self, op: Op) -> None:
        self.cp_async(op, op.operands[1].type.elem_size)

    def op_cp_commit(self, op: Op) -> None:
        self.emit("cp.async.commit_group")

    def op_cp_wait(self, op: Op) -> None:
        self.emit(f"cp.async.wait_group {op.attrs['n']}")

    def op_atomic(self, op: Op) -> None:
        p, v = op.operands[:2]
        mask = ir.write_mask(op)
        guard = self.r(mask) if mask is not None else None
        name = op.attrs["op"]
        if name in ("fmin", "fmax"):
            self.atomic_fminmax(op, guard)
            return
        kind = "f32" if v.type == F32 else "i64" if v.type == I64 else "i32"
        a = _ATOM.get((name, kind))
        if a is None:
            raise CompileError(f"atomic {name} on {kind} has no PTX form")
        data = ", ".join(self.r(x) for x in op.operands[1:3 if name == "cas" else 2])
        self.emit(f"atom.{p.type.space}.{a} {self.r(op.result)}, [{self.r(p)}], {data}",
                  guard)

    def atomic_fminmax(self, op: Op, guard: str | None) -> None:
        """Float atomic max/min as Triton lowers them (PTX has no ``atom.max.f32``): the
        signed integer max (min) where ``val >= 0``, the unsigned min (max) where ``val < 0``
        and, for a NaN ``val``, ``atom.or`` with 0 (reads the old word, stores nothing)."""
        p, v = op.operands[:2]
        sp, fv = p.type.space, self.r(v)
        pos_op, neg_op = ("max.s32", "min.u32") if op.attrs["op"] == "fmax" else (
            "min.s32", "max.u32")
        bits, res = self.new("r"), self.new("r")
        self.emit(f"mov.b32 {bits}, {fv}")
        preds = {}
        for cond in ("ge", "lt", "nan"):
            c = self.new("p")
            self.emit(f"setp.{cond}.f32 {c}, {fv}, 0f00000000")
            if guard is not None:
                self.emit(f"and.pred {c}, {c}, {guard}")
            preds[cond] = c
        for cond, a, b in (("ge", pos_op, bits), ("lt", neg_op, bits), ("nan", "or.b32", "0")):
            self.emit(f"atom.{sp}.{a} {res}, [{self.r(p)}], {b}", preds[cond])
        self.emit(f"mov.b32 {self.r(op.result)}, {res}")

    def op_shfl(self, op: Op) -> None:
        mode = op.attrs["mode"]
        c = 0 if mode == "up" else 0x1F
        m = self.new("r")
        self.emit(f"activemask.b32 {m}")
        a, b = (self.r(v) for v in op.operands)
        ptx_mode = {"xor": "bfly"}.get(mode, mode)
        if op.result.type == I64:  # the two words shuffled apart
            lo, hi = self.new("r"), self.new("r")
            self.emit(f"mov.b64 {{{lo}, {hi}}}, {a}")
            for w in (lo, hi):
                self.emit(f"shfl.sync.{ptx_mode}.b32 {w}, {w}, {b}, {c}, {m}")
            self.emit(f"mov.b64 {self.r(op.result)}, {{{lo}, {hi}}}")
            return
        self.emit(f"shfl.sync.{ptx_mode}.b32 {self.r(op.result)}, {a}, {b}, {c}, {m}")

    _WIDE_CVT = {"sext": "cvt.s64.s32", "zext": "cvt.u64.u32", "trunc": "cvt.u32.u64"}

    def op_cvt(self, op: Op) -> None:
        """Conversions; with an int64 operand or result the .s64/.u64 forms."""
        n, x = op.name, op.operands[0]
        if n in self._WIDE_CVT:
            ins = self._WIDE_CVT[n]
        elif x.type == I64:
            ins = f"cvt.rn.f32.{'s' if n == 'i2f' else 'u'}64"
        elif op.result.type == I64:
            # the ISA's rule is NaN -> 0; an H100 gives -2**63 for a NaN to .s64
            d, a, nan = self.r(op.result), self.r(x), self.new("p")
            self.emit(f"cvt.rzi.ftz.{'s' if n == 'f2i' else 'u'}64.f32 {d}, {a}")
            self.emit(f"setp.nan.f32 {nan}, {a}, {a}")
            self.emit(f"mov.b64 {d}, 0", guard=nan)
            return
        else:
            ins = _CVT[n]
        self.emit(f"{ins} {self.r(op.result)}, {self.r(x)}")

    def op_inttoptr(self, op: Op) -> None:
        """An integer holding a generic address (a host-built address table) as a global
        pointer; ``ptrtoint`` is the inverse."""
        x = op.operands[0]
        a = self.r(x)
        if x.type != I64:
            a = self.new("rd")
            self.emit(f"cvt.u64.u32 {a}, {self.r(x)}")
        self.emit(f"cvta.to.global.u64 {self.r(op.result)}, {a}")

    def op_bitcast(self, op: Op) -> None:
        """The same 32 bits in a register of the other kind (.f32 <-> .b32)."""
        self.emit(f"mov.b32 {self.r(op.result)}, {self.r(op.operands[0])}")

    def op_ptrtoint(self, op: Op) -> None:
        self.emit(f"cvta.global.u64 {self.r(op.result)}, {self.r(op.operands[0])}")

    def op_vote(self, op: Op) -> None:
        mode = op.attrs["mode"]
        m = self.new("r")
        self.emit(f"activemask.b32 {m}")
        a = self.r(op.operands[0])
        if mode == "ballot":
            self.emit(f"vote.sync.ballot.b32 {self.r(op.result)}, {a}, {m}")
        else:
            self.emit(f"vote.sync.{mode}.pred {self.r(op.result)}, {a}, {m}")

    def op_barrier(self, op: Op) -> None:
        self.emit("bar.sync 0")

    def op_fence(self, op: Op) -> None:
        self.emit("membar.gl")

    def op_exit(self, op: Op) -> None:
        self.emit("exit")

    def op_yield(self, op: Op) -> None:
        pass

    def moves(self, dsts: list[Value], srcs: list[Value]) -> None:
        """Parallel copy through temporaries when a source is also a destination."""
        dnames = [self.r(d) for d in dsts]
        snames = [self.r(s) for s in srcs]
        pairs = [(d, s, v.type) for d, s, v in zip(dnames, snames, dsts, strict=True) if d != s]
        clash = {d for d, _, _ in pairs} & {s for _, s, _ in pairs}
        if clash:
            tmp = []
            for d, s, t in pairs:
                x = self.new(t)
                self._mov(x, s, t)
                tmp.append((d, x, t))
            pairs = tmp
        for d, s, t in pairs:
            self._mov(d, s, t)

    def _mov(self, d: str, s: str, t: ir.Type) -> None:
        if t == I1:
            self.emit(f"and.pred {d}, {s}, {s}")
        else:
            self.emit(f"mov.{self.btype(t)} {d}, {s}")

    def op_for(self, op: Op) -> None:
        lb, ub, step = op.operands[:3]
        body = op.regions[0]
        for res, arg in zip(op.results, body.args[1:], strict=True):
            self.alias[res.id] = arg
        self.moves(list(body.args), [lb] + list(op.operands[3:]))
        iv = self.r(body.args[0])
        exit_l, loop_l = self.label("L_exit"), self.label("L_loop")
        neg = op.attrs.get("step_sign", 1) < 0
        p = self.new("p")
        self.emit(f"setp.{'le' if neg else 'ge'}.s32 {p}, {iv}, {self.r(ub)}")
        self.emit(f"bra {exit_l}", p)
        self.lines.append(f"{loop_l}:")
        self.block(body)
        self.moves(list(body.args[1:]), list(body.terminator.operands))
        self.emit(f"add.s32 {iv}, {iv}, {self.r(step)}")
        p = self.new("p")
        self.emit(f"setp.{'gt' if neg else 'lt'}.s32 {p}, {iv}, {self.r(ub)}")
        self.emit(f"bra {loop_l}", p)
        self.lines.append(f"{exit_l}:")

    def op_while(self, op: Op) -> None:
        """Rotated as on the ISA: ``bra TEST; BODY: body; TEST: test; @p bra BODY``."""
        cond_b, body = op.regions
        for res, ca, ba in zip(op.results, cond_b.args, body.args, strict=True):
            self.alias[res.id] = ba
            self.alias[ca.id] = ba
        self.moves(list(body.args), list(op.operands))
        test_l, body_l = self.label("L_test"), self.label("L_body")
        self.emit(f"bra {test_l}")
        self.lines.append(f"{body_l}:")
        self.block(body)
        self.moves(list(body.args), list(body.terminator.operands))
        self.lines.append(f"{test_l}:")
        self.block(cond_b)
        self.emit(f"bra {body_l}", self.r(cond_b.terminator.operands[0]))

    def op_if(self, op: Op) -> None:
        c = self.r(op.operands[0])
        then_b, else_b = op.regions
        els, join = self.label("L_else"), self.label("L_join")
        for r in op.results:
            self.r(r)
        self.emit(f"bra {els}", f"!{c}")
        self.block(then_b)
        self.moves(list(op.results), list(then_b.terminator.operands))
        self.emit(f"bra.uni {join}")
        self.lines.append(f"{els}:")
        self.block(else_b)
        self.moves(list(op.results), list(else_b.terminator.operands))
        self.lines.append(f"{join}:")


# The one emitter of each IR op; checked against the IR's op list at import.
_EMITTERS: dict[str, Callable[[PtxGen, Op], None]] = {
    **dict.fromkeys(_INT, PtxGen.int_op),
    **dict.fromkeys(("and", "or", "xor"), PtxGen.logic_op),
    **dict.fromkeys(_UNIT, PtxGen.unit_op),
    **dict.fromkeys(("sext", "zext", "trunc", *_CVT), PtxGen.op_cvt),
    "inttoptr": PtxGen.op_inttoptr, "ptrtoint": PtxGen.op_ptrtoint,
    "bitcast": PtxGen.op_bitcast,
    "const": PtxGen.op_const, "sreg": PtxGen.op_sreg, "not": PtxGen.op_not,
    "icmp": PtxGen.op_icmp, "fcmp": PtxGen.op_fcmp, "select": PtxGen.op_select,
    "smem": PtxGen.op_smem, "gep": PtxGen.op_gep, "ptradd": PtxGen.op_ptradd,
    "load": PtxGen.op_load, "store": PtxGen.op_store, "atomic": PtxGen.op_atomic,
    "shfl": PtxGen.op_shfl, "vote": PtxGen.op_vote, "barrier": PtxGen.op_barrier,
    "fence": PtxGen.op_fence, "exit": PtxGen.op_exit, "for": PtxGen.op_for,
    "if": PtxGen.op_if, "yield": PtxGen.op_yield, "while": PtxGen.op_while,
    "cp_async": PtxGen.op_cp_async, "cp_commit": PtxGen.op_cp_commit,
    "cp_wait": PtxGen.op_cp_wait,
    **dict.fromkeys(ir.HALF_OPS, half_codegen.ptx_half_op), "mma": half_codegen.ptx_mma,
}
ir.check_op_table(_EMITTERS, "the PTX code generator")


def shared_bytes(fn: Function) -> int:
    """The bytes of shared memory a launch of ``fn``'s PTX must give (its one dynamic
    array); a device_assert addresses shared memory even in a kernel that has none."""
    if fn.shared_bytes or any(op.name == "smem" for op in fn.walk()):
        return max(fn.shared_bytes, 4)
    return 0


def generate_ptx(fn: Function, arch: str = "sm_90") -> str:
    """IR (after passes) to PTX text for one ``.entry``."""
    if arch not in ("sm_80", "sm_86", "sm_89", "sm_90"):
        raise CompileError(f"unsupported PTX target {arch} (sm_80, sm_86, sm_89, sm_90)")
    return PtxGen(fn, arch).generate()
