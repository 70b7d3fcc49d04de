"""Elementwise kernels as a loop over chunks of each thread's share, not one copy per element.

The front end gives every thread its share of a tile fully unrolled: a 1024-element tile on 32
threads is 32 copies of the code. Where that would not fit in instruction memory, an
elementwise kernel is lowered instead for ``threads * F`` *virtual* threads, and the body is
wrapped in ``for k in range(0, F * threads, threads)`` with every read of ``tid`` replaced by
``tid + k``. Virtual thread ``tid + k`` owns, in the cyclic layout, exactly the elements the
physical thread ``tid`` owns in the unrolled code for its slots ``k / threads``, ``k / threads +
F`` ...: each element is computed by the same thread with the same operations in the same
order, so the results are bit-identical; only the order in which a thread visits its elements
changes, which an elementwise kernel cannot observe.

A kernel qualifies when nothing in it crosses elements or threads: no shared memory (the
reductions, scans, dots and relayouts all go through it), no barrier, shuffle, vote, fence or
atomic, no ``exit`` (an early ``return`` would end the remaining chunks), no ``device_print``
(its order would change), and no special register but ``tid``, ``ctaid.*`` and ``nctaid.*``.
Anything else keeps the unrolled form (and its instruction-memory error where it does not fit).
"""

from __future__ import annotations

from collections.abc import Callable

from . import ir
from .errors import CompileError

_CROSSING = frozenset({"barrier", "shfl", "vote", "smem", "mma", "atomic", "exit", "fence"})


def why_not(fn: ir.Function) -> str | None:
    """Why the lowered kernel ``fn`` cannot be chunked, or None when it can."""
    if fn.shared_bytes:
        return "it uses shared memory"
    if fn.meta.get("prints"):
        return "it prints per element"
    for op in fn.walk():
        if op.name in _CROSSING:
            return f"it has a '{op.name}' operation (crosses elements or ends the thread)"
        if op.name == "sreg":
            name = op.attrs["name"]
            if name != "tid" and not name.startswith(("ctaid.", "nctaid.")):
                return f"it reads the special register '{name}'"
    return None


def wrap(fn: ir.Function, threads: int, factor: int) -> None:
    """Turn ``fn``, lowered for ``threads * factor`` virtual threads, into a kernel for
    ``threads`` threads that runs its body once per chunk (``factor`` iterations)."""
    old = fn.body.ops
    body = ir.Block([ir.I32])
    k = body.args[0]
    b = ir.Builder(body)
    vtid = b("add", b.op("sreg", [], {"name": "tid"}).result, k)
    tids = {op.result.id for o in old for op in o.walk()
            if op.name == "sreg" and op.attrs["name"] == "tid"}
    for o in old:
        for op in o.walk():
            op.operands = [vtid if v.id in tids else v for v in op.operands]
        body.append(o)
    body.append(ir.Op("yield", [], []))
    fn.body.ops = []
    top = ir.Builder(fn.body)
    loop = top.op("for", [top.const(0, ir.I32), top.const(factor * threads, ir.I32),
                          top.const(threads, ir.I32)], types=[], regions=[body])
    loop.attrs["step_sign"] = 1
    loop.attrs["chunks"] = factor
    fn.threads = threads


DEFAULT_IMEM_BYTES = 16 * 1024
"""Instruction memory assumed when no configuration is given (the ``small`` one's)."""

FILL = 0.5
"""Chunk where the estimated unrolled code passes this fraction of instruction memory: the
estimate (IR operations) undercounts the instructions code generation adds (moves, address
arithmetic, spills), and the code must fit with room to spare, not just barely."""

CHUNK_OPS = 128
"""Most IR operations one chunk may hold when chunking is chosen: a larger chunk only
amortises the loop's three instructions per iteration (compare, add, branch), which matter
for short bodies alone, while its live values grow with it and spill (measured on
``_seeded_dropout`` at 1024 on ``small``: 1 and 4 elements per chunk run 39492 and 44940
warp-instructions, 0 and 11 values spilled). So 4 elements for a short body such as a
vector add, 1 for Philox (about 290 operations an element)."""


def estimate(fn: ir.Function) -> int:
    """Instructions the kernel's code will roughly take: its IR operations (constants and
    loop plumbing mostly become immediates and are not counted)."""
    return sum(op.name not in ("const", "yield") for op in fn.walk())


def pick(fn: ir.Function) -> int:
    """Elements per chunk for ``fn`` lowered unrolled: the largest of 4 and 2 that keeps a
    chunk within :data:`CHUNK_OPS`, else 1."""
    slots = fn.meta.get("slots", 1)
    size = estimate(fn)
    fits = [c for c in (4, 2) if c < slots and size * c / slots <= CHUNK_OPS]
    return fits[0] if fits else 1


def can_chunk(fn: ir.Function) -> bool:
    """True when ``fn`` is unrolled over several elements per thread and a chunk loop could
    replace it."""
    return fn.meta.get("slots", 1) > 1 and "chunks" not in fn.meta and why_not(fn) is None


def too_big(fn: ir.Function, code_bytes: int, config) -> bool:
    """True when ``fn``'s unrolled code of ``code_bytes`` does not fit ``config``'s instruction
    memory but a chunk loop could replace it (the estimate :func:`choose` goes by missed)."""
    return config is not None and code_bytes > config.imem_bytes and can_chunk(fn)


def choose(fn: ir.Function, lower: Callable[[int], ir.Function], threads: int,
           chunk: int | None, config=None) -> ir.Function:
    """``fn`` (lowered unrolled for ``threads`` threads), or the kernel lowered again by
    ``lower(virtual_threads)`` as a chunk loop: with ``chunk`` None where the unrolled code
    would pass :data:`FILL` of instruction memory (the chunk the largest of 4, 2 elements
    within :data:`CHUNK_OPS`, else 1), with ``chunk`` given always (0: never)."""
    if chunk == 0:
        return fn
    slots = fn.meta.get("slots", 1)
    if chunk is None:
        budget = (config.imem_bytes if config is not None else DEFAULT_IMEM_BYTES) // 4 * FILL
        size = estimate(fn)
        if size <= budget or slots < 2:
            return fn
        c = pick(fn)
    else:
        if chunk < 1 or slots % chunk or chunk >= slots:
            raise CompileError(f"chunk={chunk}: the chunk must divide the {slots} elements per "
                               "thread and be smaller")
        c = chunk
    reason = why_not(fn)
    if reason is not None:
        if chunk is not None:
            raise CompileError(f"cannot run as a chunk loop: {reason}")
        fn.meta["not_chunked"] = reason
        return fn
    out = lower(threads * (slots // c))
    out.meta["chunks"] = slots // c
    return out



HOISTED_CONSTANTS = 8
"""A chunk loop with at most this many distinct constants keeps them in registers from its
pre-header (as every loop does); with more (a ``static_range`` of steps, each with its own
constant) they are materialised at their uses, else they would crowd the register file and
spill. Philox has 6 or so: hoisted, dropout at 1024 runs 39492 warp-instructions on
``small`` against 45072 with every constant loaded in the loop."""


def constants(loop: ir.Op) -> int:
    """Distinct non-zero 32-bit constants in ``loop``'s body."""
    return len({(str(op.result.type), op.attrs["value"]) for op in loop.regions[0].walk()
                if op.name == "const" and op.result.type != ir.I1 and op.attrs["value"] != 0})
