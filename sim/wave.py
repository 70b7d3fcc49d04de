"""The architectural state of a *wave*: a run of consecutive blocks simulated together.

Every array is indexed by the wave-local warp number first (or second, for the register
files), so an instruction executed by a group of warps that stand at the same PC is a
handful of NumPy operations over ``(warps, lanes)`` arrays. A group is a ``slice`` (warps
``start..stop-1``, the common converged case, which gives views) or an index array.

Layout (``NW`` warps in the wave, ``W`` lanes per warp, ``D`` stack entries):

==============  ======================  ====================================================
``R``           ``(32, NW, W)`` uint32  registers; ``R[0]`` stays zero
``P``           ``(8, NW, W)`` bool     predicates; ``P[7]`` (``pt``) stays true
``pc``          ``(NW,)`` int64         byte address of each warp's next instruction
``active``      ``(NW, W)`` bool        lanes that execute the next instruction
``live``        ``(NW, W)`` bool        lanes that have not exited
``status``      ``(NW,)`` int8          RUN, WAIT (at a barrier) or DONE
``sp``          ``(NW,)`` int64         reconvergence-stack depth
``stk_*``       ``(NW, D[, W])``        stack entries: kind, pc, mask
``shared``      ``(blocks * words,)``   every block's shared memory, block after block
==============  ======================  ====================================================
"""

from __future__ import annotations

import numpy as np
from simtgpu.isa import NUM_PREDS, NUM_REGS, PT, FaultCause, SReg

from .stats import LaunchStats

RUN, WAIT, DONE = 0, 1, 2
SYNC, DIV = 0, 1


class Fault(Exception):
    """Raised inside the simulator; the launcher turns it into a :class:`FaultRecord`.

    ``warp`` is the wave-local warp number, ``lanes`` a bool row of faulting lanes, ``pc``
    overrides the PC of the instruction being executed (barrier deadlocks).
    """

    def __init__(self, cause: FaultCause, warp: int, lanes: np.ndarray, detail: str = "",
                 pc: int | None = None):
        super().__init__(detail)
        self.cause = cause
        self.warp = warp
        self.lanes = lanes
        self.detail = detail
        self.pc = pc


def mask_bits(row: np.ndarray) -> int:
    """A bool lane row as an integer, bit ``l`` for lane ``l``."""
    return int(np.dot(row.astype(np.uint64), np.uint64(1) << np.arange(row.size, dtype=np.uint64)))


class Wave:
    """State of ``nblocks`` consecutive blocks, starting at linear block ``first_block``."""

    def __init__(self, *, first_block: int, nblocks: int, grid: tuple[int, int, int],
                 block: tuple[int, int, int], warp_size: int, stack_depth: int,
                 shared_bytes: int, num_cores: int, memory_words: np.ndarray,
                 memory_size: int, param_addr: int, param_size: int, stats: LaunchStats):
        W = warp_size
        nthreads = block[0] * block[1] * block[2]
        wpb = -(-nthreads // W)
        NW = nblocks * wpb
        self.W, self.wpb, self.nb, self.NW, self.depth = W, wpb, nblocks, NW, stack_depth
        self.grid, self.block = grid, block
        self.first_block = first_block
        self.num_cores = num_cores
        self.R = np.zeros((NUM_REGS, NW, W), dtype=np.uint32)
        self.P = np.zeros((NUM_PREDS, NW, W), dtype=bool)
        self.P[PT] = True
        self.pc = np.zeros(NW, dtype=np.int64)
        tid_in_block = (np.arange(wpb)[:, None] * W + np.arange(W)[None, :])  # (wpb, W)
        live_b = tid_in_block < nthreads
        self.live = np.tile(live_b, (nblocks, 1))
        self.active = self.live.copy()
        self.status = np.full(NW, RUN, dtype=np.int8)
        self.n_wait = 0
        self.sp = np.zeros(NW, dtype=np.int64)
        self.stk_kind = np.zeros((NW, stack_depth), dtype=np.int8)
        self.stk_pc = np.zeros((NW, stack_depth), dtype=np.int64)
        self.stk_mask = np.zeros((NW, stack_depth, W), dtype=bool)
        self.retired = np.zeros(NW, dtype=np.int64)
        self.ex_full = False  # every lane of the running group executes (writes need no mask)
        self.clock_bias = 0  # instructions the running group retired since ``retired`` was set
        self.shared_bytes = shared_bytes
        self.swords = -(-shared_bytes // 4)
        self.shared = np.zeros(nblocks * self.swords, dtype=np.uint32)
        self.blk = np.repeat(np.arange(nblocks, dtype=np.int64), wpb)  # wave-local block
        self.mem = memory_words
        self.mem_size = memory_size
        self.param_addr, self.param_size = param_addr, param_size
        self.stats = stats
        # Trace records of the instruction being executed (set by the semantic functions).
        self.rec: tuple | None = None
        self.mrec: tuple | None = None
        self._tid_in_block = tid_in_block
        self._sregs: dict[int, np.ndarray] = {}

    # --- identity ----------------------------------------------------------------------
    def block_linear(self, warp: int) -> int:
        return self.first_block + warp // self.wpb

    def block_coords(self, warp: int) -> tuple[int, int, int]:
        b = self.block_linear(warp)
        gx, gy, _ = self.grid
        return (b % gx, (b // gx) % gy, b // (gx * gy))

    def core_of(self, warp: int) -> int:
        return self.block_linear(warp) % self.num_cores

    def warp_in_block(self, warp: int) -> int:
        return warp % self.wpb

    @staticmethod
    def count(g: slice | np.ndarray) -> int:
        return g.stop - g.start if isinstance(g, slice) else int(g.size)

    @staticmethod
    def indices(g: slice | np.ndarray) -> np.ndarray:
        return np.arange(g.start, g.stop) if isinstance(g, slice) else g

    # --- special registers -------------------------------------------------------------
    def sreg(self, which: int, g: slice | np.ndarray) -> np.ndarray:
        """Values of special register ``which`` for the warps ``g``: uint32 ``(n, W)``."""
        if which in (SReg.CLOCK, SReg.CLOCKHI):
            count = self.retired[g] + self.clock_bias
        if which == SReg.CLOCK:
            return np.broadcast_to((count & 0xFFFFFFFF).astype(np.uint32)[:, None],
                                   (self.count(g), self.W))
        if which == SReg.CLOCKHI:
            return np.broadcast_to((count >> 32).astype(np.uint32)[:, None],
                                   (self.count(g), self.W))
        table = self._sregs.get(which)
        if table is None:
            table = self._sreg_table(which)
            self._sregs[which] = table
        return table[g]

    def _sreg_table(self, which: int) -> np.ndarray:
        W, wpb, nb = self.W, self.wpb, self.nb
        bx, by, bz = self.block
        gx, gy, gz = self.grid
        tid = np.tile(self._tid_in_block, (nb, 1))  # (NW, W)
        blin = (self.first_block + self.blk)[:, None] * np.ones((1, W), dtype=np.int64)
        values = {
            SReg.TID: tid,
            SReg.TID_X: tid % bx,
            SReg.TID_Y: (tid // bx) % by,
            SReg.TID_Z: tid // (bx * by),
            SReg.NTID_X: bx, SReg.NTID_Y: by, SReg.NTID_Z: bz,
            SReg.CTAID_X: blin % gx,
            SReg.CTAID_Y: (blin // gx) % gy,
            SReg.CTAID_Z: blin // (gx * gy),
            SReg.NCTAID_X: gx, SReg.NCTAID_Y: gy, SReg.NCTAID_Z: gz,
            SReg.LANEID: np.arange(W)[None, :],
            SReg.WARPID: (np.arange(self.NW) % wpb)[:, None],
            SReg.NWARPS: wpb,
            SReg.WARPSIZE: W,
            SReg.COREID: blin % self.num_cores,
        }[SReg(which)]
        out = np.empty((self.NW, W), dtype=np.uint32)
        out[...] = values
        return out

    # --- register and predicate writes --------------------------------------------------
    def write_reg(self, rd: int, g: slice | np.ndarray, ex: np.ndarray, value) -> None:
        """``rd = value`` in the lanes ``ex`` of the warps ``g`` (r0 stays zero)."""
        self.rec = ("r", rd, value)
        if rd != 0:
            self._write(self.R, rd, g, ex, value)

    def write_pred(self, pd: int, g: slice | np.ndarray, ex: np.ndarray, value) -> None:
        """``pd = value`` in the lanes ``ex`` (writes to ``pt`` are discarded)."""
        self.rec = ("p", pd, value)
        if pd != PT:
            self._write(self.P, pd, g, ex, value)

    def _write(self, file: np.ndarray, i: int, g: slice | np.ndarray, ex: np.ndarray,
               value) -> None:
        """``file[i, g] = value`` in the lanes ``ex``, by the cheapest NumPy route."""
        if self.ex_full:
            file[i, g] = value
        elif isinstance(g, slice):
            np.copyto(file[i, g], value, where=ex)
        else:
            file[i, g] = np.where(ex, value, file[i, g])

    def read_pred(self, field: int, g: slice | np.ndarray) -> np.ndarray:
        """A predicate source field (bit 4 negates, bits 2:0 select) for the warps ``g``."""
        p = self.P[field & 7, g]
        return ~p if field & 0x10 else p

    # --- faults ------------------------------------------------------------------------
    def fault_first(self, cause: FaultCause, g: slice | np.ndarray, bad: np.ndarray,
                    detail: str) -> Fault:
        """The fault of the first warp of ``g`` (in warp order) that has a lane in ``bad``."""
        rows = bad.any(axis=1)
        k = int(np.argmax(rows))
        return Fault(cause, int(self.indices(g)[k]), bad[k].copy(), detail)
