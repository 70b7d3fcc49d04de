"""Banked shared memory: ``lanes`` banks of 32-bit words, bank = word address % banks.

Each cycle every bank serves the lowest-numbered requesting lane that maps to it, and with it
every other requesting lane that reads or writes the *same* word (a broadcast costs nothing).
Lanes that hit the same bank at different words are left for later cycles (``served`` says who
was served); the LSU repeats until every lane is done. For stores to one word from several
lanes in the same cycle the highest lane's data is written, as the execution model requires.

Reads are synchronous: ``rdata[l]`` is the word read for lane ``l`` in the *previous* cycle
(valid for the lanes of ``served_q``).
"""

from amaranth import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out


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
            "we": In(1),
            "word": In(data.ArrayLayout(self.word_bits, lanes)),
            "wdata": In(vec),
            "served": Out(lanes),
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
        row_of = [self.word[l][lb:] if lanes > 1 else self.word[l] for l in range(lanes)]
        lane_bank_q = [Signal(lb, name=f"lane{l}_bank_q") for l in range(lanes)]
        served = []
        bank_rdata = []
        for b in range(lanes):
            mem = Memory(shape=32, depth=self.rows, init=[])
            m.submodules[f"bank{b}"] = mem
            wp = mem.write_port()
            rp = mem.read_port(domain="sync")
            bank_rdata.append(rp.data)
            hits = [self.req[l] & (bank_of[l] == b) for l in range(lanes)]
            row = Signal(self.row_bits, name=f"bank{b}_row")
            # the lowest requesting lane of this bank leads; same-word lanes ride along
            for l in reversed(range(lanes)):
                with m.If(hits[l]):
                    m.d.comb += row.eq(row_of[l])
            same = [Signal(name=f"bank{b}_lane{l}") for l in range(lanes)]
            for l in range(lanes):
                m.d.comb += same[l].eq(hits[l] & (row_of[l] == row))
            served.append(same)
            wdata = Signal(32, name=f"bank{b}_wdata")
            for l in range(lanes):  # highest same-word lane wins
                with m.If(same[l]):
                    m.d.comb += wdata.eq(self.wdata[l])
            any_hit = Signal(name=f"bank{b}_any")
            m.d.comb += any_hit.eq(sum(same[l] for l in range(lanes)) != 0)
            with m.If(self.clear):
                m.d.comb += [wp.en.eq(1), wp.addr.eq(self.clear_row), wp.data.eq(0)]
            with m.Else():
                m.d.comb += [wp.en.eq(any_hit & self.we), wp.addr.eq(row), wp.data.eq(wdata)]
            m.d.comb += [rp.addr.eq(row), rp.en.eq(any_hit & ~self.we)]
        for l in range(lanes):
            m.d.comb += self.served[l].eq(sum(served[b][l] for b in range(lanes)) != 0)
            m.d.sync += lane_bank_q[l].eq(bank_of[l])
            with m.Switch(lane_bank_q[l]):
                for b in range(lanes):
                    with m.Case(b):
                        m.d.comb += self.rdata[l].eq(bank_rdata[b])
        m.d.sync += self.served_q.eq(self.served & ~self.we.replicate(lanes))
        return m
