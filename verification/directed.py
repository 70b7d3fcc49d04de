"""The directed step-and-compare suite: kernels written to hit one behaviour each.

Every function returns :class:`~simtgpu.verification.launch.KernelLaunch` objects for a core
of ``lanes`` lanes and ``warps`` warp slots; tests run them on the RTL and the ISS and compare
(``verification.harness.check_launches``). Expected results come from the ISS, which is
itself held to NumPy and hand-worked values by tests/sim and tests/driver.
"""

from __future__ import annotations

import struct

import numpy as np
from simtgpu.assembler.examples import example_asm
from simtgpu.isa import FaultCause

from .launch import KernelLaunch, launch_from_asm

__all__ = ["ALL_GROUPS", "FAULT_AFTER_WORK", "example_launches", "fault_launches",
           "hazard_launches"]

def _f32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float32).view(np.uint32)


def _src(name: str) -> str:
    return example_asm(name).read_text()


def example_launches(lanes: int, warps: int, seed: int = 1) -> list[KernelLaunch]:
    """Every kernel of examples/asm at sizes with ragged last blocks and warps."""
    rng = np.random.default_rng(seed)
    tpb = warps * lanes
    out = []
    n = 3 * tpb - lanes // 2 - 1
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out.append(launch_from_asm(_src("vector_add"), "vector_add", (-(-n // tpb),), (tpb,),
                               ["a", "b", "c", n],
                               {"a": _f32(a), "b": _f32(b), "c": np.zeros(n, np.uint32)},
                               name="example_vector_add"))
    alpha = -0.75
    out.append(launch_from_asm(_src("saxpy"), "saxpy", (-(-n // (tpb // 2)),), (tpb // 2,),
                               ["x", "y", struct.unpack("<I", struct.pack("<f", alpha))[0], n],
                               {"x": _f32(a), "y": _f32(b)}, name="example_saxpy"))
    nr = 2 * tpb + 3
    x = rng.standard_normal(nr).astype(np.float32)
    bs = 1 << (tpb.bit_length() - 1)
    out.append(launch_from_asm(_src("reduction"), "block_sum", (-(-nr // bs),), (bs,),
                               ["x", "out", nr],
                               {"x": _f32(x), "out": np.zeros(-(-nr // bs), np.uint32)},
                               name="example_reduction"))
    nd = 2 * tpb + 5
    xv = rng.integers(-3, 40, nd).astype(np.int32).view(np.uint32)
    out.append(launch_from_asm(_src("divergence"), "classify", (-(-nd // tpb),), (tpb,),
                               ["x", "out", nd], {"x": xv, "out": np.zeros(nd, np.uint32)},
                               name="example_divergence"))
    m, nn, k = 5, 7, 6
    am = rng.standard_normal((m, k)).astype(np.float32)
    bm = rng.standard_normal((k, nn)).astype(np.float32)
    bx = min(4, lanes)
    by = max(1, tpb // bx // 2)
    out.append(launch_from_asm(_src("matmul"), "matmul", (-(-nn // bx), -(-m // by)), (bx, by),
                               ["a", "b", "c", m, nn, k],
                               {"a": _f32(am), "b": _f32(bm), "c": np.zeros(m * nn, np.uint32)},
                               name="example_matmul"))
    return out


_HEAD = """
        .kernel {name}
        .param  out, ptr
        .param  in, ptr
        .shared {shared}
        s2r     r1, tid
        s2r     r2, ctaid.x
        s2r     r3, ntid.x
        mul     r2, r2, r3
        add     r1, r1, r2              ; gid
        shli    r2, r1, 2
        ldparam r3, out
        add     r3, r3, r2              ; &out[gid] (column layout)
        ldparam r4, in
        add     r4, r4, r2              ; &in[gid]
        ldg     r5, [r4]                ; a per-thread value
        s2r     r6, tid
"""


def _kernel(name: str, body: str, lanes: int, warps: int, n_out: int, shared: int = 0,
            blocks: int = 1, tpb: int | None = None, seed: int = 5,
            note: str = "") -> KernelLaunch:
    tpb = tpb or warps * lanes
    total = tpb * blocks
    rng = np.random.default_rng(seed)
    src = _HEAD.format(name=name, shared=shared) + body + "\n        exit\n        .end\n"
    inp = rng.integers(0, 1 << 32, total + 64, dtype=np.uint64).astype(np.uint32)
    launch = launch_from_asm(src, name, (blocks,), (tpb,), ["out", "in"],
                             {"out": np.zeros(n_out * total + 64, np.uint32), "in": inp},
                             name=name)
    launch.note = note
    return launch


def _out(slot: int, total: int, reg: str) -> str:
    off = 4 * slot * total
    if off < 1024:
        return f"        stg     [r3+{off}], {reg}\n"
    return (f"        lui     r30, {off >> 16}\n        lli     r30, {off & 0xFFFF}\n"
            f"        add     r30, r30, r3\n        stg     [r30], {reg}\n")


_PRODUCERS = {
    "alu": "addi    r8, r5, 7",
    "mul": "mul     r8, r5, r5",
    "fpu": "ffma    r8, r5, r5, r5",
    "sfu": "sfu.rsqrt r8, r5",
    "ldg": "ldg     r8, [r4]",
    "lds": "lds     r8, [r9]",
    "shfl": "shfl.xor r8, r5, r10",
    "atom": "atom.add r8, [r11], r5",
}


def hazard_launches(lanes: int, warps: int) -> list[KernelLaunch]:
    """Read-after-write at every distance 0..9 after every producer class, with one warp
    (no other warp hides the latency) and with every warp slot busy."""
    out = []
    for tpb, tag in ((lanes, "1warp"), (warps * lanes, "allwarps")):
        atom_off = 4 * 10 * len(_PRODUCERS) * tpb  # the thread's own word after the outputs
        body = ["        shli    r9, r6, 2", "        sts     [r9], r5", "        bar",
                "        movi    r10, 1", f"        lui     r11, {atom_off >> 16}",
                f"        lli     r11, {atom_off & 0xFFFF}", "        add     r11, r11, r3"]
        slot = 0
        for prod in _PRODUCERS.values():
            for dist in range(10):
                body.append(f"        {prod}")
                for k in range(dist):  # independent filler on other registers
                    body.append(f"        addi    r{12 + k % 8}, r{12 + (k + 3) % 8}, {k + 1}")
                body.append("        add     r20, r8, r5")  # the dependent read
                body.append(_out(slot, tpb, "r20").rstrip())
                slot += 1
        out.append(_kernel(f"hazards_{tag}", "\n".join(body), lanes, warps, slot + 1,
                           shared=4 * tpb, tpb=tpb))
    return out


def divergence_launches(lanes: int, warps: int) -> list[KernelLaunch]:
    """Nested if/else 5 deep on tid bits, and loops with per-thread trip counts (nested)."""
    depth = 5
    lines = ["        movi    r8, 0"]

    def nest(level: int) -> None:
        if level == depth:
            lines.append("        addi    r8, r8, 100")
            return
        j, e = f"j{level}_{len(lines)}", f"e{level}_{len(lines)}"
        lines.append(f"        andi    r9, r5, {1 << level}")  # a random bit per thread
        lines.append(f"        isetp.ne p{level % 5}, r9, r0")
        lines.append(f"        ssy     {j}")
        lines.append(f"   @p{level % 5} bra     {e}")
        lines.append(f"        addi    r8, r8, {1 << level}")
        nest(level + 1)
        lines.append("        sync")
        lines.append(f"{e}:")
        lines.append(f"        addi    r8, r8, {3 << level}")
        nest(level + 1)
        lines.append("        sync")
        lines.append(f"{j}:")

    nest(0)
    lines.append(_out(0, warps * lanes, "r8").rstrip())
    nested = _kernel("divergence_nested5", "\n".join(lines), lanes, warps, 2)
    loops = """
        andi    r8, r6, 7
        addi    r8, r8, 1               ; outer trip count 1..8 per thread
        movi    r10, 0
        ssy     o_done
o_top:  andi    r9, r5, 3               ; inner trip count 0..3 (data dependent)
        ssy     i_done
        isetp.eq p1, r9, r0
   @p1  bra     i_skip
i_top:  addi    r10, r10, 3
        addi    r9, r9, -1
        isetp.gt p2, r9, r0
   @p2  bra     i_top
i_skip: sync
i_done: addi    r10, r10, 1
        addi    r5, r5, 5
        addi    r8, r8, -1
        isetp.gt p3, r8, r0
   @p3  bra     o_top
        sync
o_done:
""" + _out(0, warps * lanes, "r10") + _out(1, warps * lanes, "r5")
    looped = _kernel("loops_per_thread", loops, lanes, warps, 2)
    exits = """
        andi    r8, r6, 3
        isetp.eq p1, r8, r0
        ssy     x_join
   @p1  bra     x_else
        andi    r9, r6, 1
        isetp.ne p2, r9, r0
   @p2  exit                            ; part of the then path leaves for good
        addi    r5, r5, 1
        sync
x_else: addi    r5, r5, 2
        sync
x_join:
""" + _out(0, warps * lanes, "r5")
    exited = _kernel("exit_in_divergence", exits, lanes, warps, 1)
    return [nested, looped, exited]


def barrier_launches(lanes: int, warps: int) -> list[KernelLaunch]:
    """Barriers across every warp of full and ragged blocks: shift values around the block
    through shared memory several times."""
    launches = []
    for tpb in (warps * lanes, warps * lanes - lanes // 2 - 1, 1):
        tpb = max(1, tpb)
        body = ["        shli    r9, r6, 2", "        movi    r12, 0"]
        for step in range(4):
            body += [
                "        sts     [r9], r5",
                "        bar",
                f"        addi    r10, r6, {(step * 3 + 1) % tpb}",
                f"        movi    r11, {tpb}",
                "        isetp.ge p1, r10, r11",
                "        sub     r11, r10, r11",
                "        sel     r10, r11, r10, p1",
                "        shli    r10, r10, 2",
                "        lds     r5, [r10]",
                "        add     r12, r12, r5",
                "        bar",
            ]
        body.append(_out(0, tpb, "r12").rstrip())
        launches.append(_kernel(f"barriers_{tpb}", "\n".join(body), lanes, warps, 1,
                                shared=4 * tpb, tpb=tpb, blocks=2))
    return launches


def bank_conflict_launches(lanes: int, warps: int) -> list[KernelLaunch]:
    """Shared stores and loads at word strides 1, 2, 3, 4, lanes and 0 (broadcast)."""
    tpb = warps * lanes
    body = []
    slot = 0
    for stride in (1, 2, 3, 4, lanes):
        body += [f"        muli    r9, r6, {4 * stride}",
                 f"        addi    r10, r5, {stride}",
                 "        sts     [r9], r10",
                 "        bar",
                 "        lds     r11, [r9]",
                 "        atoms.add r12, [r9], r6",
                 "        bar",
                 "        lds     r13, [r9]",
                 "        bar"]
        body.append(_out(slot, tpb, "r11").rstrip())
        body.append(_out(slot + 1, tpb, "r13").rstrip())
        slot += 2
    body.append("        lds     r11, [r0]")  # broadcast: every lane reads word 0
    body.append(_out(slot, tpb, "r11").rstrip())
    slot += 1
    return [_kernel("bank_conflicts", "\n".join(body), lanes, warps, slot,
                    shared=4 * tpb * max(4, lanes))]


def atomic_launches(lanes: int, warps: int) -> list[KernelLaunch]:
    """Atomics under contention: every thread of the grid on one word (results discarded,
    so the order across warps does not matter), and every lane of a warp on the warp's own
    word with the old values kept (lane order is architectural)."""
    tpb = warps * lanes
    body = """
        ldparam r8, out
        lui     r9, {hi}
        lli     r9, {lo}
        add     r8, r8, r9              ; counters after the outputs
        atom.add r0, [r8], r6           ; whole grid, one word
        addi    r9, r8, 4
        atom.max r0, [r9], r5
        addi    r9, r8, 8
        atom.min r0, [r9], r5
        s2r     r10, ctaid.x
        muli    r10, r10, {wpb}
        s2r     r11, warpid
        add     r10, r10, r11
        shli    r10, r10, 4
        add     r10, r10, r8
        addi    r10, r10, 16            ; the warp's own 4 words
        atom.add r12, [r10], r6
        atom.exch r13, [r10], r5
        addi    r14, r10, 4
        atom.cas r15, [r14], r0, r6     ; only the first lane finds 0
        addi    r14, r10, 8
        atom.fadd r16, [r14], r5
        addi    r14, r10, 12
        atom.min r17, [r14], r5
        shli    r18, r6, 2
        atoms.add r0, [r0], r6          ; the whole block on shared word 0
        addi    r18, r18, 4
        atoms.exch r20, [r18], r5
"""
    wpb = warps
    body = body.format(hi=(4 * 8 * tpb * 2) >> 16, lo=(4 * 8 * tpb * 2) & 0xFFFF, wpb=wpb)
    for i, reg in enumerate(("r12", "r13", "r15", "r16", "r17", "r20")):
        body += _out(i, tpb * 2, reg)
    return [_kernel("atomics_contention", body, lanes, warps, 16, shared=4 * (tpb + 2),
                    blocks=2)]


def residency_launches(lanes: int, warps: int,
                       core_shared_bytes: int = 16 * 1024) -> list[KernelLaunch]:
    """Several blocks resident on a core at once: one-warp blocks filling every warp slot,
    blocks whose shared memory lets fewer of them in than the warp slots would (half as
    many, at least one, in a core of ``core_shared_bytes``; the next waits for space), and
    barriers in resident blocks side by side. Each block first reads its whole shared area
    (zero: a new block sees none of the previous one's data), then fills it with values of
    its own block id, meets a barrier, and reads a neighbour's word (within its area, and
    every thread goes round each loop as often as the others: no launch faults, even on a
    barrier): a block that saw another's shared memory stores a wrong sum."""
    launches = []
    bound_words = core_shared_bytes // 4 // max(1, warps // 2) // lanes * lanes
    half_tpb = max(1, warps // 2) * lanes - 1
    for tag, shared_words, tpb in (("one_warp", lanes, lanes),
                                   ("shared_bound", bound_words, lanes),
                                   ("half", 2 * half_tpb, half_tpb)):
        body = f"""
        s2r     r13, ctaid.x
        s2r     r14, warpid
        movi    r12, 0
        shli    r9, r6, 2               ; this thread's first word
        movi    r15, {4 * shared_words}
        movi    r16, {4 * tpb}
{tag}_rd:
        isetp.ge p1, r9, r15
   @p1  bra     {tag}_rdone
        lds     r10, [r9]
        add     r12, r12, r10           ; stays 0 when the area was cleared
        add     r9, r9, r16
        bra     {tag}_rd
{tag}_rdone:
        shli    r9, r6, 2
{tag}_wr:
        isetp.ge p1, r9, r15
   @p1  bra     {tag}_wdone
        add     r10, r13, r9
        sts     [r9], r10
        add     r9, r9, r16
        bra     {tag}_wr
{tag}_wdone:
        bar
        addi    r10, r6, 1
        movi    r11, {tpb}
        isetp.ge p1, r10, r11
        sub     r11, r10, r11
        sel     r10, r11, r10, p1
        shli    r10, r10, 2
        lds     r17, [r10]
        add     r12, r12, r17
        bar
        shli    r18, r14, 16
        add     r12, r12, r18
"""
        body += _out(0, tpb * 4 * warps, "r12").rstrip()
        launches.append(_kernel(f"resident_{tag}", body, lanes, warps, 1,
                                shared=4 * shared_words, tpb=tpb, blocks=4 * warps))
    return launches


FAULT_AFTER_WORK = """
        .kernel late
        .param  out, ptr
        s2r     r1, tid.x
        ldparam r3, out
        shli    r4, r1, 2
        add     r3, r3, r4
        addi    r20, r1, 1
        stg     [r3], r20
        addi    r21, r1, 2
        addi    r22, r1, 3
        .word   0xffffffff
        .end
"""
"""A whole kernel (one ``out`` pointer, one thread per word) whose every warp reaches an
illegal word with a store and two adds still in flight: the GPU stops at the fault, then
drains, and those older instructions retire as on the ISS (for tests of the driver paths)."""


def fault_launches(lanes: int, warps: int) -> list[tuple[KernelLaunch, FaultCause]]:
    """One kernel per fault cause, each faulting in one known warp."""
    out = []

    def k(name: str, body: str, cause: FaultCause, tpb: int | None = None,
          shared: int = 0, blocks: int = 1) -> None:
        out.append((_kernel(f"fault_{name}", body, lanes, warps, 1, shared=shared,
                            tpb=tpb or lanes, blocks=blocks), cause))

    k("illegal", "        .word   0xffffffff", FaultCause.ILLEGAL_INSTRUCTION)
    # older instructions of the faulting warp still in flight (a store among them) complete
    k("illegal_after_work", """
        addi    r20, r5, 1
        stg     [r3], r20
        addi    r21, r5, 2
        addi    r22, r5, 3
        .word   0xffffffff""", FaultCause.ILLEGAL_INSTRUCTION)
    k("out_of_range", "        movi    r8, 16\n        ldg     r9, [r8]",
      FaultCause.OUT_OF_RANGE)
    k("out_of_range_high", "        lui     r8, 0x7fff\n        stg     [r8], r5",
      FaultCause.OUT_OF_RANGE)
    k("misaligned", "        addi    r8, r4, 2\n        ldg     r9, [r8]", FaultCause.MISALIGNED)
    k("shared_range", "        movi    r8, 64\n        lds     r9, [r8]", FaultCause.OUT_OF_RANGE,
      shared=16)
    k("divergent_barrier", """
        andi    r8, r6, 1
        isetp.eq p1, r8, r0
        ssy     j
   @p1  bra     e
        bar
        sync
e:      sync
j:""", FaultCause.DIVERGENT_BARRIER)
    k("divergent_barrier_after_work", """
        andi    r8, r6, 1
        isetp.eq p1, r8, r0
        ssy     j
   @p1  bra     e
        addi    r20, r5, 3
        stg     [r3], r20
        addi    r21, r5, 4
        bar
        sync
e:      sync
j:""", FaultCause.DIVERGENT_BARRIER)
    k("barrier_deadlock", """
        s2r     r8, warpid
        isetp.eq p1, r8, r0
   @p1  exit                            ; warp 0 leaves, warp 1 waits forever
        bar""", FaultCause.BARRIER_DEADLOCK, tpb=2 * lanes)
    # one block of several resident ones faults in its shared memory's bounds
    k("shared_range_one_block", """
        s2r     r8, ctaid.x
        movi    r9, 2
        isetp.eq p1, r8, r9
        movi    r8, 16
   @p1  lds     r9, [r8]""", FaultCause.OUT_OF_RANGE, shared=16, blocks=2 * warps)
    k("stack_overflow", "\n".join(f"        ssy     z{i}" for i in range(17))
      + "\n" + "\n".join(f"z{i}:" for i in range(17)), FaultCause.STACK_OVERFLOW)
    k("stack_underflow", "        sync", FaultCause.STACK_UNDERFLOW)
    # an older instruction faults in mem after a younger one of its warp has faulted in ex1
    # or at issue: the older one's fault is the record (and nothing between retires)
    k("store_then_underflow", "        movi    r8, 16\n        stg     [r8], r5\n        sync",
      FaultCause.OUT_OF_RANGE)
    k("load_then_illegal", """
        addi    r8, r4, 2
        ldg     r9, [r8]
        addi    r20, r5, 1
        .word   0xffffffff""", FaultCause.MISALIGNED)
    # past every configuration's instruction memory (64 KiB at most)
    k("pc_out_of_range", "        bra     past+65536\npast:",
      FaultCause.PC_OUT_OF_RANGE)
    # (a PC just past the loaded code is covered by tests/rtl/core test_pc_past_the_loaded_code:
    # these fault kernels share one instruction-memory image, so "past this kernel" is the
    # next kernel's code here)
    return out


ALL_GROUPS = {
    "examples": example_launches,
    "hazards": hazard_launches,
    "divergence": divergence_launches,
    "barriers": barrier_launches,
    "bank_conflicts": bank_conflict_launches,
    "atomics": atomic_launches,
    "residency": residency_launches,
}
"""Directed groups that must match the ISS exactly (faults are separate)."""
