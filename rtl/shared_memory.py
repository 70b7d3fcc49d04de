"""Banked shared memory: ``lanes`` banks of 32-bit words, bank = word address % banks.

Each cycle every bank serves the lowest-numbered requesting lane that maps to it, and with it
every other requesting lane that reads or writes the *same* word (a broadcast costs nothing).
Lanes that hit the same bank at different words are left for later cycles (``served`` says who
was served); the LSU repeats until every lane is done. For stores to one word from several
lanes in the same cycle the highest lane's data is written, as the execution model requires.

Reads are synchronous: ``rdata[l]`` is the word read for lane ``l`` in the *previous* cycle
(valid for the lanes of ``served_q``).

``req`` only chooses the lanes and so the rows and the write data; ``act`` says whether the
access happens (the write and read enables, ``served``). The LSU knows which lanes from its
registers early in the cycle and whether it goes (its faults, a shared atomic's phase) late:
the bank selection, the longest logic here, then starts at the registers.
"""

import operator
from functools import reduce

from amaranth import Cat, Module, Mux, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from . import reuse


def shared_geometry(lanes: int, size_bytes: int) -> tuple[int, int, int]:
    """Rows, word-address bits and row-address bits of a shared memory of ``size_bytes``
    (rounded up to whole rows of ``lanes`` banks)."""
    rows = -(-size_bytes // (4 * lanes))
    return rows, max(1, (rows * lanes - 1).bit_length()), max(1, (rows - 1).bit_length())


class SharedMemory(wiring.Component):
    """Parameters
    ----------
    lanes:
        Lanes per warp, also the number of banks.
    size_bytes:
        Capacity; rounded up to a whole row of banks.
    """

    def __init__(self, lanes: int, size_bytes: int):
        if size_bytes < 4:
            raise ValueError(f"size_bytes must be at least 4, not {size_bytes}")
        self.lanes = lanes
        self.rows, self.word_bits, self.row_bits = shared_geometry(lanes, size_bytes)
        vec = data.ArrayLayout(32, lanes)
        super().__init__({
            "req": In(lanes),
            "act": In(1),
            "we": In(1),
            "word": In(data.ArrayLayout(self.word_bits, lanes)),
            # pair (i, j) of lane_pairs: the two lanes address the same word, where they are
            # in one bank (what it says of two lanes in different banks does not matter). The
            # LSU has it from ex2's comparisons, registered (rtl/lsu.py ``LsuPrep``), so no
            # bank compares words: a 32-lane core's banks had 32 x 496 comparators.
            "same_word": In(pair_bits(lanes)),
            "wdata": In(vec),
            "served": Out(lanes),
            "pick": Out(lanes),  # the lanes ``act`` would serve (``served`` without it)
            "served_q": Out(lanes),
            "rdata": Out(vec),
            "clear": In(1),
            "clear_row": In(self.row_bits),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        lanes = self.lanes
        lb = max(1, (lanes - 1).bit_length())
        bank_of = [self.word[l][:lb] if lanes > 1 else 0 for l in range(lanes)]
        lane_bank_q = [Signal(lb, name=f"lane{l}_bank_q") for l in range(lanes)]
        banks = [SharedBank(lanes, self.rows, b) for b in range(lanes)]
        for b, bank in enumerate(banks):  # one module in exported Verilog (rtl/reuse.py)
            m.submodules[f"bank{b}"] = reuse.shared(bank, (lanes, self.rows),
                                                    {"index": (b, lb)})
            m.d.comb += [bank.req.eq(self.req), bank.act.eq(self.act), bank.we.eq(self.we),
                         bank.word.eq(self.word), bank.same_word.eq(self.same_word),
                         bank.wdata.eq(self.wdata), bank.clear.eq(self.clear),
                         bank.clear_row.eq(self.clear_row)]
        for l in range(lanes):
            m.d.comb += [self.pick[l].eq(Cat(bank.same[l] for bank in banks).any()),
                         self.served[l].eq(self.act & self.pick[l])]
            m.d.sync += lane_bank_q[l].eq(bank_of[l])
            with m.Switch(lane_bank_q[l]):
                for b in range(lanes):
                    with m.Case(b):
                        m.d.comb += self.rdata[l].eq(banks[b].rdata)
        m.d.sync += self.served_q.eq(self.served & ~self.we.replicate(lanes))
        return m


def lane_pairs(lanes: int) -> list[tuple[int, int]]:
    """The pairs ``(i, j)``, ``i < j``, of lanes, in the order of the bits of a vector of
    pairs (``same_word`` here, the LSU's ``split`` and ``same_bank``)."""
    return [(i, j) for i in range(lanes) for j in range(i + 1, lanes)]


def pair_bits(lanes: int) -> int:
    """Width of a vector of pairs of ``lanes`` lanes (at least one bit)."""
    return max(1, len(lane_pairs(lanes)))


def one_hot_choice(sel: Value, values: list[Value]) -> Value:
    """The value of ``values`` whose bit of the one-hot ``sel`` is set (zero for none): an OR
    of ANDs, with no priority chain."""
    return reduce(operator.or_, (Mux(sel[i], v, 0) for i, v in enumerate(values)))


class SharedBank(wiring.Component):
    """Bank ``index`` of a :class:`SharedMemory`: its RAM and the selection of the lanes it
    serves in a cycle (``same``: the lowest requesting lane of the bank and every other one
    at the same word, whether or not ``act``; ``rdata``: the word read in the previous
    cycle; ``same_word``: :class:`SharedMemory`'s). A component of its own so that exported
    Verilog holds one definition for the ``lanes`` banks, the index an input there
    (:func:`simtgpu.rtl.reuse.param`)."""

    def __init__(self, lanes: int, rows: int, index: int):
        self.lanes, self.rows, self.index = lanes, rows, index
        word_bits = max(1, (rows * lanes - 1).bit_length())
        row_bits = max(1, (rows - 1).bit_length())
        super().__init__({
            "req": In(lanes),
            "act": In(1),
            "we": In(1),
            "word": In(data.ArrayLayout(word_bits, lanes)),
            "same_word": In(pair_bits(lanes)),
            "wdata": In(data.ArrayLayout(32, lanes)),
            "clear": In(1),
            "clear_row": In(row_bits),
            "same": Out(lanes),
            "rdata": Out(32),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        lanes = self.lanes
        lb = max(1, (lanes - 1).bit_length())
        mem = Memory(shape=32, depth=self.rows, init=[])
        m.submodules.ram = mem
        wp = mem.write_port()
        rp = mem.read_port(domain="sync")
        m.d.comb += self.rdata.eq(rp.data)
        row_of = [self.word[l][lb:] if lanes > 1 else self.word[l] for l in range(lanes)]
        hits = Signal(lanes)
        if lanes > 1:
            index = reuse.param(self, "index", self.index)
            m.d.comb += hits.eq(Cat(self.req[l] & (self.word[l][:lb] == index)
                                    for l in range(lanes)))
        else:
            m.d.comb += hits.eq(self.req)
        # the lowest requesting lane of this bank leads (``first``, one-hot); same-word lanes
        # ride along. Which lanes share a word comes pair by pair from ``same_word``, beside
        # the choice of the leader, rather than from a comparison with the leader's row after
        # it.
        same_word = {pair: self.same_word[p] for p, pair in enumerate(lane_pairs(lanes))}
        first = Signal(lanes)
        m.d.comb += first.eq(Cat(hits[l] & ~hits[:l].any() if l else hits[0]
                                 for l in range(lanes)))
        row = Signal(len(self.clear_row))
        m.d.comb += row.eq(one_hot_choice(first, row_of))
        for l in range(lanes):
            with_leader = [first[k] & same_word[k, l] for k in range(l)]
            m.d.comb += self.same[l].eq(first[l] | (hits[l] & Cat(with_leader).any()))
        wdata = Signal(32)
        for l in range(lanes):  # highest same-word lane wins
            with m.If(self.same[l]):
                m.d.comb += wdata.eq(self.wdata[l])
        # a lane is served only with a leader, and the leader is the lowest hit: the bank is
        # busy when any lane hits it. Told from the hits, not from ``same`` (the leader's
        # choice and the pairs behind it), the RAM's enables stay off that logic (as
        # ``same.any()`` they ended a routed run's worst path, 15.2 ns at ce08893)
        any_hit = Signal()
        m.d.comb += any_hit.eq(hits.any())
        with m.If(self.clear):
            m.d.comb += [wp.en.eq(1), wp.addr.eq(self.clear_row), wp.data.eq(0)]
        with m.Else():
            m.d.comb += [wp.en.eq(self.act & any_hit & self.we), wp.addr.eq(row),
                         wp.data.eq(wdata)]
        m.d.comb += [rp.addr.eq(row), rp.en.eq(self.act & any_hit & ~self.we)]
        return m
