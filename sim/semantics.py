"""What each instruction does, one function per semantic class of the ISA table.

Every function has the signature ``f(w, op, g, ex)``: the wave state, the pre-decoded
instruction, the group of warps executing it (all at the same PC) and ``ex``, the
``(warps, lanes)`` bool array of lanes that execute (active and guard). The functions are
vectorised over warps and lanes; they follow docs/execution-model.md, whose wording the
comments quote. The PC advance (``pc += 4``) is done by the caller except for the instructions
in ``isa.SETS_PC``, which decide the next PC themselves.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from simtgpu.isa import GLOBAL_NULL_GUARD, FaultCause, Sem
from simtgpu.isa import INSTRUCTIONS as _ALL
from simtgpu.isa import SETS_PC as SETS_PC  # the ISS's callers read it here
from simtgpu.isa.mma import mma_shape

from . import numerics as nx
from .wave import DIV, DONE, RUN, SYNC, WAIT, Fault, Wave, mask_bits

U32 = np.uint32
I32 = np.int32


def _s(a: np.ndarray) -> np.ndarray:
    return a.view(I32)


def _u(a: np.ndarray) -> np.ndarray:
    return a.view(U32)


def _sra(a: np.ndarray, n) -> np.ndarray:
    return _u(np.right_shift(_s(a), n))


# --- integer ALU ------------------------------------------------------------------------
INT_OPS: dict[str, Callable] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "shl": lambda a, b: a << (b & U32(31)),
    "shr": lambda a, b: a >> (b & U32(31)),
    "sra": lambda a, b: _sra(a, _s(b & U32(31))),
    "min": lambda a, b: _u(np.minimum(_s(a), _s(b))),
    "max": lambda a, b: _u(np.maximum(_s(a), _s(b))),
    "minu": np.minimum,
    "maxu": np.maximum,
}

# Immediate forms: the register-register operation with ``b`` the sign-extended immediate
# as a uint32 scalar (shift counts use its low five bits, as for registers).
INT_IMM_OPS: dict[str, Callable] = {
    f"{op}i": INT_OPS[op] for op in ("add", "and", "or", "xor", "shl", "shr", "sra")}

ICMP_OPS: dict[str, Callable] = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: _s(a) < _s(b),
    "le": lambda a, b: _s(a) <= _s(b),
    "gt": lambda a, b: _s(a) > _s(b),
    "ge": lambda a, b: _s(a) >= _s(b),
    "ltu": lambda a, b: a < b,
    "leu": lambda a, b: a <= b,
    "gtu": lambda a, b: a > b,
    "geu": lambda a, b: a >= b,
}

PLOGIC_OPS: dict[str, Callable] = {
    "pand": np.logical_and,
    "por": np.logical_or,
    "pxor": np.logical_xor,
}


def _mulhi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return ((_s(a).astype(np.int64) * _s(b).astype(np.int64)) >> 32).astype(U32)


def _mulhu(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return ((a.astype(np.uint64) * b.astype(np.uint64)) >> np.uint64(32)).astype(U32)


MUL_OPS: dict[str, Callable] = {
    "mul": lambda a, b: a * b,
    "mulhi": _mulhi,
    "mulhu": _mulhu,
    "muli": lambda a, b: a * b,
}


def int_rr(w: Wave, op, g, ex) -> None:
    """d = a OP b."""
    w.write_reg(op.rd, g, ex, op.fn(w.R[op.rs1, g], w.R[op.rs2, g]))


def int_imm(w: Wave, op, g, ex) -> None:
    """d = a OP sext(imm)."""
    w.write_reg(op.rd, g, ex, op.fn(w.R[op.rs1, g], op.uimm))


def mul(w: Wave, op, g, ex) -> None:
    """d = (a * b) low or high word; ``muli`` multiplies by the immediate."""
    b = op.uimm if op.mnemonic == "muli" else w.R[op.rs2, g]
    w.write_reg(op.rd, g, ex, op.fn(w.R[op.rs1, g], b))


def const(w: Wave, op, g, ex) -> None:
    """movi: d = sext(imm16); lui: d = imm16 << 16; lli: d = (d & 0xffff0000) | imm16."""
    if op.mnemonic == "lli":
        value = (w.R[op.rd, g] & U32(0xFFFF0000)) | op.uimm
    elif op.mnemonic == "lui":
        value = U32((op.imm & 0xFFFF) << 16)
    else:
        value = op.uimm
    w.write_reg(op.rd, g, ex, value)


def icmp(w: Wave, op, g, ex) -> None:
    """pd = a COND b (signed or unsigned by the condition)."""
    w.write_pred(op.rd & 7, g, ex, op.fn(w.R[op.rs1, g], w.R[op.rs2, g]))


def plogic(w: Wave, op, g, ex) -> None:
    """pd = p1 OP p2 (sources may be negated)."""
    w.write_pred(op.rd & 7, g, ex, op.fn(w.read_pred(op.rs1, g), w.read_pred(op.rs2, g)))


def select(w: Wave, op, g, ex) -> None:
    """d = p ? a : b."""
    w.write_reg(op.rd, g, ex, np.where(w.read_pred(op.rs3, g), w.R[op.rs1, g], w.R[op.rs2, g]))


# --- floating point (bit-exact numerics live in sim/numerics.py) -------------------------
def fp(w: Wave, op, g, ex) -> None:
    """FP32 arithmetic through the shared numerics (RNE, FTZ)."""
    a = w.R[op.rs1, g]
    if op.nargs == 1:
        value = op.fn(a)
    elif op.nargs == 2:
        value = op.fn(a, w.R[op.rs2, g])
    else:
        value = op.fn(a, w.R[op.rs2, g], w.R[op.rs3, g])
    w.write_reg(op.rd, g, ex, np.asarray(value, dtype=U32))


def fcmp(w: Wave, op, g, ex) -> None:
    """pd = a COND b in FP32 (ordered compares are false on NaN)."""
    w.write_pred(op.rd & 7, g, ex, np.asarray(op.fn(w.R[op.rs1, g], w.R[op.rs2, g]), bool))


def unary_nx(w: Wave, op, g, ex) -> None:
    """cvt.* and sfu.*: d = f(a) through the shared numerics."""
    w.write_reg(op.rd, g, ex, np.asarray(op.fn(w.R[op.rs1, g]), dtype=U32))


# --- matrix multiply-accumulate ---------------------------------------------------------
_MMA_MAPS: dict[int, tuple] = {}


def _mma_maps(lanes: int) -> tuple:
    """Gather/scatter indices of the fragment layout (isa/mma.py) at this warp width:
    (shape, A's (reg, half, lane) per (row, col), B's likewise, C's (reg, lane) per
    (row, col) and C's (row, col) per (reg, lane))."""
    maps = _MMA_MAPS.get(lanes)
    if maps is None:
        s = mma_shape(lanes)
        a_src = np.zeros((3, s.m, s.k), np.int64)
        b_src = np.zeros((3, s.k, s.n), np.int64)
        c_src = np.zeros((2, s.m, s.n), np.int64)
        c_dst = np.zeros((2, s.regs_c, lanes), np.int64)
        for ln in range(lanes):
            for h in (0, 1):
                for r in range(s.regs_a):
                    i, j = s.a_pos(r, h, ln)
                    a_src[:, i, j] = (r, h, ln)
                for r in range(s.regs_b):
                    i, j = s.b_pos(r, h, ln)
                    b_src[:, i, j] = (r, h, ln)
            for r in range(s.regs_c):
                i, j = s.c_pos(r, ln)
                c_src[:, i, j] = (r, ln)
                c_dst[:, r, ln] = (i, j)
        maps = _MMA_MAPS[lanes] = (s, a_src, b_src, c_src, c_dst)
    return maps


def _gather(regs: np.ndarray, src: np.ndarray) -> np.ndarray:
    """(warps, rows, cols) halves from registers (reg, warps, lanes) by (reg, half, lane)."""
    v = regs[src[0], :, src[2]] >> (U32(16) * src[1].astype(U32))[..., None]
    return np.moveaxis(v & U32(0xFFFF), -1, 0).astype(np.uint16)


def mma(w: Wave, op, g, ex) -> None:
    """D = A x B + C for each warp of the group, fragments per isa/mma.py, numerics
    ``nx.mma``; the whole warp must execute it (like PTX ``mma.sync.aligned``)."""
    partial = ~ex.all(axis=1)
    if partial.any():
        gi = w.indices(g)
        k = int(np.argmax(partial))
        raise Fault(FaultCause.DIVERGENT_MMA, int(gi[k]), ex[k].copy(),
                    f"{op.mnemonic} with executing lanes 0x{mask_bits(ex[k]):x} of "
                    f"{w.W}")
    s, a_src, b_src, c_src, c_dst = _mma_maps(w.W)
    a = _gather(w.R[op.rs1:op.rs1 + s.regs_a, g], a_src)
    b = _gather(w.R[op.rs2:op.rs2 + s.regs_b, g], b_src)
    c = np.moveaxis(w.R[op.rs3:op.rs3 + s.regs_c, g][c_src[0], :, c_src[1]], -1, 0)
    d = np.asarray(nx.mma(op.name, a, b, c), dtype=U32)
    # all sources are read before any destination is written (groups may overlap)
    for r in reversed(range(s.regs_c)):
        w.write_reg(op.rd + r, g, ex, d[:, c_dst[0, r], c_dst[1, r]])


# --- special registers and parameters ---------------------------------------------------
def sreg(w: Wave, op, g, ex) -> None:
    """d = special register (ISS clock = the warp's retired instructions)."""
    w.write_reg(op.rd, g, ex, w.sreg(op.rs1, g))


def param(w: Wave, op, g, ex) -> None:
    """d = word at byte offset imm of the launch's parameter block (same for every lane)."""
    off = op.imm
    if not ex.any():
        w.write_reg(op.rd, g, ex, U32(0))
        return
    if off < 0 or off + 4 > w.param_size:
        raise w.fault_first(FaultCause.OUT_OF_RANGE, g, ex,
                            f"parameter offset {off} outside the {w.param_size}-byte "
                            f"parameter block")
    if off % 4:
        raise w.fault_first(FaultCause.MISALIGNED, g, ex, f"parameter offset {off} is not "
                            "4-aligned")
    addr = w.param_addr + off
    if addr < GLOBAL_NULL_GUARD or addr + 4 > w.mem_size or addr % 4:
        raise w.fault_first(FaultCause.OUT_OF_RANGE, g, ex,
                            f"parameter block address 0x{addr:x} outside device memory")
    w.stats.param_loads += int(ex.any(axis=1).sum())
    w.write_reg(op.rd, g, ex, U32(w.mem[addr >> 2]))


# --- memory -----------------------------------------------------------------------------
def _address_faults(w: Wave, g, ex: np.ndarray, addr: np.ndarray, oor: np.ndarray,
                    space: str, fmt: str, outside: Callable[[], str]) -> None:
    """Fault for the first executing lane whose ``space`` address is out of range (``oor``;
    ``outside()`` says of what), else for the first misaligned one: one rule for global and
    shared accesses. The message is built only on a fault (this runs for every access)."""
    mis = ((addr & U32(3)) != 0) & ex
    for bad, cause, why in ((oor, FaultCause.OUT_OF_RANGE, outside),
                            (mis, FaultCause.MISALIGNED, lambda: "is not 4-aligned")):
        if bad.any():
            k = int(np.argmax(bad.any(axis=1)))
            lane = int(np.argmax(bad[k]))
            raise w.fault_first(cause, g, bad,
                                f"{space} address 0x{int(addr[k, lane]):{fmt}} {why()}")


def _global_index(w: Wave, g, ex: np.ndarray, addr: np.ndarray) -> np.ndarray:
    """Word indices of the global addresses ``addr``; faults for executing lanes first
    (out of range before misaligned). Lanes outside ``ex`` get a harmless index."""
    oor = ((addr < U32(GLOBAL_NULL_GUARD)) | (addr > U32(min(w.mem_size, 1 << 32) - 4))) & ex
    _address_faults(w, g, ex, addr, oor, "global", "08x",
                    lambda: f"outside [0x{GLOBAL_NULL_GUARD:x}, 0x{w.mem_size:x})")
    return np.where(ex, addr >> U32(2), U32(GLOBAL_NULL_GUARD >> 2))


def _shared_index(w: Wave, g, ex: np.ndarray, addr: np.ndarray) -> np.ndarray:
    """Indices into the wave's shared array (the lane's own block) of shared addresses."""
    oor = (addr.astype(np.int64) > w.shared_bytes - 4) & ex
    _address_faults(w, g, ex, addr, oor, "shared", "x",
                    lambda: f"outside the block's {w.shared_bytes}-byte shared memory")
    base = (w.blk[g] * w.swords)[:, None]
    return np.where(ex, base + (addr >> U32(2)), 0)


def _space(w: Wave, op) -> np.ndarray:
    return w.mem if op.is_global else w.shared


def _index(w: Wave, op, g, ex, addr) -> np.ndarray:
    return _global_index(w, g, ex, addr) if op.is_global else _shared_index(w, g, ex, addr)


def load(w: Wave, op, g, ex) -> None:
    """d = space[a + imm]; guarded-off lanes make no access."""
    addr = w.R[op.rs1, g] + op.uimm
    idx = _index(w, op, g, ex, addr)
    n = int(np.count_nonzero(ex))
    if op.is_global:
        w.stats.global_loads += n
    else:
        w.stats.shared_loads += n
    space = _space(w, op)
    if n == ex.size:
        value = space[idx]
    else:  # gather only the executing lanes: the others may have no valid address at all
        value = np.zeros(ex.shape, dtype=U32)
        value[ex] = space[idx[ex]]
    w.write_reg(op.rd, g, ex, value)


def store(w: Wave, op, g, ex) -> None:
    """space[a + imm] = b; lanes act in lane order (warps in warp order), so for the same
    address the last writer wins."""
    addr = w.R[op.rs1, g] + op.uimm
    idx = _index(w, op, g, ex, addr)
    value = w.R[op.rs2, g]
    w.mrec = (addr, value)
    sel_idx = idx[ex]
    sel_val = value[ex]
    if op.is_global:
        w.stats.global_stores += sel_idx.size
    else:
        w.stats.shared_stores += sel_idx.size
    if sel_idx.size > 1 and not (sel_idx[1:] > sel_idx[:-1]).all():
        # Same address more than once: keep the last writer of each address.
        rev_idx = sel_idx[::-1]
        sel_idx, first = np.unique(rev_idx, return_index=True)
        sel_val = sel_val[::-1][first]
    _space(w, op)[sel_idx] = sel_val


def _seg_cum(kind: str, v: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """Inclusive running min/max of signed ``v`` restarting at each segment (sorted ``seg``).

    Shifting every segment by a multiple of 2**34 makes a plain accumulate stay inside its
    segment: earlier segments are all larger (min) or smaller (max) than later ones.
    """
    shift = seg.astype(np.int64) << 34
    if kind == "min":
        return np.minimum.accumulate(v - shift) + shift
    return np.maximum.accumulate(v + shift) - shift


_WALKED: dict[str, Callable | None] = {
    "cas": None, "fadd": None, "and": np.bitwise_and, "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "fmin": lambda m, b: nx.atomic_fminmax(m, b, want_max=False),
    "fmax": lambda m, b: nx.atomic_fminmax(m, b, want_max=True),
}
"""Atomics applied one access per address per step (the step function; cas and fadd are
handled in place): their results depend on every earlier access to the same word."""


def apply_atomics(space: np.ndarray, name: str, idx: np.ndarray, b: np.ndarray,
                  c: np.ndarray | None, fadd: Callable | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Apply atomics ``name`` to ``space[idx[i]]`` one after another in order ``i``.

    Returns (old value seen by each, value stored by each, whether each stored) in the
    order given. Exact for any pattern of repeated addresses: add, min, max and exch use
    segmented scans over the lanes sorted by address; the others (:data:`_WALKED`) walk the
    k-th lane of each address for k = 0, 1, ...
    """
    n = idx.size
    order = np.argsort(idx, kind="stable")
    si, sb = idx[order], b[order]
    start = np.empty(n, dtype=bool)
    start[0] = True
    np.not_equal(si[1:], si[:-1], out=start[1:])
    seg = np.cumsum(start) - 1
    starts = np.flatnonzero(start)
    ends = np.r_[starts[1:], n] - 1
    m0 = space[si]  # memory before the instruction, the same within a segment
    wrote = np.ones(n, dtype=bool)
    if name == "add":
        cs = np.cumsum(sb.astype(np.uint64))
        excl = cs - sb
        old = ((m0.astype(np.uint64) + excl - excl[starts][seg]) & np.uint64(0xFFFFFFFF))
        old = old.astype(U32)
        new = old + sb
    elif name in ("min", "max"):
        v = _s(sb).astype(np.int64)
        run = _seg_cum(name, v, seg)
        prev = np.empty_like(run)
        prev[1:] = run[:-1]
        prev[start] = _s(m0)[start]
        f = np.minimum if name == "min" else np.maximum
        old_s = np.where(start, _s(m0).astype(np.int64), f(prev, _s(m0).astype(np.int64)))
        old = old_s.astype(I32).view(U32)
        new = f(old_s, v).astype(I32).view(U32)
    elif name == "exch":
        old = np.empty(n, dtype=U32)
        old[1:] = sb[:-1]
        old[start] = m0[start]
        new = sb
    else:  # the others: the k-th access of every address in one step
        sc = c[order] if c is not None else None
        step = _WALKED[name]
        old = np.empty(n, dtype=U32)
        new = np.empty(n, dtype=U32)
        lengths = ends - starts + 1
        for k in range(int(lengths.max())):
            pos = starts[lengths > k] + k
            at = si[pos]
            cur = space[at]
            if name == "cas":
                hit = cur == sb[pos]
                nv = np.where(hit, sc[pos], cur)
                wrote[pos] = hit
            else:
                nv = np.asarray((step or fadd)(cur, sb[pos]), dtype=U32)
            space[at] = nv
            old[pos] = cur
            new[pos] = nv
    if name not in _WALKED:
        space[si[ends]] = new[ends]
    inv = np.empty(n, dtype=np.int64)
    inv[order] = np.arange(n)
    return old[inv], new[inv], wrote[inv]


def atomic(w: Wave, op, g, ex) -> None:
    """d = m = space[a]; space[a] = f(m, b[, c]); lanes in lane order, warps in warp order."""
    addr = w.R[op.rs1, g]
    idx = _index(w, op, g, ex, addr)
    n = int(np.count_nonzero(ex))
    w.stats.atomics += n
    result = np.zeros(ex.shape, dtype=U32)
    if n:
        c = w.R[op.rs3, g][ex] if op.name == "cas" else None
        old, new, wrote = apply_atomics(_space(w, op), op.name, idx[ex], w.R[op.rs2, g][ex],
                                        c, op.fadd)
        result[ex] = old
        new_full = np.zeros(ex.shape, dtype=U32)
        new_full[ex] = new
        wrote_full = np.zeros(ex.shape, dtype=bool)
        wrote_full[ex] = wrote
        w.mrec = (addr, new_full, wrote_full)
    else:
        w.mrec = (addr, result, ex)
    w.write_reg(op.rd, g, ex, result)


def fence(w: Wave, op, g, ex) -> None:
    """The ISS is sequentially consistent: a fence has nothing to wait for."""


def nop(w: Wave, op, g, ex) -> None:
    """Nothing."""


# --- warp-level -------------------------------------------------------------------------
def shuffle(w: Wave, op, g, ex) -> None:
    """d = a of the source lane if it is in the warp and executing, else the lane's own a."""
    a = w.R[op.rs1, g]
    b = w.R[op.rs2, g].astype(np.int64)
    lane = np.arange(w.W, dtype=np.int64)
    mode = op.name
    if mode == "idx":
        src = b & (w.W - 1)
    elif mode == "up":
        src = lane - b
    elif mode == "down":
        src = lane + b
    else:
        src = lane ^ b
    ok = (src >= 0) & (src < w.W)
    src = np.where(ok, src, 0)
    ok &= np.take_along_axis(ex, src, axis=1)
    w.write_reg(op.rd, g, ex, np.where(ok, np.take_along_axis(a, src, axis=1), a))


def vote(w: Wave, op, g, ex) -> None:
    """any/all: one answer over the executing lanes, written to each; ballot: lane bits."""
    p = w.read_pred(op.rs1, g)
    if op.name == "ballot":
        bits = U32(1) << np.arange(w.W, dtype=U32)
        value = np.bitwise_or.reduce(np.where(p & ex, bits, U32(0)), axis=1)
        w.write_reg(op.rd, g, ex, np.broadcast_to(value[:, None], ex.shape))
    elif op.name == "any":
        value = (p & ex).any(axis=1)
        w.write_pred(op.rd & 7, g, ex, np.broadcast_to(value[:, None], ex.shape))
    else:
        value = (p | ~ex).all(axis=1)
        w.write_pred(op.rd & 7, g, ex, np.broadcast_to(value[:, None], ex.shape))


# --- control: the SIMT stack, exit, barrier ---------------------------------------------
def _push(w: Wave, gi: np.ndarray, kind: int, pc: int, masks: np.ndarray,
          lanes: np.ndarray) -> None:
    """Push ``(kind, pc, masks[i])`` onto the stacks of warps ``gi``."""
    full = w.sp[gi] >= w.depth
    if full.any():
        k = int(np.argmax(full))
        raise Fault(FaultCause.STACK_OVERFLOW, int(gi[k]), lanes[k].copy(),
                    f"reconvergence stack full ({w.depth} entries)")
    top = w.sp[gi]
    w.stk_kind[gi, top] = kind
    w.stk_pc[gi, top] = pc
    w.stk_mask[gi, top] = masks
    w.sp[gi] = top + 1
    depth = int(top.max()) + 1
    if depth > w.stats.max_stack_depth:
        w.stats.max_stack_depth = depth


def pop(w: Wave, gi: np.ndarray, underflow_faults: bool, lanes: np.ndarray) -> None:
    """Pop the stacks of warps ``gi``: pc = entry.pc, active = entry.mask & live, again while
    that mask is empty. An empty stack ends the warp when no lane is live; with live lanes it
    is STACK_UNDERFLOW (reported with ``lanes``, the warp's active lanes) when
    ``underflow_faults``."""
    todo = gi
    rows = np.arange(gi.size)
    while todo.size:
        empty = w.sp[todo] == 0
        if empty.any():
            ew = todo[empty]
            if underflow_faults:
                has_live = w.live[ew].any(axis=1)
                if has_live.any():
                    k = int(np.argmax(has_live))
                    raise Fault(FaultCause.STACK_UNDERFLOW, int(ew[k]),
                                lanes[rows[empty][k]].copy(),
                                "sync with an empty reconvergence stack")
            w.status[ew] = DONE
            w.active[ew] = False
            todo, rows = todo[~empty], rows[~empty]
            if not todo.size:
                break
        top = w.sp[todo] - 1
        w.sp[todo] = top
        w.pc[todo] = w.stk_pc[todo, top]
        m = w.stk_mask[todo, top] & w.live[todo]
        w.active[todo] = m
        again = ~m.any(axis=1)
        todo, rows = todo[again], rows[again]


def ssy(w: Wave, op, g, ex) -> None:
    """Push SYNC(target, active); pc += 4."""
    gi = w.indices(g)
    act = w.active[gi]
    _push(w, gi, SYNC, op.target, act, act)
    w.pc[g] = op.pc + 4


def bra(w: Wave, op, g, ex) -> None:
    """taken = active & guard: all -> pc = target; none -> pc += 4; some -> push
    DIV(pc + 4, active & ~guard) (or OR into a DIV top entry with that pc), active = taken.
    ``ex`` is already active & guard."""
    if op.unguarded:
        w.pc[g] = op.target
        return
    taken = ex
    any_t = taken.any(axis=1)
    act = w.active[g]
    split = any_t & (taken != act).any(axis=1)
    w.pc[g] = np.where(any_t, op.target, op.pc + 4)
    if not split.any():
        return
    si = w.indices(g)[split]
    act = act[split]
    taken = taken[split]
    rest = act & ~taken
    w.stats.divergence_events += si.size
    top = w.sp[si] - 1
    has = top >= 0
    merge = np.zeros(si.size, dtype=bool)
    if has.any():
        t = np.where(has, top, 0)
        merge = has & (w.stk_kind[si, t] == DIV) & (w.stk_pc[si, t] == op.pc + 4)
    if merge.any():
        mi = si[merge]
        w.stk_mask[mi, top[merge]] |= rest[merge]
    if (~merge).any():
        _push(w, si[~merge], DIV, op.pc + 4, rest[~merge], act[~merge])
    w.active[si] = taken


def sync(w: Wave, op, g, ex) -> None:
    """Pop the top entry (see :func:`pop`)."""
    gi = w.indices(g)
    pop(w, gi, True, w.active[gi])


def exit_(w: Wave, op, g, ex) -> None:
    """live &= ~exec, active &= ~exec; a warp left without active lanes pops as sync does
    (an empty stack ends the warp when no lane is live, and is STACK_UNDERFLOW otherwise);
    the others go on at pc + 4."""
    gi = w.indices(g)
    ex = np.array(ex, copy=True)
    before = w.active[gi]
    w.live[gi] &= ~ex
    act = before & ~ex
    w.active[gi] = act
    still = act.any(axis=1)
    w.pc[gi[still]] = op.pc + 4
    if (~still).any():
        pop(w, gi[~still], True, before[~still])


def bar(w: Wave, op, g, ex) -> None:
    """Wait for every warp of the block. The warp must not be divergent (active == live);
    like ssy and sync, bar acts on the whole warp and its guard is ignored."""
    gi = w.indices(g)
    act = w.active[gi]
    partial = act != w.live[gi]
    if partial.any():
        k = int(np.argmax(partial.any(axis=1)))
        raise Fault(FaultCause.DIVERGENT_BARRIER, int(gi[k]), act[k].copy(),
                    f"bar with active lanes 0x{mask_bits(act[k]):x} of live lanes "
                    f"0x{mask_bits(w.live[gi[k]]):x}")
    w.pc[gi] = op.pc + 4
    w.status[gi] = WAIT
    w.n_wait += gi.size


def barrier_resolve(w: Wave) -> None:
    """Release blocks whose warps all wait; fault blocks that can never complete."""
    st = w.status.reshape(w.nb, w.wpb)
    waiting = st == WAIT
    all_wait = waiting.all(axis=1)
    if all_wait.any():
        rel = np.repeat(all_wait, w.wpb)
        w.status[rel] = RUN
        w.n_wait -= int(rel.sum())
        w.stats.barriers += int(all_wait.sum())
    stuck = waiting.any(axis=1) & ~(st == RUN).any(axis=1) & (st == DONE).any(axis=1)
    if stuck.any():
        b = int(np.argmax(stuck))
        wl = b * w.wpb + int(np.argmax(waiting[b]))
        raise Fault(FaultCause.BARRIER_DEADLOCK, wl, w.live[wl].copy(),
                    "the block's other warps have exited; this barrier can never complete",
                    pc=int(w.pc[wl]) - 4)


# --- the dispatch table -----------------------------------------------------------------
HANDLERS: dict[Sem, Callable] = {
    Sem.INT: int_rr, Sem.INT_IMM: int_imm, Sem.CONST: const, Sem.MUL: mul, Sem.ICMP: icmp,
    Sem.PLOGIC: plogic, Sem.SELECT: select, Sem.FP: fp, Sem.HALF: fp, Sem.MMA: mma,
    Sem.FCMP: fcmp, Sem.CVT: unary_nx,
    Sem.SFU: unary_nx, Sem.LOAD: load, Sem.STORE: store, Sem.ATOMIC: atomic, Sem.FENCE: fence,
    Sem.BARRIER: bar, Sem.SHUFFLE: shuffle, Sem.VOTE: vote, Sem.SREG: sreg, Sem.PARAM: param,
}
CONTROL_HANDLERS: dict[str, Callable] = {
    "nop": nop, "exit": exit_, "bra": bra, "ssy": ssy, "sync": sync,
}


def bind(op) -> None:
    """Attach the semantic function (``op.run``) and its operation (``op.fn``) to ``op``."""
    instr = op.instr
    m = instr.mnemonic
    op.name = instr.suffix or m
    op.fn = None
    op.nargs = sum(1 for o in instr.operands if not o.is_dst)
    if instr.sem in (Sem.CONTROL, Sem.BRANCH):
        op.run = CONTROL_HANDLERS[m]
        return
    op.run = HANDLERS[instr.sem]
    if instr.sem is Sem.INT:
        op.fn = INT_OPS[m]
    elif instr.sem is Sem.INT_IMM:
        op.fn = INT_IMM_OPS[m]
    elif instr.sem is Sem.MUL:
        op.fn = MUL_OPS[m]
    elif instr.sem is Sem.ICMP:
        op.fn = ICMP_OPS[op.name]
    elif instr.sem is Sem.PLOGIC:
        op.fn = PLOGIC_OPS[m]
    elif instr.sem in (Sem.FP, Sem.HALF, Sem.FCMP, Sem.CVT, Sem.SFU, Sem.ATOMIC):
        fam = instr.family
        if instr.sem is Sem.HALF and fam == "hcvt":
            hop = op.name
            op.fn = lambda a, b=0: nx.hcvt(hop, a, b)
        elif instr.sem is Sem.HALF and fam == "hfma2":
            hfmt = op.name
            op.fn = lambda a, b, c: nx.hfma2(hfmt, a, b, c)
        elif instr.sem is Sem.HALF:
            hfmt = op.name
            op.fn = lambda a, b: nx.half2(fam, hfmt, a, b)
        elif instr.sem is Sem.FP:
            op.fn = getattr(nx, m)
        elif instr.sem is Sem.FCMP:
            cond = op.name
            op.fn = lambda a, b: nx.fcmp(cond, a, b)
        elif instr.sem is Sem.CVT:
            cvt_op = op.name
            op.fn = lambda a: nx.cvt(cvt_op, a)
        elif instr.sem is Sem.SFU:
            sfu_op = op.name
            op.fn = lambda a: nx.sfu(sfu_op, a)
        else:
            op.fadd = nx.fadd


def _check_coverage() -> None:
    """Every instruction of the table has a semantic function (fails at import otherwise)."""
    for instr in _ALL:
        if instr.sem in (Sem.CONTROL, Sem.BRANCH):
            assert instr.mnemonic in CONTROL_HANDLERS, instr.mnemonic
        else:
            assert instr.sem in HANDLERS, instr.mnemonic


_check_coverage()
