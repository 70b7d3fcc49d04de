"""The retire trace: one JSON object per line per retired warp-instruction.

See docs/trace-format.md for every key. The fields mirror the RTL retire port (warp, block,
pc, mask, exec, rd/values, pd/pvalues), plus ``mem`` (the stores and atomic writes the
instruction made, in lane order) and ``seq``/``core``/``op`` for people reading it.
"""

from __future__ import annotations

import json
from typing import TextIO

import numpy as np
from simtgpu.isa import PT

from .wave import Wave, mask_bits


def emit(stream: TextIO, seq: int, w: Wave, op, g, mask: np.ndarray, ex: np.ndarray) -> int:
    """Write the lines of one group instruction (warps in warp order); return the next seq."""
    gi = w.indices(g)
    instr = op.instr
    rec, mrec = w.rec, w.mrec
    values = None
    if rec is not None and rec[0] == "r" and instr.writes_reg and rec[1] != 0:
        values = np.broadcast_to(np.asarray(rec[2], dtype=np.uint32), ex.shape)
    pvals = None
    if rec is not None and rec[0] == "p" and instr.writes_pred and rec[1] != PT:
        pvals = np.broadcast_to(np.asarray(rec[2], dtype=bool), ex.shape)
    lines = []
    for k, wl in enumerate(gi):
        wl = int(wl)
        e = ex[k]
        mem = None
        if mrec is not None:
            addr = mrec[0][k]
            val = mrec[1][k]
            sel = e if len(mrec) == 2 else e & mrec[2][k]
            mem = [[int(a), int(v)] for a, v in zip(addr[sel], val[sel], strict=True)]
        elif instr.sem.value in ("store", "atomic"):
            mem = []
        lines.append(json.dumps({
            "seq": seq,
            "core": w.core_of(wl),
            "block": list(w.block_coords(wl)),
            "warp": w.warp_in_block(wl),
            "pc": op.pc,
            "mask": mask_bits(mask[k]),
            "exec": mask_bits(e),
            "op": op.mnemonic,
            "rd": op.rd if values is not None else None,
            "values": [int(v) for v in values[k][e]] if values is not None else None,
            "pd": op.rd & 7 if pvals is not None else None,
            "pvalues": mask_bits(pvals[k] & e) if pvals is not None else None,
            "mem": mem,
        }, separators=(", ", ": ")))
        seq += 1
    stream.write("\n".join(lines) + "\n")
    return seq
