"""The wiring contract between the cores and the rest of the GPU.

Every port that crosses a block boundary at GPU level is defined here once, so a core, the
dispatcher, the interconnect, the host interface and the memory model cannot disagree about a
field. Signatures are written from the *initiator's* point of view (the core for memory, fault,
retire and perf ports; the GPU for dispatch, instruction-memory writes and control); the other
side uses ``In(...)`` or ``.flip()``.

A core is built as::

    class Core(wiring.Component):
        def __init__(self, cfg: RtlConfig, core_id: int):
            super().__init__(core_signature(cfg))

and so has the members ``mem``, ``dispatch``, ``fault``, ``retire``, ``imem``, ``perf``,
``start``, ``halt``, ``flush``, ``busy`` and ``drained`` described in :func:`core_signature`.

Enums come from ``isa/`` (:data:`FaultCause` mirrors ``isa.abi.FaultCause``; :class:`AtomOp`
uses the ``fn`` codes of ``atom.*``, with ``cas`` after them) so no number is retyped.
"""

from __future__ import annotations

from amaranth.hdl import unsigned
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out
from simtgpu.arch.command_queue import MMIO_ADDR_BITS
from simtgpu.isa.instructions import ATOMIC_OPS

from .configs import RtlConfig
from .isa_consts import FaultCause, make_enum

__all__ = [
    "PERF_EVENTS", "PERF_LEVELS", "AtomOp", "FaultCause", "MemKind", "block_dispatch_signature",
    "block_layout", "core_signature", "dim3_layout", "fault_record_layout", "fault_signature",
    "imem_write_signature", "mem_port_signature", "mem_request_layout", "mem_response_layout",
    "mmio_signature", "perf_layout", "retire_signature",
]


class MemKind(enum.Enum, shape=2):
    """What a memory request does."""

    READ = 0
    WRITE = 1
    ATOMIC = 2


AtomOp = make_enum("AtomOp", {**{name.upper(): fn for fn, name in enumerate(ATOMIC_OPS)},
                              "CAS": len(ATOMIC_OPS)}, __name__)
"""Atomic operation of an ATOMIC request: the ``fn`` code of ``atom.<op>``
(ADD, MIN, MAX, EXCH, FADD) and CAS after them (``atom.cas`` has its own opcode)."""


# --- memory port ---------------------------------------------------------------------------

def mem_request_layout(line_words: int, tag_bits: int = 8) -> data.StructLayout:
    """A memory request.

    ``kind``: READ/WRITE a whole line (``addr`` line-aligned), or ATOMIC on one word at
    ``addr`` (word-aligned). ``wdata``/``be``: line data and byte enables for WRITE (bit
    ``4*i+b`` enables byte ``b`` of word ``i``); a READ's may be anything and are ignored.
    ``atom_op``/``atom_b``/``atom_c``: the operation and its operands (``atom_c`` is the swap
    value of CAS; ``atom_b`` the compare value of CAS). ``tag``: returned unchanged on the
    response.
    """
    return data.StructLayout({
        "kind": MemKind,
        "addr": unsigned(32),
        "wdata": data.ArrayLayout(unsigned(32), line_words),
        "be": unsigned(4 * line_words),
        "atom_op": AtomOp,
        "atom_b": unsigned(32),
        "atom_c": unsigned(32),
        "tag": unsigned(tag_bits),
    })


def mem_response_layout(line_words: int, tag_bits: int = 8) -> data.StructLayout:
    """A memory response: the line read (READ), the old word in ``rdata[0]`` (ATOMIC), or
    nothing meaningful (WRITE, which is acknowledged so that fences can count stores)."""
    return data.StructLayout({
        "rdata": data.ArrayLayout(unsigned(32), line_words),
        "tag": unsigned(tag_bits),
    })


def mem_port_signature(line_words: int, tag_bits: int = 8) -> wiring.Signature:
    """A memory port seen from the initiator: ``req`` out, ``resp`` in.

    Every request (READ, WRITE and ATOMIC) gets exactly one response; responses come back in
    request order. The initiator must accept responses it asked for (``resp.ready`` may only
    be low for a bounded time). The memory side is ``mem_port_signature(...).flip()``.
    """
    return wiring.Signature({
        "req": Out(stream.Signature(mem_request_layout(line_words, tag_bits))),
        "resp": In(stream.Signature(mem_response_layout(line_words, tag_bits))),
    })


# --- block dispatch ------------------------------------------------------------------------

def dim3_layout(bits: int = 16) -> data.StructLayout:
    return data.StructLayout({"x": unsigned(bits), "y": unsigned(bits), "z": unsigned(bits)})


def block_layout() -> data.StructLayout:
    """One thread block offered to a core.

    ``num_threads`` = ``block_dim.x*y*z``; ``num_warps`` = ceil(num_threads / lanes);
    ``shared_bytes`` is the block's shared-memory size (zeroed by the core at block start);
    ``param_addr``/``param_size`` locate the kernel parameter block in global memory (bytes).
    """
    return data.StructLayout({
        "entry_pc": unsigned(32),
        "block_id": dim3_layout(),
        "grid": dim3_layout(),
        "block_dim": dim3_layout(),
        "num_threads": unsigned(16),
        "num_warps": unsigned(8),
        "param_addr": unsigned(32),
        "param_size": unsigned(16),
        "shared_bytes": unsigned(32),
    })


def block_dispatch_signature() -> wiring.Signature:
    """Block hand-off, seen from the dispatcher.

    A block is transferred on a cycle with ``valid & ready`` (stream rules: ``payload`` is
    stable while ``valid`` is high). The core drives ``ready`` high only when it has enough
    free warp slots and shared memory for the *offered* payload (so ``ready`` may depend on
    ``payload``, but not on ``valid``: the dispatcher picks a ready core and then raises its
    ``valid``). The core pulses ``block_done`` for one cycle each time all warps of one of
    its blocks have exited; the dispatcher counts these pulses.
    """
    return wiring.Signature({
        "valid": Out(1),
        "payload": Out(block_layout()),
        "ready": In(1),
        "block_done": In(1),
    })


# --- host MMIO bus -------------------------------------------------------------------------

def mmio_signature(addr_bits: int = MMIO_ADDR_BITS) -> wiring.Signature:
    """The host's register bus, seen from the host.

    A transaction starts on a cycle where ``we`` or ``re`` is high while the device is idle;
    the host holds ``addr``/``wdata``/``we``/``re`` until the cycle in which ``ready`` is high
    (``rdata`` is valid in that cycle for a read), and may start the next one on the cycle
    after. ``addr`` is a byte offset (``simtgpu.arch.command_queue.Mmio``).
    """
    return wiring.Signature({
        "addr": Out(addr_bits),
        "wdata": Out(32),
        "we": Out(1),
        "re": Out(1),
        "rdata": In(32),
        "ready": In(1),
    })


# --- faults, retire, instruction memory, performance events ---------------------------------

def fault_record_layout(lanes: int) -> data.StructLayout:
    """What a core reports about a fault. ``warp`` is the warp index within its block (as the
    ISS numbers warps); ``lane_mask`` holds the faulting lanes; ``pc`` the faulting
    instruction's imem byte address; ``instr`` its instruction word (0 when there is none, as
    for ``PC_OUT_OF_RANGE``)."""
    return data.StructLayout({
        "cause": FaultCause,
        "warp": unsigned(8),
        "lane_mask": unsigned(lanes),
        "pc": unsigned(32),
        "instr": unsigned(32),
        "block": dim3_layout(),
    })


def fault_signature(lanes: int) -> wiring.Signature:
    """A core's fault output: ``valid`` rises with the first fault and stays high, with
    ``record`` stable, until ``flush``. The core stops scheduling once it faults."""
    return wiring.Signature({
        "valid": Out(1),
        "record": Out(fault_record_layout(lanes)),
    })


def retire_signature(lanes: int) -> wiring.Signature:
    """One retired warp-instruction per cycle (like RVFI), in the wb stage.

    ``warp``: warp index within the block; ``block``: the block id; ``mask``: active lanes;
    ``exec``: lanes that executed (active & guard); ``rd_valid``/``rd``/``values``: register
    write (``values[l]`` meaningful for lanes in ``exec``); ``pd_valid``/``pd``/``pvalues``:
    predicate write (bit ``l`` for lane ``l``).
    """
    return wiring.Signature({
        "valid": Out(1),
        "warp": Out(8),
        "block": Out(dim3_layout()),
        "pc": Out(32),
        "mask": Out(lanes),
        "exec": Out(lanes),
        "rd_valid": Out(1),
        "rd": Out(5),
        "values": Out(data.ArrayLayout(unsigned(32), lanes)),
        "pd_valid": Out(1),
        "pd": Out(3),
        "pvalues": Out(lanes),
    })


def imem_write_signature(addr_bits: int) -> wiring.Signature:
    """Instruction-memory write port, seen from the host: write ``data`` to word ``addr``
    (byte address / 4) when ``we`` is high. The host broadcasts it to every core."""
    return wiring.Signature({
        "we": Out(1),
        "addr": Out(addr_bits),
        "data": Out(32),
    })


PERF_EVENTS: tuple[str, ...] = (
    "issued", "stall_scoreboard", "stall_memory", "stall_barrier", "stall_structural",
    "stall_idle", "mem_transactions", "divergence", "barriers",
)
"""Per-core performance events (fields of :func:`perf_layout`). Retired instructions and
thread instructions are counted by the GPU from the retire port, not from these."""

PERF_LEVELS: tuple[str, ...] = ("resident_warps", "resident_blocks")
"""Per-core levels (fields of :func:`perf_layout`, 6 bits): the warps and the blocks resident
on the core this cycle. Summed over the cycles of a launch they give occupancy."""


def perf_layout() -> data.StructLayout:
    """Per-cycle performance event strobes from a core (all one bit).

    Each cycle the scheduler either issues (``issued``) or charges the cycle to exactly one
    stall reason: ``stall_scoreboard`` (ready warps all wait on register dependencies),
    ``stall_memory`` (waiting on global memory or LSU back-pressure), ``stall_barrier`` (the
    waiting warps are at a barrier), ``stall_structural`` (a busy shared unit: the SIMT stack
    unit, the SFU, the SFU's write-back),
    ``stall_idle`` (no live warp on the core). ``mem_transactions``: a request was accepted on
    the core's memory port. ``divergence``: a branch split a warp. ``barriers``: a block
    barrier completed (all warps released). ``resident_warps``/``resident_blocks``
    (:data:`PERF_LEVELS`): the warps and blocks resident on the core, counts rather than
    strobes. The core registers the port: each cycle's fields tell of the cycle before.
    """
    return data.StructLayout({**{name: unsigned(1) for name in PERF_EVENTS},
                              **{name: unsigned(6) for name in PERF_LEVELS}})


MEM_PERF_EVENTS = ("l1_hit", "l1_miss", "l1_merge", "l1_mshr_full", "dram_read",
                   "dram_write", "load")
LATENCY_BITS = 16
"""Width of a measured load latency (cycles, modulo 2**16)."""


def mem_perf_layout() -> data.StructLayout:
    """Per-cycle events of a core's memory path (rtl/mem_path.py), for the counters.

    ``l1_hit``, ``l1_miss``, ``l1_merge``: a read accepted by the L1 as a hit, a new miss, or
    merged into a pending miss; ``l1_mshr_full``: a read held back because every MSHR is busy
    (a stall cycle). ``dram_read``, ``dram_write``: a line request left the core's path toward
    memory (a read or an atomic; a store). ``load``: a read's response reached the LSU, with
    ``load_latency`` the cycles since the read left the core's request buffer (taken by the
    L1, or by the interconnect).
    """
    fields = {name: unsigned(1) for name in MEM_PERF_EVENTS}
    fields["load_latency"] = unsigned(LATENCY_BITS)
    return data.StructLayout(fields)


L2_PERF_EVENTS = ("l2_hit", "l2_miss", "l2_merge", "l2_mshr_full", "ext_read", "ext_write")


def l2_perf_layout() -> data.StructLayout:
    """Per-cycle events of the shared L2 (rtl/l2_cache.py; 0 without one) and of the GPU's
    external memory port, for the counters: the L2's strobes, and a read or atomic
    (``ext_read``) or a write (``ext_write``) accepted on the external port."""
    return data.StructLayout({name: unsigned(1) for name in L2_PERF_EVENTS})


def core_signature(cfg: RtlConfig) -> wiring.Signature:
    """The whole interface of one core.

    ``mem``: global memory port (tag = warp slot or anything else the core needs).
    ``dispatch``: blocks in. ``fault``: fault out. ``retire``: retired instructions out.
    ``imem``: instruction-memory writes in. ``perf``: event increments out.
    ``start``: one-cycle pulse when a launch starts (before its first block is offered).
    ``halt``: while high the core schedules no new instruction; instructions in flight finish.
    ``code_base``, ``code_end``: the running launch's code range (its module's code, from the
    command record); fetch faults ``PC_OUT_OF_RANGE`` at a pc outside it.
    ``flush``: one-cycle pulse, only given while ``drained`` is high: drop every resident
    block and warp and clear ``fault``; the core is empty the next cycle.
    ``busy``: a block is resident or anything is in flight.
    ``drained``: nothing is in flight: pipeline stages empty, no memory request pending or
    unanswered (resident warps may still exist).
    ``fence``: one-cycle pulse, a ``fence`` issued (the warp's stores are complete): the
    memory path below invalidates its non-coherent L1 so that later loads see other cores'
    stores (docs/memory-system.md).
    """
    return wiring.Signature({
        "mem": Out(mem_port_signature(cfg.line_words, cfg.tag_bits)),
        "dispatch": In(block_dispatch_signature()),
        "fault": Out(fault_signature(cfg.lanes)),
        "retire": Out(retire_signature(cfg.lanes)),
        "imem": In(imem_write_signature(cfg.imem_addr_bits)),
        "code_base": In(32),
        "code_end": In(32),
        "perf": Out(perf_layout()),
        "start": In(1),
        "halt": In(1),
        "flush": In(1),
        "busy": Out(1),
        "drained": Out(1),
        "fence": Out(1),
    })
