"""Compile-time and run-time checks of the language: ``tl.static_print``,
``tl.static_assert``, ``tl.device_assert``, ``tl.device_print`` and ``tl.assume``.

``device_print`` appends records to a buffer in device memory that the launch passes as two
hidden pointer parameters (:data:`PRINT_PARAMS`) and prints afterwards (:func:`format_prints`).

``device_assert`` needs no new instruction: where the condition is false, the thread loads
from a shared address far outside any block's shared memory (``ASSERT_BASE + site *
ASSERT_STRIDE``), which stops the kernel with the architectural OUT_OF_RANGE fault record
(block, warp, lanes, PC) on the ISS and the RTL alike. The launch (``jit.py``) recognises the
address and raises :class:`DeviceAssertionError` naming the assertion's file:line, its
message, the block and the threads. The site index sits in the address's high bits, so the
spill area that the code generator places in front of the kernel's shared data (under 1 MiB)
cannot move it to another site.
"""

from __future__ import annotations

import re

from simtgpu.errors import SimtgpuError, SourceLocation

from . import ir
from .errors import CompileError
from .ir import F32, I1
from .lang_base import _each, builtin
from .tiles import Coords, Lowering, Tile

ASSERT_BASE = 0x4000_0000
ASSERT_STRIDE = 0x20_0000
MAX_ASSERT_SITES = 256


class DeviceAssertionError(SimtgpuError):
    """A ``tl.device_assert`` failed while the kernel ran; ``fault`` is the fault record."""

    def __init__(self, message: str, fault=None):
        super().__init__(message)
        self.fault = fault


@builtin
def static_print(ctx: Lowering, *values, sep: str = " ", end: str = "\n", file=None,
                 flush: bool = False) -> None:
    """Print compile-time values (and tensors' shapes and types) while compiling."""
    print(*values, sep=sep, end=end, flush=flush)


@builtin
def static_assert(ctx: Lowering, cond, msg: str = "") -> None:
    """Fail compilation with ``msg`` unless the compile-time ``cond`` holds."""
    if isinstance(cond, Tile):
        raise CompileError("tl.static_assert needs a compile-time condition (use "
                           "tl.device_assert for run-time values)")
    if not cond:
        raise CompileError(f"static_assert failed: {msg}" if msg else "static_assert failed")


@builtin
def assume(ctx: Lowering, cond) -> None:
    """A promise to the compiler that ``cond`` holds; accepted and not checked (no pass here
    uses it yet). A compile-time false condition is an error."""
    if not isinstance(cond, Tile) and not cond:
        raise CompileError("tl.assume of a condition that is false at compile time")


@builtin
def device_assert(ctx: Lowering, cond, msg: str = "", mask=None) -> None:
    """Stop the kernel with a fault report naming this line, the block and the threads
    where ``cond`` is false (and ``mask``, if given, is true)."""
    if not isinstance(cond, Tile):
        if not cond:
            raise CompileError(f"device_assert is false at compile time: {msg}")
        return
    sites = ctx.fn.meta.setdefault("asserts", [])
    if len(sites) >= MAX_ASSERT_SITES:
        raise CompileError(f"more than {MAX_ASSERT_SITES} device_assert calls in one kernel")
    sites.append((ctx.b.loc, str(msg)))
    addr = ASSERT_BASE + (len(sites) - 1) * ASSERT_STRIDE
    bad = ctx.unary("not", ctx.cast(cond, I1))
    if mask is not None:
        bad = ctx.binary("&", bad, ctx.cast(ctx.to_tile(mask), I1))
    ptr = ctx.b.op("smem", [], {"offset": addr}, [ir.ptr("i32", "shared")]).result
    _each(ctx, [bad], lambda vs: ctx.b.op("load", [ptr, vs[0]]))


PRINT_PARAMS = ("__print_i", "__print_f")
"""Hidden pointer parameters of a kernel that prints: the same buffer, read as int32 and as
float32 words. The launch passes it; word 0 counts the words written after it."""
PRINT_BUFFER_WORDS = 1 << 16


def _print_params(ctx: Lowering) -> tuple[ir.Value, ir.Value]:
    got = ctx.fn.meta.get("print_params")
    if got is None:
        got = []
        for name, elem in zip(PRINT_PARAMS, ("i32", "f32"), strict=True):
            v = ir.Value(ir.ptr(elem), None, name)
            ctx.fn.params.append(ir.Param(name, v.type, v))
            got.append(v)
        ctx.fn.meta["print_params"] = got = tuple(got)
    return got


@builtin
def device_print(ctx: Lowering, prefix, *args, hex: bool = False) -> None:  # noqa: A002
    """Print ``prefix`` and the values of each element, as Triton does
    (``pid (x, y, z) idx (i) prefix: values``), after the launch. Each printing thread
    appends a record to a buffer in device memory (an atomic add reserves its words), so
    it works alike on the ISS, the RTL and the GPU; the launch prints the records sorted by
    program and element. Records beyond the buffer's 64 Ki words are dropped."""
    if not isinstance(prefix, str):
        raise CompileError("tl.device_print needs a string prefix first")
    tiles = [ctx.to_tile(a) for a in args]
    if not tiles:
        raise CompileError("tl.device_print needs values to print")
    for t in tiles:
        if t.type.is_ptr:
            raise CompileError("tl.device_print cannot print pointers")
    shape: tuple[int, ...] = ()
    for t in tiles:
        shape = ctx.broadcast_shape(shape, t.shape)
    tiles = [ctx.broadcast_to(t, shape) for t in tiles]
    sites = ctx.fn.meta.setdefault("prints", [])
    sites.append((prefix, ["f32" if t.type == F32 else "u32" if t.type.unsigned else "i32"
                           for t in tiles], bool(hex)))
    site = len(sites) - 1
    pi, pf = _print_params(ctx)
    b = ctx.b
    words = 5 + len(tiles)
    if shape:
        rep = ctx.replica_mask(shape)
    elif ctx.thread_level:
        rep = None
    else:  # a program-level scalar: printed once per program
        rep = b.op("icmp", [ctx.tid(), ctx.const(0)], {"cond": "eq"}).result
    for s in range(ctx.nslots(shape)):
        c = Coords(ctx, shape, s)
        vals = [t.at(c) for t in tiles]
        if shape:
            idx = c.flat()
        else:
            idx = ctx.tid() if ctx.thread_level else ctx.const(0)
        count = [pi, ctx.const(words)] + ([rep] if rep is not None else [])
        off = b.op("atomic", count, {"op": "add"}).result
        fits = b.op("icmp", [off, ctx.const(PRINT_BUFFER_WORDS - 1 - words)],
                    {"cond": "le"}).result
        ok = fits if rep is None else b("and", fits, rep)
        base = b("add", off, ctx.const(1))
        head = [ctx.const(site), ctx.sreg("ctaid.x"), ctx.sreg("ctaid.y"),
                ctx.sreg("ctaid.z"), idx]
        for j, v in enumerate(head + vals):
            if v.type == I1:
                v = b("select", v, ctx.const(1), ctx.const(0))
            p = pf if v.type == F32 else pi
            b.op("store", [b("gep", p, b("add", base, ctx.const(j))), v, ok])


def format_prints(buffer, sites: list) -> list[str]:
    """The lines a launch's print buffer holds, sorted by program, element and site."""
    import numpy as np

    words = np.asarray(buffer).view(np.uint32)
    n = min(int(words[0]), len(words) - 1)
    recs = []
    i = 1
    while i < n + 1:
        site = int(words[i])
        if site >= len(sites):
            break
        prefix, kinds, as_hex = sites[site]
        k = 5 + len(kinds)
        rec = words[i:i + k]
        vals = []
        for kind, w in zip(kinds, rec[5:], strict=True):
            w = int(w)
            if as_hex:
                vals.append(f"0x{w:08x}")
            elif kind == "f32":
                vals.append(repr(float(np.array([w], np.uint32).view(np.float32)[0])))
            elif kind == "u32":
                vals.append(str(w))
            else:
                vals.append(str(w - (1 << 32) if w >= 1 << 31 else w))
        pid = tuple(int(x) for x in rec[1:4])
        recs.append(((pid[2], pid[1], pid[0], int(rec[4]), site),
                     f"pid ({pid[0]}, {pid[1]}, {pid[2]}) idx ({int(rec[4])}) "
                     f"{prefix.rstrip().rstrip(':')}: {', '.join(vals)}"))
        i += k
    return [line for _, line in sorted(recs)]


_ADDR = re.compile(r"shared address 0x([0-9a-f]+)")


def assertion_from_fault(fault, sites: list[tuple[SourceLocation, str]], warp_size: int
                         ) -> DeviceAssertionError | None:
    """The failed assertion a kernel fault stands for, or None if it is another fault."""
    if not sites:
        return None
    rec = getattr(fault, "record", None)
    if rec is None or rec.cause.name != "OUT_OF_RANGE":
        return None
    m = _ADDR.search(rec.detail or "")
    if m is not None:
        k = (int(m.group(1), 16) - ASSERT_BASE) // ASSERT_STRIDE
        if not 0 <= k < len(sites):
            return None
        where = [sites[k]]
    elif "lds" in (rec.instruction or ""):  # a record without the address (RTL)
        where = sites
    else:
        return None
    lanes = [lane for lane in range(32) if rec.lane_mask >> lane & 1]
    threads = ", ".join(str(rec.warp * warp_size + lane) for lane in lanes)
    bx, by, bz = rec.block
    places = " or ".join(f"{loc}: {msg or 'assertion failed'}" for loc, msg in where)
    return DeviceAssertionError(
        f"{places}: device assertion failed in block ({bx},{by},{bz}), thread"
        f"{'s' if len(lanes) != 1 else ''} {threads} (warp {rec.warp}, pc 0x{rec.pc:04x})",
        rec)
