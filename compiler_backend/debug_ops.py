"""Compile-time and run-time checks of the language: ``tl.static_print``,
``tl.static_assert``, ``tl.device_assert``, ``tl.device_print`` and ``tl.assume``.

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
from .ir import I1
from .lang_base import _each, builtin
from .tiles import Lowering, Tile

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


@builtin
def device_print(ctx: Lowering, prefix, *args, hex: bool = False) -> None:  # noqa: A002
    """Not available: this GPU has no output channel from kernels yet (see
    docs/compiler.md); a compile error says so rather than dropping the output."""
    raise CompileError("tl.device_print is not supported: kernels have no output channel "
                       "on this GPU; store the values to an output array instead")


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
