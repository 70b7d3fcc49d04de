"""Kernel code, decoded once: one :class:`Op` per word, made on first fetch.

Decoding lazily means an illegal word faults only when a warp fetches it (data or padding
after the code never executes), and each word is decoded at most once per program however
many times it runs. :func:`program_for` caches programs by their code bytes.
"""

from __future__ import annotations

import numpy as np
from simtgpu.isa import PT, EncodingError, Instr, Space, decode

from . import semantics
from .errors import IssError


class Illegal(Exception):
    """The word at a PC is not a valid instruction (carries the decoder's message)."""


class Op:
    """A pre-decoded instruction: fields, constants and the function that executes it."""

    __slots__ = ("pc", "word", "instr", "mnemonic", "sem", "run", "fn", "nargs", "name",
                 "rd", "rs1", "rs2", "rs3", "imm", "uimm", "pred", "pneg", "unguarded",
                 "target", "is_global", "sets_pc", "fadd", "is_bra", "index")

    def __init__(self, pc: int, word: int, index: int):
        try:
            d = decode(word)
        except EncodingError as e:
            raise Illegal(str(e)) from None
        instr: Instr = d.instr
        self.pc, self.word, self.instr, self.index = pc, word, instr, index
        self.mnemonic = instr.mnemonic
        self.sem = instr.sem
        self.rd, self.rs1, self.rs2, self.rs3, self.imm = d.rd, d.rs1, d.rs2, d.rs3, d.imm
        self.uimm = np.uint32(d.imm & 0xFFFFFFFF)
        self.pred, self.pneg = d.pred, d.pneg
        self.unguarded = d.pred == PT and not d.pneg
        self.target = pc + 4 * d.imm
        self.is_global = instr.space is Space.GLOBAL
        self.sets_pc = instr.mnemonic in semantics.SETS_PC
        self.is_bra = instr.mnemonic == "bra"
        self.fadd = None
        semantics.bind(self)


class Program:
    """The code of one module (little-endian words) and its decoded instructions."""

    def __init__(self, code: bytes):
        if len(code) % 4:
            raise IssError(f"code is {len(code)} bytes, not a whole number of 4-byte words")
        self.code = bytes(code)
        self.words = np.frombuffer(self.code, dtype="<u4")
        self.size = len(self.code)
        self.ops: list[Op | Illegal | None] = [None] * self.words.size

    def op(self, pc: int) -> Op:
        """The instruction at byte address ``pc`` (in range, 4-aligned); raises
        :class:`Illegal` for a word that is not an instruction."""
        i = pc >> 2
        got = self.ops[i]
        if got is None:
            try:
                got = Op(pc, int(self.words[i]), i)
            except Illegal as e:
                got = e
            self.ops[i] = got
        if isinstance(got, Illegal):
            raise got
        return got


_CACHE: dict[bytes, Program] = {}


def program_for(code: bytes) -> Program:
    """The decoded program for ``code``, reused across launches of the same code."""
    key = bytes(code)
    prog = _CACHE.get(key)
    if prog is None:
        if len(_CACHE) > 64:
            _CACHE.clear()
        prog = _CACHE[key] = Program(key)
    return prog
