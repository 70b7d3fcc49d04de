"""L1 data cache: a non-blocking, write-through, no-write-allocate cache for global memory.

It sits on a memory port (:func:`simtgpu.rtl.signatures.mem_port_signature`): ``up`` faces
the LSU, ``down`` the interconnect, and it keeps the port's contract on both sides (one
response per request, in request order), so it can be put between any initiator and memory.

::

    up.req --> lookup (tags, valid bits) --hit----------------------+
                  |                                                 v
                  +--miss--> MSHR (merge same line) --> down queue --> down.req
                  +--write / atomic (write-through, bypass) -->-+
    up.resp <-- reorder buffer (in request order) <-- fills / acks <-- down.resp

Payloads are zero while their ``valid`` is low (so a bench can compare every cycle).

Policy, and why:

* **Write-through, no write-allocate.** GPU L1s are not coherent with each other: a store
  must reach the shared level (L2/DRAM) to be seen by other cores, and a line written by one
  lane is rarely read back by the same core, so allocating it would only evict useful lines.
  A store that hits updates the cached copy (byte enables) so the core reads its own writes.
* **Atomics bypass** the cache and are performed below it (the memory executes them); a
  cached copy of the line is invalidated, so the core's next read fetches the new value.
* **Non-blocking.** A read miss takes an MSHR (miss-status holding register) and sends one
  line read down; later reads of the same line merge into that MSHR (no second request), and
  hits and other misses go on meanwhile. Responses still leave in request order, through a
  reorder buffer of ``rob_depth`` entries (the requests in flight through the cache).
* A store or atomic to a line with a pending miss waits until the fill arrives (the fill
  was read before the store reached memory, so it would put stale data in the cache). A
  response from below is registered as it arrives and takes effect in the next cycle; a
  cycle in which a fill takes effect accepts no new request (the fill owns the arrays).
* ``invalidate`` clears every line (and accepts no request in that cycle): what a kernel
  boundary or an acquiring ``fence`` needs, since the cache is not coherent. Misses
  outstanding at that moment become *stale*: their fills still answer the reads that waited
  on them (those came before the invalidation) but are not installed, and no later read
  merges into them (it takes a new MSHR), so nothing read from memory before the
  invalidation is seen after it.
* Replacement: the lowest invalid way of the set, else a per-set round-robin pointer, chosen
  as the line arrives.

The contract above is what the unit bench (tests/rtl/units/test_l1_cache.py) holds the RTL
to, cycle by cycle, with a Python model written from it. Tags and data live in
``amaranth.lib.memory.Memory`` arrays: the tags one memory per way with asynchronous reads
(distributed RAM on an FPGA), compared together; the data one memory of every way's lines,
read at the hit way through a registered read port (block RAM on an FPGA) and written with
byte enables. A read hit's line is thus taken in the cycle after the hit (its response can
still leave then); an executed atomic waits one cycle at the port for its line, one more
for its old word in a register and one for its new word in a register (docs/memory-system.md,
*The L1 data cache unit*). Valid
bits are flip-flops so that ``invalidate`` takes one cycle.

The reorder buffer keeps only flags in flip-flops. What an entry answers with is in memories
read at the head: the line of a hit or an acknowledgement's data by entry, and a read miss's
line in a *fill slot* (one line per slot, ``rob_depth`` slots) that the miss takes when it is
accepted and gives back when the last read waiting on it (itself or a merged one) leaves. A
fill thus writes one line; writing it into every waiting entry was about a third of the L1's
cost in simulation speed (docs/memory-system.md, *Simulation cost*). Every taken slot has a
reader in the buffer, so a slot is free whenever the buffer has room: slots never hold a
request back and are not part of the contract.
"""

from __future__ import annotations

from collections.abc import Callable

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from simtgpu.arch.config import MAX_MSHRS

from .ram_fifo import RamFifo
from .signatures import AtomOp, MemKind, mem_port_signature, mem_request_layout

__all__ = ["L1Cache", "cache_signature"]


def _pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def _bits(n: int) -> int:
    return max(1, (n - 1).bit_length())


def atomic_operands(m: Module, a: Value, b: Value) -> tuple[Signal, Signal]:
    """``a`` and ``b`` registered, every cycle: the operands of an atomic unit (its new word's
    logic and its FP adder), which takes them a cycle after the old word is read out of the
    line's block RAM (see ``_atomic_unit``), so that no read-modify-write runs from that
    RAM's output back into its write in one cycle."""
    a_q, b_q = Signal(32, name="atom_a"), Signal(32, name="atom_b")
    m.d.sync += [a_q.eq(a), b_q.eq(b)]
    return a_q, b_q


ATOM_PORT = wiring.Signature({"fadd": Out(1), "old": Out(32), "new": In(32)})
"""A bank's use of an atomic unit outside it (rtl/l2_cache.py's, shared by its banks): the
old word of the atomic at the bank's port out, and ``fadd`` while an ``atom.fadd`` waits
for the unit's FP adder; the new word back, built a cycle later from that old word registered
(:func:`atomic_operands`) and the operands of the request at the port (the same at every
bank), and registered by the unit before it reaches the banks."""


def lowest_set(m: Module, bits: Value) -> tuple[Signal, Signal]:
    """Whether any of ``bits`` is set, and the lowest set bit's index (0 if none)."""
    bits = Value.cast(bits)
    any_ = Signal()
    idx = Signal(_bits(len(bits)))
    for i in reversed(range(len(bits))):
        with m.If(bits[i]):
            m.d.comb += [any_.eq(1), idx.eq(i)]
    return any_, idx


def lookup_layout(ways: int, mshrs: int) -> data.StructLayout:
    """What a lookup finds for an address: whether a way holds its line (``hit``, in ``way``)
    and whether a read miss of the line is outstanding (``pend``, in MSHR ``mshr``)."""
    return data.StructLayout({"hit": 1, "way": _bits(ways), "pend": 1, "mshr": _bits(mshrs)})


def kept_lookup_layout(ways: int, mshrs: int) -> data.StructLayout:
    """A lookup kept for a request in the buffer in front of a cache that looks ahead: up to
    date with every change before this cycle but two: the MSHR that the previous cycle's
    request at the port may have taken, and the line it may have dropped (an L1's atomic).
    ``same`` says this request's line is that request's; the cache keeps whether it took an
    MSHR and which, and whether it dropped the line, and applies them as the lookup is
    read."""
    return data.StructLayout({**lookup_layout(ways, mshrs).members, "same": 1})


def lookahead_signature(ways: int, mshrs: int, read_ahead: bool = False) -> wiring.Signature:
    """A bank's lookups for the two-entry buffer in front of it (from the bank's side; see
    :class:`L1Cache`'s ``lookahead``): the address offered to the buffer (``in_addr``) looked
    up now and brought up to date with this cycle's changes (``in_found``); the findings of
    the item at the port (``port_found``, which the bank decides on) and of the buffer's
    second entry brought up to date (``port_next``, ``skid_next``). With ``read_ahead``, also
    the address offered in the next cycle (``in_addr_next``), where the tags are read."""
    found = kept_lookup_layout(ways, mshrs)
    return wiring.Signature({
        "in_addr": In(32), "in_found": Out(found),
        **({"in_addr_next": In(32)} if read_ahead else {}),
        "port_found": In(found), "port_next": Out(found),
        "skid_addr": In(32), "skid_found": In(found), "skid_next": Out(found),
    })


def lookahead_side_layout(ways: int, mshrs: int, caches: int = 1) -> data.ArrayLayout:
    """The side bits of an entry of a request buffer in front of ``caches`` caches that look
    ahead (:func:`connect_lookahead`): every cache's own lookup of the entry's request."""
    return data.ArrayLayout(kept_lookup_layout(ways, mshrs), caches)


def connect_lookahead(m: Module, buf: wiring.Component, looks: list,
                      in_bank: Callable[[Value], Value] | None = None,
                      in_addrs: list[Value] | None = None,
                      in_addr_next: Value | None = None) -> None:
    """Wire a request buffer whose entries carry lookups
    (``SkidBuffer(..., lookahead_side_layout(ways, mshrs, len(looks)))``) to the ``look``
    ports of the caches behind it: each cache looks up the address entering the buffer (as
    ``in_bank(addr)``, the address it sees) and keeps its own findings of both entries up to
    date. A cache's findings of a request that goes to another cache are kept but never used;
    keeping one set per cache, and not only the findings of the request's own cache, means
    no choice among the caches lies between a cache's lookup and the register that keeps it,
    nor between that register and the cache's decision (in the L2 the banks are far apart
    on an FPGA, and that choice was on the path of its slowest lookup). ``in_addrs``: per
    cache, a register copy of the entering address to look up (the same value as the
    buffer's ``up.payload.addr``; rtl/skid_buffer.py's ``down_copy``). ``in_addr_next``: for
    caches that read ahead, the address entering in the next cycle (``down_copy_next``)."""
    if in_bank is None:
        def in_bank(addr):
            return addr
    if in_addrs is None:
        in_addrs = [buf.up.payload.addr] * len(looks)
    if len(in_addrs) != len(looks):
        raise ValueError(f"{len(in_addrs)} entering addresses for {len(looks)} caches")
    for i, lk in enumerate(looks):
        if "in_addr_next" in lk.signature.members:
            if in_addr_next is None:
                raise ValueError("a cache that reads ahead needs in_addr_next")
            m.d.comb += lk.in_addr_next.eq(in_bank(in_addr_next))
        m.d.comb += [
            lk.in_addr.eq(in_bank(in_addrs[i])),
            lk.port_found.eq(buf.down_side[i]),
            lk.skid_addr.eq(in_bank(buf.skid.addr)),
            lk.skid_found.eq(buf.skid_side[i]),
            buf.up_side[i].eq(lk.in_found),
            buf.down_side_next[i].eq(lk.port_next),
            buf.skid_side_next[i].eq(lk.skid_next),
        ]


def cache_signature(line_words: int, tag_bits: int, atom_port: bool = False,
                    lookahead: tuple[int, int, bool] | None = None) -> wiring.Signature:
    """The interface of a cache at either level (this L1, the L2 of rtl/l2_cache.py): the
    memory port on both sides, ``invalidate``, the counters' strobes and ``idle``; with
    ``atom_port`` the :data:`ATOM_PORT` of a bank whose atomic unit is shared; with
    ``lookahead`` (ways, MSHRs, read ahead) the :func:`lookahead_signature` port ``look``."""
    return wiring.Signature({
        "up": In(mem_port_signature(line_words, tag_bits)),
        "down": Out(mem_port_signature(line_words, tag_bits)),
        "invalidate": In(1),
        **{name: Out(1) for name in ("hit", "miss", "merge", "mshr_full", "idle")},
        **({"atom": Out(ATOM_PORT)} if atom_port else {}),
        **({"look": Out(lookahead_signature(*lookahead))} if lookahead else {}),
    })


class L1Cache(wiring.Component):
    """Non-blocking write-through L1 data cache.

    Parameters
    ----------
    line_words:
        32-bit words per line (the memory port's line), a power of two.
    size_bytes:
        Capacity; ``size_bytes / (4 * line_words * ways)`` sets, a power of two.
    ways:
        Associativity, a power of two.
    mshrs:
        Distinct lines with a read miss outstanding at once.
    rob_depth:
        Requests in flight through the cache (accepted, response not yet delivered), a
        power of two.
    tag_bits:
        Tag width of the memory port (both sides).
    atomics:
        ``"bypass"`` (an L1: atomics go down, a cached copy is invalidated) or ``"execute"``
        (a bank of the shared L2, rtl/l2_cache.py: the atomic is performed on the cached line,
        fetched first if absent, and its new word written through).
    gated:
        ``atomics="execute"``: the form of the FP adder of ``atom.fadd``
        (:class:`~simtgpu.rtl.fpu.Fpu`'s ``gated``); the gated one is evaluated by a
        simulator only in the cycles of an ``atom.fadd``.
    addr_bits:
        The memory's address width: the cache takes addresses modulo ``2**addr_bits``, as
        the memory below wraps them (rtl/configs.py: a power of two no larger than
        ``memory_bytes``), so that its tags and MSHRs hold only the bits below it and an
        address and its alias past the memory's end are one line, as they are one location.
    fadd_latency:
        ``atomics="execute"``: 0, the bank has its own atomic unit; else the bank drives the
        ``atom`` port (:data:`ATOM_PORT`) of a unit outside it whose FP adder has this
        latency after a register for its operands (:func:`atomic_operands`), which the L2
        shares between its banks.
    lookahead:
        False: the request at ``up`` is looked up (tags, valid bits, MSHRs) in the cycle it is
        offered, and ``up.req.ready`` follows from that lookup. True: the bank sits behind a
        two-entry buffer (:class:`~simtgpu.rtl.skid_buffer.SkidBuffer` with side
        information) and decides on what the ``look`` port gives for the request at ``up``:
        a lookup made when the request entered the buffer and brought up to date every
        cycle since with what changed the arrays and MSHRs (a fill, an MSHR taken or freed,
        an invalidation, an L1's atomic dropping a line), so that its decision starts from
        registers; the decisions are those of a lookup in the cycle itself.
    read_ahead:
        With ``lookahead``: the tags of the entering lookup are read a cycle ahead, at
        ``look.in_addr_next`` (the address that enters next), into a register transparent to
        that cycle's tag write; the lookups are the same, cycle for cycle.

    Members
    -------
    up: ``In(mem_port_signature(line_words, tag_bits))``
    down: ``Out(mem_port_signature(line_words, tag_bits))``
    invalidate: ``In(1)``
        Clear every line.
    hit, miss, merge, mshr_full: ``Out(1)``
        Strobes: a read accepted as a hit, as a new miss, merged into a pending miss; a read
        held back because every MSHR is busy.
    idle: ``Out(1)``
        Nothing in flight.
    """

    def __init__(self, *, line_words: int = 8, size_bytes: int = 4096, ways: int = 2,
                 mshrs: int = 4, rob_depth: int = 8, tag_bits: int = 8,
                 atomics: str = "bypass", gated: bool = False, fadd_latency: int = 0,
                 addr_bits: int = 32, lookahead: bool = False, read_ahead: bool = False):
        problems = []
        if atomics not in ("bypass", "execute"):
            problems.append(f"atomics must be 'bypass' or 'execute', not {atomics!r}")
        if not (_pow2(line_words) and line_words <= 32):
            problems.append(f"line_words must be a power of two up to 32, not {line_words}")
        if not _pow2(ways):
            problems.append(f"ways must be a power of two, not {ways}")
        line_bytes = 4 * line_words
        sets = size_bytes // (line_bytes * max(ways, 1))
        if not _pow2(sets) or sets * line_bytes * ways != size_bytes:
            problems.append(f"size_bytes must be a power-of-two number of sets of {ways} ways "
                            f"of {line_bytes}-byte lines, not {size_bytes}")
        if not 1 <= mshrs <= MAX_MSHRS:
            problems.append(f"mshrs must be from 1 to {MAX_MSHRS}, not {mshrs}")
        if not (_pow2(rob_depth) and 2 <= rob_depth <= 64):
            problems.append(f"rob_depth must be a power of two from 2 to 64, not {rob_depth}")
        index_bits = (line_bytes - 1).bit_length() + (max(sets, 1) - 1).bit_length()
        if not index_bits < addr_bits <= 32:
            problems.append(f"addr_bits must be above the {index_bits} bits of a line's offset "
                            f"and set and at most 32, not {addr_bits}")
        if read_ahead and not lookahead:
            problems.append("read_ahead needs lookahead")
        if problems:
            raise ValueError("L1Cache: " + "; ".join(problems))
        self.line_words = line_words
        self.line_bytes = line_bytes
        self.size_bytes = size_bytes
        self.ways = ways
        self.sets = sets
        self.mshrs = mshrs
        self.rob_depth = rob_depth
        self.tag_bits = tag_bits
        self.atomics = atomics
        self.gated = gated
        self.fadd_latency = fadd_latency if atomics == "execute" else 0
        self.offset_bits = (line_bytes - 1).bit_length()
        self.set_bits = (sets - 1).bit_length()
        self.addr_bits = addr_bits
        self.line_tag_bits = addr_bits - self.offset_bits - self.set_bits
        self.lookahead = lookahead
        self.read_ahead = read_ahead
        super().__init__(cache_signature(line_words, tag_bits, self.fadd_latency > 0,
                                         (ways, mshrs, read_ahead) if lookahead else None))

    def elaborate(self, platform) -> Module:
        m = Module()
        lw, ways, sets = self.line_words, self.ways, self.sets
        width = 32 * lw
        ob, sb, tb = self.offset_bits, self.set_bits, self.line_tag_bits
        nm, rd = self.mshrs, self.rob_depth
        mbits, rbits = _bits(nm), _bits(rd)

        req, resp = self.up.req, self.up.resp
        dreq, dresp = self.down.req, self.down.resp
        p = req.payload
        ab = self.addr_bits
        line = Signal(ab - ob)
        set_idx = Signal(max(1, sb))
        tag = Signal(tb)
        m.d.comb += [line.eq(p.addr[ob:ab]), tag.eq(p.addr[ob + sb:ab])]
        if sb:
            m.d.comb += set_idx.eq(p.addr[ob:ob + sb])

        # --- arrays ---------------------------------------------------------------------
        # Tags one memory per way (a lookup compares them all); data one memory of every
        # way's lines, read at the hit way: one line read per cycle instead of one per way
        # and their mux (the same RAM bits on an FPGA).
        # With ``read_ahead`` the tags are read a cycle ahead, at the set of the address that
        # enters next (``look.in_addr_next``), transparent to that cycle's write: what a read
        # now would give. yosys makes that read of a distributed RAM a register of the
        # address, by the tags, with the RAM's read after it; so the entering lookup starts
        # by the tags, not at the buffer's address and the net to the far bank (the L2's
        # slowest path on two of bc93f6b's three seeds, 16.30 and 16.70 ns). A register of
        # the data instead (a read that is not transparent, the write bypassed) put the read
        # on the interconnect's path in front of the L2's first buffer, and routed slower
        # (83a9bc3, docs/performance.md).
        valid = [Signal(sets, name=f"valid{w}") for w in range(ways)]
        tag_rd, tag_wr = [], []
        for w in range(ways):
            tmem = Memory(shape=unsigned(tb), depth=sets, init=[])
            m.submodules[f"tags{w}"] = tmem
            tag_wr.append(tmem.write_port())
            tag_rd.append(tmem.read_port(transparent_for=(tag_wr[w],)) if self.read_ahead
                          else tmem.read_port(domain="comb"))
        # The data memory's read is registered (block RAM on an FPGA): the line a request
        # looks up arrives in the next cycle. Its writes take byte enables, so a store that
        # hits needs no read of the line first; the read is transparent to them.
        m.submodules.data = dmem = Memory(shape=unsigned(width), depth=sets * ways, init=[])
        data_wr = dmem.write_port(granularity=8)
        data_rd = dmem.read_port(transparent_for=(data_wr,))

        def line_addr(set_: Signal, way: Signal):
            """The data memory's address of ``set_``'s line in ``way``."""
            return Cat(set_[:sb], way[:_bits(ways) if ways > 1 else 0])

        def split(addr: Value) -> tuple[Value, Value, Value]:
            """An address's line, set and tag."""
            return addr[ob:ab], (addr[ob:ob + sb] if sb else Const(0, 1)), addr[ob + sb:ab]

        # ``found``: the lookup of the request at the port, made now or (``lookahead``) kept
        # up to date since it entered the buffer in front
        found = Signal(lookup_layout(ways, nm))
        # the tags are read at the port's set, or at the set of the address entering the
        # buffer
        look_set, look_tag = set_idx, tag
        if self.lookahead:
            _, look_set, look_tag = split(self.look.in_addr)
        read_set = split(self.look.in_addr_next)[1] if self.read_ahead else look_set
        way_hit = Signal(ways)  # of the lookup made now
        for w in range(ways):
            m.d.comb += [
                tag_rd[w].addr.eq(read_set),
                way_hit[w].eq(valid[w].bit_select(look_set, 1) & (tag_rd[w].data == look_tag)),
            ]
        hit = Signal()
        hit_way = Signal(_bits(ways))
        m.d.comb += [hit.eq(found.hit), hit_way.eq(found.way)]
        # ``line_data`` is the line at the address presented in the previous cycle, as it is
        # now (the read is transparent to that cycle's writes): the current lookup's line
        # whenever ``line_ok`` (a request was offered then, so the address was its lookup's:
        # what is at the port of an idle cache, and a ``lookahead`` bank's lookup of another
        # bank's request, are not). A read hit takes it into its reorder-buffer entry in the
        # next cycle; an executed atomic waits at the port for it.
        rd_addr = Signal(len(data_rd.addr))
        rd_addr_q = Signal(len(data_rd.addr))
        rd_offered_q = Signal()
        line_data = Signal(width)
        line_ok = Signal()
        m.d.comb += [rd_addr.eq(line_addr(set_idx, hit_way)), data_rd.addr.eq(rd_addr),
                     line_data.eq(data_rd.data),
                     line_ok.eq(rd_offered_q & (rd_addr_q == rd_addr))]
        m.d.sync += [rd_addr_q.eq(rd_addr), rd_offered_q.eq(req.valid)]

        # --- MSHRs ----------------------------------------------------------------------
        mshr_valid = Signal(nm)
        mshr_stale = Signal(nm)  # outstanding across an invalidate: no merge, no install
        mshr_line = Array(Signal(ab - ob, name=f"mshr_line{i}") for i in range(nm))
        pend = Signal()
        pend_idx = Signal(mbits)
        free = Signal(init=1)  # an MSHR is free (the lowest: ``free_idx``); see below
        free_idx = Signal(mbits)
        m.d.comb += [pend.eq(found.pend), pend_idx.eq(found.mshr)]
        look_line = split(self.look.in_addr)[0] if self.lookahead else line
        fresh = Signal.like(found)  # the lookup made now (of look_line)
        for w in reversed(range(ways)):
            with m.If(way_hit[w]):
                m.d.comb += [fresh.hit.eq(1), fresh.way.eq(w)]
        for i in reversed(range(nm)):
            with m.If(mshr_valid[i] & ~mshr_stale[i] & (mshr_line[i] == look_line)):
                m.d.comb += [fresh.pend.eq(1), fresh.mshr.eq(i)]
        if not self.lookahead:
            m.d.comb += found.eq(fresh)
        else:
            # whether the previous cycle's request at the port took an MSHR, and which; a
            # kept lookup of the same line (``same``) is pending in it. Applied here, as a
            # kept lookup is read, rather than to the lookups as they are kept: the decision
            # to take an MSHR was then the last input of the buffer's side bits, across the
            # device from the bank, on the path of the L2's slowest loop (a6df8a4, seed 3).
            taken_q = Signal()
            taken_idx_q = Signal(mbits)
            # So is, in an L1, whether that request was an atomic that dropped its line
            # (``drop_q``): as the last input of the kept lookups' ``hit`` and ``way``, it was
            # the end of a routed run's slowest path (15318c0, seed 3). A kept lookup of the
            # line has ``hit`` cleared; its ``way``, read only with a hit, is left.
            drop_q = Signal()

            def effective(kept: Value) -> Signal:
                """A kept lookup with the previous cycle's MSHR (and dropped line) applied."""
                now = Signal(lookup_layout(ways, nm))
                took = kept.same & taken_q
                m.d.comb += [now.hit.eq(kept.hit & ~(kept.same & drop_q)),
                             now.way.eq(kept.way),
                             now.pend.eq(kept.pend | took),
                             now.mshr.eq(Mux(took, taken_idx_q, kept.mshr))]
                return now

            m.d.comb += found.eq(effective(self.look.port_found))

        # --- reorder buffer -------------------------------------------------------------
        # Flags in flip-flops; answers in memories read at the head: ``rob_mem`` by entry
        # (a hit's line, an atomic's old word: written the cycle after it is accepted),
        # ``rob_ack`` by entry (an acknowledgement's word ``rdata[0]``, written as it comes
        # back: an atomic's old word; a store's acknowledgement carries nothing meaningful,
        # mem_response_layout, and the cache answers it with that word and zeros above),
        # ``slot_mem`` by fill slot (a read miss's line; see the module docstring). One write
        # port each, so that they map to distributed RAM: one memory written from both
        # places was flip-flops and multiplexers on an FPGA.
        rob_valid = Signal(rd)
        rob_acked = Signal(rd)  # the entry's answer is in rob_ack
        rob_ready = Signal(rd)  # answered (a hit, or acknowledged); a fill's entry: see below
        rob_fill = Signal(rd)  # a read miss or merge: answers with its slot's line
        head = Signal(rbits)
        # the entry after the head (the pointer wraps), a register moved with it: as ``head +
        # 1`` it was the first step of the paths through the next head's flags into
        # ``answers`` (the estimate's worst into the caches' responses at bc93f6b)
        head_inc = Signal(rbits, init=1)
        tail = Signal(rbits)
        count = Signal(range(rd + 1))
        m.submodules.rob_mem = rob_mem = Memory(shape=unsigned(width), depth=rd, init=[])
        m.submodules.rob_ack = rob_ack = Memory(shape=unsigned(32), depth=rd, init=[])
        m.submodules.rob_tags = rob_tags = Memory(shape=unsigned(self.tag_bits), depth=rd,
                                                  init=[])
        m.submodules.rob_slots = rob_slots = Memory(shape=unsigned(rbits), depth=rd, init=[])
        m.submodules.slot_mem = slot_mem = Memory(shape=unsigned(width), depth=rd, init=[])
        m.submodules.slot_last = slot_last = Memory(shape=unsigned(rbits), depth=rd, init=[])
        m.submodules.mshr_slot = mshr_slot = Memory(shape=unsigned(rbits), depth=nm, init=[])
        rob_rd, rob_wr_acc = rob_mem.read_port(domain="comb"), rob_mem.write_port()
        ack_rd, rob_wr_ack = rob_ack.read_port(domain="comb"), rob_ack.write_port()
        tags_rd, tags_wr = rob_tags.read_port(domain="comb"), rob_tags.write_port()
        rslot_rd, rslot_wr = rob_slots.read_port(domain="comb"), rob_slots.write_port()
        # ``head_slot``: ``rob_slots`` at the head, kept in a register (read a cycle ahead at
        # the head or the entry after it, the write of that cycle bypassed), so that whether
        # the head can answer is a few flags and not a memory read then a flag chosen by it
        head_slot = Signal(rbits)
        slot_rd, slot_wr = slot_mem.read_port(domain="comb"), slot_mem.write_port()
        last_rd, last_wr = slot_last.read_port(domain="comb"), slot_last.write_port()
        mslot_rd, mslot_wr = mshr_slot.read_port(domain="comb"), mshr_slot.write_port()
        slot_busy = Signal(rd)
        slot_filled = Signal(rd)
        _, slot_free = lowest_set(m, ~slot_busy)  # the lowest free slot
        m.d.comb += [rob_rd.addr.eq(head), ack_rd.addr.eq(head), tags_rd.addr.eq(head),
                     rslot_rd.addr.eq(head_inc),
                     slot_rd.addr.eq(head_slot), last_rd.addr.eq(head_slot),
                     mslot_rd.addr.eq(pend_idx)]

        # Downstream requests, and what each response is for (the memory answers in order).
        dq_layout = mem_request_layout(lw, self.tag_bits)
        execute = self.atomics == "execute"
        route_layout = data.StructLayout({
            "fill": unsigned(1), "keep": unsigned(1), "mshr": unsigned(mbits),
            "rob": unsigned(rbits), "slot": unsigned(rbits), "read": unsigned(1),
            "set": unsigned(max(1, sb))})  # a fill's set: its victim is chosen from the head
        # Executing atomics, a line fetch for an atomic holds no reorder-buffer entry.
        qdepth = rd + nm if execute else rd
        # The requests, a line wide each: past 16 of them, in block RAM (rtl/ram_fifo.py, the
        # same timing), since distributed RAM takes a 16x4 RAM per 4 bits and 16 entries;
        # up to 16, in distributed RAM read at the head (a register of the width would cost
        # more than it saves). Either way the RAM is written whenever there is room, so the
        # cache's decision to send reaches the queue's pointers and level, not every RAM cell
        # of the width (spread over the device, on the path of the send into the level).
        m.submodules.dq = dq = RamFifo(width=dq_layout.size, depth=qdepth,
                                       ram_style="block" if qdepth > 16 else "async")
        # the route's head comes out of a register (its storage is read at the next head), so
        # that the victim for an arriving line is chosen from registers
        m.submodules.route = route = RamFifo(width=route_layout.size, depth=qdepth,
                                             ram_style="distributed")
        dq_head = Signal(dq_layout)
        route_head = Signal(route_layout)
        m.d.comb += [
            dq_head.eq(dq.r_data), route_head.eq(route.r_data),
            dreq.valid.eq(dq.r_rdy),
            dreq.payload.eq(Mux(dq.r_rdy, dq_head.as_value(), 0)),
            dq.r_en.eq(dreq.valid & dreq.ready),
            dresp.ready.eq(1),
            route.r_en.eq(dresp.valid),
        ]

        # --- fills and acknowledgements from below --------------------------------------
        # A response from below is registered as it arrives, with its route entry and, for a
        # fill, its line and the victim way, and takes effect in the next cycle (``got``):
        # the arrays' writes, the MSHR freed and the reorder buffer's flags all start from
        # registers, a cycle after the response.
        got = Signal()
        got_data = Signal(width)
        got_route = Signal(route_layout)
        fill_line = Signal(ab - ob)
        m.d.sync += [got.eq(dresp.valid), got_data.eq(dresp.payload.rdata),
                     got_route.eq(route_head), fill_line.eq(mshr_line[route_head.mshr])]
        fill = Signal()
        m.d.comb += fill.eq(got & got_route.fill)
        # ``install``: the fill taking effect puts its line into the arrays (its MSHR is not
        # stale), a register worked out as the response arrives: the MSHR is stale then if it
        # was already or this cycle's invalidation makes it so (an MSHR awaiting its line is
        # neither taken nor freed meanwhile). As the stale flag chosen by the fill's MSHR it
        # was three LUTs on every path of the fill (the arrays' write enables, the lookups
        # the buffer in front keeps).
        install = Signal()
        m.d.sync += install.eq(dresp.valid & route_head.fill & ~self.invalidate
                               & ~mshr_stale.bit_select(route_head.mshr, 1))
        fill_set = Signal(max(1, sb))
        if sb:
            m.d.comb += fill_set.eq(fill_line[:sb])
        # Victim: the lowest invalid way, else the set's round-robin pointer, chosen as the
        # line arrives, from its set as it is after this cycle's install. (Of the other changes
        # this cycle can make, an invalidation makes the arriving line's MSHR stale, so it is
        # not installed, and a line an L1's atomic drops leaves an invalid way that this
        # victim does not take: the choice is made at arrival, and the model makes it there.)
        rr = Array(Signal(_bits(ways), name=f"rr{i}") for i in range(sets))
        victim = Signal(_bits(ways))  # of the fill taking effect
        any_invalid = Signal()
        arrive_set = Signal(max(1, sb))
        m.d.comb += arrive_set.eq(route_head.set)
        same_set = Signal()  # this cycle's install is in the arriving line's set
        m.d.comb += same_set.eq(install & (fill_set == arrive_set))
        arrive_rr = Signal(_bits(ways))
        m.d.comb += arrive_rr.eq(rr[arrive_set] + (same_set & ~any_invalid if ways > 1 else 0))
        arrive_victim = Signal(_bits(ways))
        arrive_invalid = Signal()
        m.d.comb += arrive_victim.eq(arrive_rr)
        for w in reversed(range(ways)):
            with m.If(~valid[w].bit_select(arrive_set, 1) & ~(same_set & (victim == w))):
                m.d.comb += [arrive_victim.eq(w), arrive_invalid.eq(1)]
        m.d.sync += [victim.eq(arrive_victim), any_invalid.eq(arrive_invalid)]
        with m.If(fill):
            m.d.sync += mshr_valid.bit_select(got_route.mshr, 1).eq(0)
            if ways > 1:
                # with no invalid way the victim is the set's pointer as it is now (``arrive_rr``
                # a cycle ago), so the next way comes from the victim's register, not from a
                # read of the pointer at the set (a multiplexer of every set's)
                with m.If(install & ~any_invalid):
                    m.d.sync += rr[fill_set].eq(victim + 1)
            with m.If(got_route.read):  # an atomic's line fetch has no reader
                m.d.sync += slot_filled.bit_select(got_route.slot, 1).eq(1)
                m.d.comb += [slot_wr.addr.eq(got_route.slot),
                             slot_wr.data.eq(got_data), slot_wr.en.eq(1)]
        with m.Elif(got):
            m.d.sync += rob_ready.bit_select(got_route.rob, 1).eq(1)
            with m.If(~got_route.keep):  # an executed atomic keeps its old word
                m.d.sync += rob_acked.bit_select(got_route.rob, 1).eq(1)
                m.d.comb += [rob_wr_ack.addr.eq(got_route.rob),
                             rob_wr_ack.data.eq(got_data[:32]), rob_wr_ack.en.eq(1)]

        # --- accepting a request ----------------------------------------------------------
        is_read = Signal()
        is_write = Signal()
        is_atomic = Signal()
        m.d.comb += [is_read.eq(p.kind == MemKind.READ), is_write.eq(p.kind == MemKind.WRITE),
                     is_atomic.eq(p.kind == MemKind.ATOMIC)]
        room = Signal()
        # ``room``: a free entry and no fill taking effect, from a register worked out a
        # cycle ahead (``room_q``, below) and ``invalidate``: it gates the acceptance and,
        # through it, the buffer in front, and from the count and ``got`` it was two gates
        # and a net shared with every use of the fill before any of that
        room_q = Signal(init=1)  # at reset: no entry in use, no fill
        m.d.comb += room.eq(room_q & ~self.invalidate)
        new_miss = Signal()
        m.d.comb += new_miss.eq(is_read & ~hit & ~pend)
        # Executing atomics: an atomic whose line is absent fetches it (``fetch``: an MSHR and a
        # line read, the atomic not accepted) and is performed once the line is in.
        fetch = Signal()
        atom_ready = Signal(init=1)  # the atomic's new word is ready (its line read; atom.fadd:
        # the FPU's sum)
        atom_old = Signal(32)
        atom_new = Signal(32)
        atom_be = Signal(4 * lw)
        if execute:
            m.d.comb += fetch.eq(req.valid & is_atomic & room & ~hit & ~pend & free)
            self._atomic_unit(m, p, req.valid & is_atomic & room & hit & ~pend & line_ok,
                              line_data, atom_ready, atom_old, atom_new, atom_be)
            accept_atomic = hit & ~pend & atom_ready
        else:
            accept_atomic = ~pend
        can = Signal()
        accept_other = Signal()  # a request that is not a read would be accepted with room
        m.d.comb += [accept_other.eq(Mux(is_atomic, accept_atomic, ~pend)),
                     can.eq(room & Mux(is_read, hit | pend | free, accept_other))]
        m.d.comb += req.ready.eq(can)
        fire = Signal()
        m.d.comb += fire.eq(req.valid & req.ready)
        # ``taken``: the request accepted or an atomic's fetch takes MSHR free_idx (the
        # ``miss`` strobe), told from the port's registers and its lookup, not through
        # ``fire``, whose acceptance terms (an atomic's readiness among them) lie behind
        # them: a new miss is accepted whenever there is room and an MSHR is free
        taken = Signal()
        m.d.comb += taken.eq((req.valid & room & free & new_miss) | fetch)
        line_miss = Signal()  # a read or (executing) an atomic whose line is neither in nor due
        m.d.comb += line_miss.eq(new_miss | (is_atomic & ~hit & ~pend if execute else 0))
        m.d.comb += [
            self.hit.eq(fire & is_read & hit),
            self.miss.eq(taken),
            self.merge.eq(fire & is_read & ~hit & pend),
            self.mshr_full.eq(req.valid & room & line_miss & ~free),
        ]

        # the request goes down (a new miss, a store or an atomic): ``(fire & (new_miss |
        # ~is_read)) | fetch`` told as ``taken`` is, without ``fire``, whose read terms lay
        # on the path of the down queue's push into its level (7ad5489's estimate)
        send = Signal()
        m.d.comb += send.eq(taken | (req.valid & room & ~is_read & accept_other))
        # What goes down is chosen by ``fetches`` (an atomic whose line is neither in nor
        # due), from the port's registers: whenever something goes down it equals ``fetch``
        # (an atomic goes down itself only on a hit), whose readiness and free-MSHR terms stay
        # off the down queue's line-wide write data and the route's entry (a fan-out of
        # hundreds)
        fetches = Signal()
        m.d.comb += fetches.eq(is_atomic & ~hit & ~pend if execute else 0)
        dq_entry = Signal(dq_layout)
        r_entry = Signal(route_layout)
        m.d.comb += [
            dq_entry.eq(p),
            dq_entry.addr.eq(Mux(new_miss | fetches, Cat(Const(0, ob), line), p.addr)),
            dq.w_data.eq(dq_entry.as_value()), dq.w_en.eq(send),
            r_entry.fill.eq(new_miss | fetches), r_entry.mshr.eq(free_idx),
            r_entry.rob.eq(tail), r_entry.slot.eq(slot_free), r_entry.read.eq(new_miss),
            r_entry.set.eq(set_idx), r_entry.keep.eq(is_atomic & ~fetches if execute else 0),
        ]
        # The route's entry is pushed a cycle late, from a register: ``send`` is the decision,
        # and through the push it reached the route's head register (loaded with the written
        # entry when the queue is empty), the end of two of 6866578's three routed paths. The
        # entry is first read at the request's answer, which comes two cycles after the push
        # at the earliest (the down queue's head is out the cycle after its push, and the
        # memory answers the cycle after it takes the request at the earliest).
        route_w = Signal(route_layout)
        route_push = Signal()
        m.d.sync += [route_w.eq(r_entry), route_push.eq(send)]
        m.d.comb += [route.w_data.eq(route_w.as_value()), route.w_en.eq(route_push)]
        if execute:
            # An atomic goes down as the write of its new word, or as its line's read when it
            # fetches. Only the kind waits for ``fetches``: the write data and byte enables are
            # the atomic's either way (a READ's are ignored: rtl/signatures.py), so the choice
            # behind the tag compare reaches two bits, not the line-wide payload
            with m.If(is_atomic):
                m.d.comb += [dq_entry.kind.eq(Mux(fetches, MemKind.READ, MemKind.WRITE)),
                             dq_entry.wdata.as_value().eq(Cat(*([atom_new] * lw))),
                             dq_entry.be.eq(atom_be)]

        # ``drop``: an L1 accepts an atomic that hits its line, and drops the line. It is
        # ``fire & is_atomic & hit`` (an L1 accepts an atomic that is not pending), told from
        # the port's registers and its lookup, as ``taken`` is: through ``fire`` (the read's
        # and the miss's terms) into the valid bits it was a routed run's slowest path
        # (7ad5489, seed 1).
        drop = Signal()
        m.d.comb += drop.eq(req.valid & room & ~pend & is_atomic & hit if not execute else 0)

        # Array writes: a fill (no request is accepted in its cycle, every byte), or a store
        # or an executed atomic that hits (its bytes, under their enables).
        merge_be = Signal(4 * lw)
        merge_new = Signal(width)
        # ``update``: a hit whose bytes are written into the line, ``fire & (is_write |
        # is_atomic & execute) & hit`` told without ``fire`` (as ``drop``): a store is accepted
        # when it is not pending, an executed atomic also when its word is ready
        update = Signal()
        stores = is_write | (is_atomic & atom_ready if execute else 0)
        m.d.comb += [merge_be.eq(p.be), merge_new.eq(p.wdata.as_value()),
                     update.eq(req.valid & room & ~pend & hit & stores)]
        if execute:
            with m.If(is_atomic):
                m.d.comb += [merge_be.eq(atom_be), merge_new.eq(Cat(*([atom_new] * lw)))]
        # The address does not wait for ``update`` (late: the lookup's ``hit``): the read's
        # transparency compares it with the read address beside the choice, and only the
        # enables are late.
        m.d.comb += [data_wr.data.eq(Mux(install, got_data, merge_new)),
                     data_wr.addr.eq(Mux(install, line_addr(fill_set, victim), rd_addr))]
        with m.If(install):
            m.d.comb += data_wr.en.eq(Const((1 << 4 * lw) - 1, 4 * lw))
        with m.Elif(update):
            m.d.comb += data_wr.en.eq(merge_be)
        for w in range(ways):
            with m.If(install & (victim == w)):
                m.d.comb += [
                    tag_wr[w].addr.eq(fill_set), tag_wr[w].data.eq(fill_line[sb:]),
                    tag_wr[w].en.eq(1),
                ]
                m.d.sync += valid[w].bit_select(fill_set, 1).eq(1)
            if not execute:
                with m.If(drop & (hit_way == w)):
                    m.d.sync += valid[w].bit_select(set_idx, 1).eq(0)
        with m.If(self.invalidate):
            m.d.sync += [v.eq(0) for v in valid]
            m.d.sync += mshr_stale.eq(mshr_valid)

        with m.If(fire):
            m.d.sync += [
                rob_valid.bit_select(tail, 1).eq(1),
                rob_ready.bit_select(tail, 1).eq(is_read & hit),
                rob_fill.bit_select(tail, 1).eq(is_read & ~hit),
                rob_acked.bit_select(tail, 1).eq(0),
                tail.eq(tail + 1),
            ]
            m.d.comb += [tags_wr.addr.eq(tail), tags_wr.data.eq(p.tag), tags_wr.en.eq(1)]
        # ``rob_mem`` is written in the cycle after the request is accepted: a read hit's line
        # (``line_data`` then), an executed atomic's old word (kept from its cycle). In that
        # cycle the response, if it is already at the head, bypasses the memory.
        took_q = Signal()  # the entry accepted in the previous cycle answers from rob_mem
        atom_q = Signal()
        old_q = Signal(32)
        took_rob = Signal(rbits)
        took_data = Signal(width)
        m.d.sync += [took_q.eq(fire & ((is_read & hit) | (is_atomic if execute else 0))),
                     atom_q.eq(is_atomic), old_q.eq(atom_old), took_rob.eq(tail)]
        m.d.comb += [took_data.eq(Mux(atom_q, old_q, line_data)),
                     rob_wr_acc.addr.eq(took_rob), rob_wr_acc.data.eq(took_data),
                     rob_wr_acc.en.eq(took_q)]
        # A read miss's entry names a new slot, a merged read its MSHR's; either is, for now,
        # the slot's last reader.
        read_slot = Signal(rbits)
        m.d.comb += read_slot.eq(Mux(new_miss, slot_free, mslot_rd.data))
        with m.If(fire & is_read & ~hit):
            m.d.comb += [rslot_wr.addr.eq(tail), rslot_wr.data.eq(read_slot), rslot_wr.en.eq(1),
                         last_wr.addr.eq(read_slot), last_wr.data.eq(tail), last_wr.en.eq(1)]
        with m.If(fire & new_miss):
            m.d.sync += [slot_busy.bit_select(slot_free, 1).eq(1),
                         slot_filled.bit_select(slot_free, 1).eq(0)]
            m.d.comb += [mslot_wr.addr.eq(free_idx), mslot_wr.data.eq(slot_free),
                         mslot_wr.en.eq(1)]
        with m.If(taken):
            m.d.sync += [mshr_valid.bit_select(free_idx, 1).eq(1),
                         mshr_stale.bit_select(free_idx, 1).eq(0),
                         mshr_line[free_idx].eq(line)]
        # ``free`` and ``free_idx`` (the lowest free MSHR) are registers worked out a cycle
        # ahead, so that the acceptance and the MSHR taken start from flip-flops, not from a
        # priority encoder of the MSHRs' valid bits. A fill frees its MSHR and takes no request
        # (``room`` is low in its cycle), so the two changes are never made together: the
        # lowest free MSHR once the fill is done, or once free_idx is taken; only the late
        # ``taken`` chooses between them.
        one = Const(1, nm)
        after_fill = lowest_set(m, ~mshr_valid | Mux(fill, one << got_route.mshr, 0))
        after_take = lowest_set(m, ~mshr_valid & ~(one << free_idx))
        m.d.sync += [free.eq(Mux(taken, after_take[0], after_fill[0])),
                     free_idx.eq(Mux(taken, after_take[1], after_fill[1]))]

        # --- responses up, in request order ---------------------------------------------
        # What the head answers, and whether, comes from registers worked out a cycle ahead
        # from the flags' changes in this cycle, for the head and (if it retires) the entry
        # after it. ``answers`` (``resp.valid``), chosen by the head pointer, was three
        # multiplexers and a gate, the first of both receivers' longest paths (an L2 bank's
        # retirement into its order queue, the LSU's gathering into its write-back); the
        # payload's choice (``head_fill``, ``head_acked``) drives a select of every bit of
        # the line, and as the head pointer's choice it shared a LUT with ``answers`` that
        # the placer put by the LSU, the line's receiver.
        # An entry already in the buffer answers next cycle if it is valid and: a read miss
        # or merge, once its slot is filled (or is being filled now: the slot is busy, so
        # no new miss takes it this cycle); any other, once answered (or acknowledged now).
        # The entry accepted now answers next cycle if it is a read hit.
        answers = Signal()
        head_fill = Signal()  # the head is a read miss or merge: it answers from its slot
        head_acked = Signal()  # the head's answer is in rob_ack
        retire = Signal()
        slots_filled = Signal(rd)  # slot_filled as it is next cycle, for the slots in use
        m.d.comb += [slots_filled.eq(slot_filled | Mux(
                         fill & got_route.read, Const(1, rd) << got_route.slot, 0))]
        # A read accepted now answers next cycle only if it hits: a merge's slot is its
        # MSHR's, which is filled as that MSHR is freed (no request is accepted in that
        # cycle, and the lookup then finds the line in or missing, never pending), so it is
        # never filled while a request merges into it. Told as the slot's flag read at the
        # MSHR, the merge's terms were the MSHR's slot read and a choice among the slots'
        # flags in front of the answer's register (de2181d's estimate: 10 levels).
        accepted_answers = Signal()
        m.d.comb += accepted_answers.eq(is_read & hit)

        def at_head_next(flag: Callable[[Value, Value], Value]) -> Value:
            """``flag(entry, slot)`` (an entry's flag as this cycle leaves it, its fill slot)
            for the entry at the head in the next cycle."""
            return Mux(retire, flag(head_inc, rslot_rd.data), flag(head, head_slot))

        def accepted(entry: Value) -> Value:  # the entry takes the request accepted now
            return fire & (tail == entry)

        def acknowledged(entry: Value) -> Value:  # the entry's acknowledgement takes effect
            return got & ~fill & (got_route.rob == entry)

        def answers_next(entry: Value, slot: Value) -> Value:
            # The entry taking a request now is told without ``fire`` (``offered``): a read
            # that answers next cycle (a hit, or a merge into a filled slot) is accepted
            # whenever there is room, and an offered request that is not accepted leaves the
            # entry free (``held`` low: with room, the tail's entry is not in use). An L2
            # bank's answer was among the twelve latest units of two of 7ad5489's three
            # routed seeds (14.00 and 15.01 ns), through ``fire`` (a miss's free MSHR, an
            # atomic's readiness).
            held = rob_valid.bit_select(entry, 1) & Mux(
                rob_fill.bit_select(entry, 1), slots_filled.bit_select(slot, 1),
                rob_ready.bit_select(entry, 1) | acknowledged(entry))
            offered = req.valid & room & (tail == entry)
            return Mux(offered, accepted_answers, held)

        def fill_next(entry: Value, _slot: Value) -> Value:
            return Mux(accepted(entry), is_read & ~hit, rob_fill.bit_select(entry, 1))

        def acked_next(entry: Value, _slot: Value) -> Value:  # an executed atomic keeps its word
            return ~accepted(entry) & (rob_acked.bit_select(entry, 1)
                                       | (acknowledged(entry) & ~got_route.keep))

        def slot_next(entry: Value, slot: Value) -> Value:  # a read miss accepted now names it
            return Mux(rslot_wr.en & (rslot_wr.addr == entry), rslot_wr.data, slot)

        m.d.sync += [answers.eq(at_head_next(answers_next)),
                     head_fill.eq(at_head_next(fill_next)),
                     head_acked.eq(at_head_next(acked_next)),
                     head_slot.eq(at_head_next(slot_next))]
        m.d.comb += [
            resp.valid.eq(answers),
            # the payload is the head's whether it answers or not (meaningless then): gated
            # by ``valid`` it waited for it, and so did the receiver's data (the LSU's lanes)
            resp.payload.rdata.eq(Mux(head_fill, slot_rd.data, Mux(
                head_acked, ack_rd.data,
                Mux(took_q & (took_rob == head), took_data, rob_rd.data)))),
            resp.payload.tag.eq(tags_rd.data),
        ]
        m.d.comb += retire.eq(resp.valid & resp.ready)
        with m.If(retire):
            m.d.sync += [rob_valid.bit_select(head, 1).eq(0), head.eq(head_inc),
                         head_inc.eq(head_inc + 1)]
            with m.If(head_fill & (last_rd.data == head)):  # the slot's last reader leaves
                m.d.sync += slot_busy.bit_select(head_slot, 1).eq(0)
        with m.If(fire & ~retire):
            m.d.sync += count.eq(count + 1)
        with m.Elif(retire & ~fire):
            m.d.sync += count.eq(count - 1)
        # whether the buffer has a free entry next cycle, and whether a fill takes effect then
        # (the response arriving now). The acceptance now is bounded by ``room_q`` (a request
        # is taken only with room), and that bound stands for it: the acceptance (the lookup,
        # the request's kind, the MSHRs) stays off the path into ``room_q``, the end of
        # de2181d's routed worst on two seeds of six. The cost: with ``rob_depth - 1``
        # entries in use, a cycle that takes no request and retires none is followed by one
        # that takes none either. Below 4 entries that would be every other cycle at a
        # buffer's last entry, so there the exact count serves.
        if rd >= 4:
            full_next = ~retire & Mux(room_q, count == rd - 1, count == rd)
        else:
            full_next = Mux(fire == retire, count == rd, fire & (count == rd - 1))
        m.d.sync += room_q.eq(~full_next & ~(dresp.valid & route_head.fill))
        m.d.comb += self.idle.eq((count == 0) & ~dq.r_rdy & ~route.r_rdy & ~route_push & ~got)

        if self.lookahead:
            # What this cycle changes for a lookup, applied to one made before it: a fill
            # installs its line in way ``victim`` (dropping the one there) and frees its MSHR,
            # an invalidation drops every line and makes every pending miss stale. The MSHR
            # this cycle takes for ``line``, and ``line`` itself if an L1's atomic drops it,
            # are applied in the next (``taken_q``, ``drop_q``, ``same``: see ``effective``).
            # (no MSHR is taken, and no line dropped, in a cycle of ``invalidate``: ``room``
            # is low)
            m.d.sync += [taken_q.eq(taken), taken_idx_q.eq(free_idx), drop_q.eq(drop)]

            def brought_up_to_date(before, addr: Value, name: str,
                                   way_hits: Value | None = None) -> Signal:
                x_line, x_set, _ = split(addr)
                after = Signal(kept_lookup_layout(ways, nm), name=name)
                filled = install & (x_line == fill_line)
                in_set = install & (x_set == fill_set)
                if way_hits is None:
                    kept = ~self.invalidate & before.hit & ~(in_set & (before.way == victim))
                    kept_way = before.way
                else:
                    # A lookup made now (``way_hits``: its ways' compares): each way's hit
                    # is dropped where the fill evicts that way, before the ways are
                    # combined, so the victim's compare is beside the tags' and not after
                    # the choice of the hit way (the L2's entering lookup: tags, ways,
                    # way, victim, then the buffer's side bits, de2181d's routed worst on
                    # two seeds of six). A line is in one way of its set at most (only the
                    # fill of its miss installs it), so the way is the OR of the hits'.
                    left = Signal(ways, name=f"{name}_left")
                    for w in range(ways):
                        m.d.comb += left[w].eq(way_hits[w] & ~(in_set & (victim == w)))
                    kept = ~self.invalidate & left.any()
                    kept_way = Signal(_bits(ways), name=f"{name}_way")
                    for b in range(len(kept_way)):
                        m.d.comb += kept_way[b].eq(
                            Cat(left[w] for w in range(ways) if w >> b & 1).any())
                # (``way`` is 0 without a hit, as a lookup made now gives it: the data RAM is
                # read at it, and an atomic waits for the line read there)
                m.d.comb += [
                    after.hit.eq(~self.invalidate & (filled | kept)),
                    after.way.eq(Mux(~self.invalidate & filled, victim,
                                     Mux(kept, kept_way, 0))),
                    after.pend.eq(~self.invalidate & before.pend & ~(
                        fill & (before.mshr == got_route.mshr))),
                    after.mshr.eq(before.mshr),
                    after.same.eq(x_line == line),
                ]
                return after

            look = self.look
            m.d.comb += [
                look.in_found.eq(brought_up_to_date(fresh, look.in_addr, "in_found",
                                                    way_hits=way_hit)),
                look.port_next.eq(brought_up_to_date(found, p.addr, "port_next")),
                look.skid_next.eq(brought_up_to_date(effective(look.skid_found),
                                                     look.skid_addr, "skid_next")),
            ]
        return m

    def _atomic_unit(self, m: Module, p, start: Signal, line_data: Signal, ready: Signal,
                     old: Signal, new: Signal, be: Signal) -> None:
        """The read-modify-write of an atomic on its cached line (``atomics="execute"``): the
        old word, the new one (rtl/atomic_alu.py, as the DRAM model computes it) and its byte
        enables. ``ready`` is low until the line is read (``start`` needs ``line_ok``), then
        for a cycle while the old word is registered (it comes out of a block RAM; the new
        word is worked out from the register, so the read-modify-write is not one path from
        the RAM's output to its write), for ``atom.fadd`` until the FP adder's sum is out,
        its latency more, and for a cycle while the new word is registered (``new`` leaves
        from a flip-flop: the min/max and compare-and-swap logic is not on the path into the
        data RAM's write and the down queue). ``start`` (the atomic can be performed now)
        keeps the operands steady meanwhile: no write reaches the data RAM while it is high
        (the request at the port is the only one that could write, and a fill leaves
        ``room`` low), and the wait starts again whenever it drops."""
        from .atomic_alu import atomic_result
        from .fpu import ATOMIC_LATENCY, Fpu, FpuOp
        lw, ob = self.line_words, self.offset_bits
        word = p.addr[2:ob] if lw > 1 else Const(0, 1)
        words = Array(line_data[32 * i:32 * (i + 1)] for i in range(lw))
        m.d.comb += [old.eq(words[word]), be.eq(Const(0xF, 4 * lw) << (word * 4))]
        op_fadd = Signal()  # the request at the port is an atom.fadd
        is_fadd = Signal()
        m.d.comb += [op_fadd.eq(p.atom_op == AtomOp.FADD), is_fadd.eq(start & op_fadd)]
        if self.fadd_latency:  # the L2's unit: it sees the same request's operands
            latency = self.fadd_latency
            # the unit's new word comes back from its register (one for every bank, by the
            # unit): registered here, after the net from the unit across to the bank, it
            # was the latest endpoint of a routed run's bank (14.2 to 14.6 ns at ce08893)
            m.d.comb += [self.atom.fadd.eq(is_fadd), self.atom.old.eq(old),
                         new.eq(self.atom.new)]
        else:
            m.submodules.atom_fpu = fpu = Fpu(ATOMIC_LATENCY, gated=self.gated,
                                              fadd_only=True)
            latency = fpu.latency
            old_q, b_q = atomic_operands(m, old, p.atom_b)
            m.d.comb += [fpu.op.eq(FpuOp.FADD), fpu.en.eq(is_fadd), fpu.a.eq(old_q),
                         fpu.b.eq(b_q)]
            m.d.sync += new.eq(atomic_result(m, p.atom_op, old_q, b_q, p.atom_c, fpu.result))
        # Cycles of ``start`` before the new word is out: the operands' register, the adder's
        # latency (atom.fadd), the new word's register. ``at_target`` says a cycle ahead that
        # the count will have reached it, from the request at the port then: while it waits
        # (``start`` high, not ``ready``) the port holds the same request, and in any other
        # cycle the count restarts at zero, short of any target; so ``ready`` is a flag and
        # ``line_ok``, not the request's operation decoded into a comparison. ``at_target``
        # alone is ``ready``: it is high only after a cycle of ``start`` (so ``line_ok``) that
        # was not ``ready``, in which nothing could change the line the port reads (the same
        # request stays, no fill or invalidation: ``room``), so ``line_ok`` holds again and its
        # comparison stays off the path to the port's ``ready``.
        target = Mux(op_fadd, latency + 2, 2)
        wait = Signal(range(latency + 3))
        wait_next = Signal.like(wait)
        at_target = Signal()
        m.d.comb += [wait_next.eq(Mux(start & ~ready, wait + 1, 0)),
                     ready.eq(at_target)]
        m.d.sync += [wait.eq(wait_next), at_target.eq(wait_next == target)]
