"""The retire trace: one JSON object per line per retired warp-instruction.

See docs/trace-format.md for every key. The fields mirror the RTL retire port (warp, block,
pc, mask, exec, rd/values, pd/pvalues), plus ``mem`` (the stores and atomic writes the
instruction made, in lane order) and ``seq``/``core``/``op`` for people reading it.

Lines are formatted directly (integers and lists of integers print as JSON as they are);
tracing is still far slower than running without it, but not by the cost of a JSON encoder.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

import numpy as np
from simtgpu.isa import PT

from .wave import Wave

_WEIGHTS: dict[int, np.ndarray] = {}


def _bits(rows: np.ndarray) -> list[int]:
    """Each bool lane row as an integer, bit ``l`` for lane ``l``."""
    w = _WEIGHTS.get(rows.shape[1])
    if w is None:
        w = _WEIGHTS[rows.shape[1]] = np.uint64(1) << np.arange(rows.shape[1], dtype=np.uint64)
    return (rows.astype(np.uint64) @ w).tolist()


def emit(stream: TextIO, seq: int, w: Wave, op, g, mask: np.ndarray, ex: np.ndarray) -> int:
    """Write the lines of one group instruction (warps in warp order); return the next seq."""
    gi = w.indices(g).tolist()
    instr = op.instr
    rec, mrec = w.rec, w.mrec
    values = pvals = None
    rd = pd = "null"
    if rec is not None and rec[0] == "r" and instr.writes_reg and rec[1] != 0:
        values = np.broadcast_to(np.asarray(rec[2], dtype=np.uint32), ex.shape)
        rd = str(op.rd)
    if rec is not None and rec[0] == "p" and instr.writes_pred and rec[1] != PT:
        pvals = _bits(np.broadcast_to(np.asarray(rec[2], dtype=bool), ex.shape) & ex)
        pd = str(op.rd & 7)
    masks, execs = _bits(mask), _bits(ex)
    is_mem = instr.sem.value in ("store", "atomic")
    head = f'"pc": {op.pc}, '
    name = f'"op": "{op.mnemonic}", "rd": {rd}, '
    lines = []
    for k, wl in enumerate(gi):
        e = ex[k]
        if mrec is not None:
            sel = e if len(mrec) == 2 else e & mrec[2][k]
            mem = str([[a, v] for a, v in zip(mrec[0][k][sel].tolist(),
                                               mrec[1][k][sel].tolist(), strict=True)])
        else:
            mem = "[]" if is_mem else "null"
        vals = str(values[k][e].tolist()) if values is not None else "null"
        pv = str(pvals[k]) if pvals is not None else "null"
        bx, by, bz = w.block_coords(wl)
        lines.append(
            f'{{"seq": {seq}, "core": {w.core_of(wl)}, "block": [{bx}, {by}, {bz}], '
            f'"warp": {w.warp_in_block(wl)}, {head}"mask": {masks[k]}, "exec": {execs[k]}, '
            f'{name}"values": {vals}, "pd": {pd}, "pvalues": {pv}, "mem": {mem}}}\n')
        seq += 1
    stream.write("".join(lines))
    return seq


def from_retire_port(rec: Sequence[int], lanes: int) -> dict:
    """A retire-port sample ``(bx, by, bz, warp, pc, mask, exec, rd_valid, rd, values...,
    pd_valid, pd, pvalues)`` as trace keys: register values of executing lanes only, no
    write for ``r0``/``pt``, predicate bits outside ``exec`` cleared."""
    bx, by, bz, warp, pc, mask, ex, rd_valid, rd = rec[:9]
    values = rec[9:9 + lanes]
    pd_valid, pd, pvalues = rec[9 + lanes:12 + lanes]
    has_rd = bool(rd_valid) and rd != 0
    has_pd = bool(pd_valid) and pd != PT
    return {
        "block": [bx, by, bz], "warp": warp, "pc": pc, "mask": mask, "exec": ex,
        "rd": rd if has_rd else None,
        "values": [int(values[lane]) for lane in range(lanes) if ex >> lane & 1]
        if has_rd else None,
        "pd": pd if has_pd else None,
        "pvalues": (pvalues & ex) if has_pd else None,
    }


KEYS = ("seq", "core", "block", "warp", "pc", "mask", "exec", "op", "rd", "values", "pd",
        "pvalues", "mem")
"""Every line's keys, in the order they are written."""


def format_line(line: dict) -> str:
    """One trace line as JSON, keys in :data:`KEYS` order (missing ones null), with a newline."""
    import json

    return json.dumps({k: line.get(k) for k in KEYS}) + "\n"


def read_trace(stream: TextIO) -> list[dict]:
    """Parse a trace written by the ISS (or converted from the RTL retire port)."""
    import json

    return [json.loads(line) for line in stream if line.strip()]


def per_warp(lines: list[dict]) -> dict[tuple[int, int, int, int], list[dict]]:
    """Group trace lines by warp, ``(bx, by, bz, warp)``, each group in program order: the
    form in which two traces are compared (the interleaving of warps is not significant)."""
    out: dict[tuple[int, int, int, int], list[dict]] = {}
    for ln in lines:
        out.setdefault((*ln["block"], ln["warp"]), []).append(ln)
    return out


COMPARED_KEYS = ("pc", "mask", "exec", "rd", "values", "pd", "pvalues")
"""The keys both the ISS and the RTL retire port produce (``op`` and ``mem`` are ISS only)."""


def first_difference(a: list[dict], b: list[dict],
                     keys: tuple[str, ...] = COMPARED_KEYS) -> str | None:
    """Compare two traces warp by warp on ``keys``; None when they agree, else a sentence
    naming the first differing line of the first warp that differs."""
    wa, wb = per_warp(a), per_warp(b)
    for warp in sorted(set(wa) | set(wb)):
        la, lb = wa.get(warp, []), wb.get(warp, [])
        for i, (x, y) in enumerate(zip(la, lb, strict=False)):
            diff = [k for k in keys if x.get(k) != y.get(k)]
            if diff:
                k = diff[0]
                return (f"block {warp[:3]} warp {warp[3]} instruction {i} (pc {x.get('pc')}): "
                        f"{k} is {x.get(k)} in the first trace, {y.get(k)} in the second")
        if len(la) != len(lb):
            return (f"block {warp[:3]} warp {warp[3]} retired {len(la)} instructions in the "
                    f"first trace, {len(lb)} in the second")
    return None
