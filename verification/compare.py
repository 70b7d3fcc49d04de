"""Step-and-compare: the RTL's retired instructions against the ISS trace, then final memory.

Both sides are lists of trace dicts (docs/trace-format.md). Lines are grouped per warp
(block, warp) and compared in program order, because the interleaving across warps is a
scheduling choice. The first difference is reported with the warp, the PC, the disassembled
instruction, the lane and the expected and actual values, so one line of a failure says what
went wrong where.
"""

from __future__ import annotations

from collections import deque

import numpy as np
from simtgpu.assembler import disassemble_word
from simtgpu.sim.trace import from_retire_port as retire_to_trace
from simtgpu.sim.trace import per_warp

from .launch import KernelLaunch

__all__ = ["Mismatch", "compare_memory", "compare_traces", "program_order", "retire_to_trace"]


class Mismatch(str):
    """A description of the first difference (a str, so it prints as itself)."""


def _disasm(launch: KernelLaunch, pc: int) -> str:
    if 0 <= pc <= len(launch.code) - 4:
        word = int.from_bytes(launch.code[pc:pc + 4], "little")
        return disassemble_word(word, pc)
    return "(pc outside the code)"


def _lane_diff(want: dict, got: dict, lanes: int) -> str:
    """Which lane differs first, for register or predicate values."""
    if want.get("values") is not None and got.get("values") is not None:
        ex = want["exec"]
        lane_ids = [lane for lane in range(lanes) if ex >> lane & 1]
        for lane, w, g in zip(lane_ids, want["values"], got["values"], strict=False):
            if w != g:
                return f"lane {lane}: r{want['rd']} expected {w:#010x}, rtl {g:#010x}"
    if want.get("pvalues") is not None and got.get("pvalues") is not None:
        diff = want["pvalues"] ^ got["pvalues"]
        if diff:
            lane = (diff & -diff).bit_length() - 1
            return (f"lane {lane}: p{want['pd']} expected {want['pvalues'] >> lane & 1}, "
                    f"rtl {got['pvalues'] >> lane & 1}")
    return ""


_KEYS = ("pc", "mask", "exec", "rd", "values", "pd", "pvalues")


EXTRA_PC = -1
"""The pc of the ISS line that :func:`simtgpu.verification.harness.common_part` puts beside an
RTL line with no ISS partner (a faulting launch: the ISS stopped before that instruction)."""

def match_program_order(wl: list[dict], gl: list[dict]) -> list[int | None]:
    """For each RTL line of one warp (``gl``, in retire order), the index of its ISS line in
    ``wl`` (program order): the oldest one not matched yet of the same PC and, where there is
    one, the same emptiness of ``exec``; None where no line of that PC is left (an extra
    line).

    The core has a scoreboard: an independent instruction may write back before an older
    long-latency one (a load, an atomic, the SFU), so the RTL's retire order within a warp is
    not program order, and how far an instruction retires behind younger ones has no bound
    the comparison could assume: an ``atom`` whose result is discarded (``r0``) lets its
    warp run on until DRAM answers (64 instructions on ``small`` at ``realistic``, 2026-12-03,
    where an earlier window of 64 reported a mismatch). Instances of one PC that go to
    memory retire in order (memory answers in order; a second write of a register waits for
    the first), but an instance with no executing lane makes no access and retires at
    ``wb``, ahead of an older instance of the same PC still waiting for memory (an ``atom``
    in a divergent loop)."""
    by_pc: dict[int, deque[int]] = {}
    by_kind: dict[tuple[int, bool], deque[int]] = {}
    for i, w in enumerate(wl):
        by_pc.setdefault(w["pc"], deque()).append(i)
        by_kind.setdefault((w["pc"], not w.get("exec")), deque()).append(i)
    taken: set[int] = set()

    def oldest(q: deque[int] | None) -> int | None:
        while q and q[0] in taken:
            q.popleft()
        return q.popleft() if q else None

    out: list[int | None] = []
    for g in gl:
        i = oldest(by_kind.get((g["pc"], not g.get("exec"))))
        if i is None:  # no line of its kind: the oldest of its PC (reported as differing)
            i = oldest(by_pc.get(g["pc"]))
        if i is not None:
            taken.add(i)
        out.append(i)
    return out


def program_order(wl: list[dict], gl: list[dict]) -> tuple[list[dict], list[dict]]:
    """``gl`` (RTL retire order) rearranged into the program order of ``wl`` (ISS); an RTL
    line with no partner ends the rearranged list (so it is reported at that point)."""
    placed: dict[int, dict] = {}
    extra: list[dict] = []
    for g, i in zip(gl, match_program_order(wl, gl), strict=True):
        if i is None:
            extra.append(g)
            break
        placed[i] = g
    ordered = []
    for i in range(len(wl)):
        if i not in placed:
            break
        ordered.append(placed[i])
    if len(ordered) < len(placed) + len(extra):
        # a hole: show the RTL line that took the place of the missing one
        later = [placed[i] for i in sorted(placed) if i > len(ordered)]
        ordered += (later[:1] or extra[:1])
    return wl, ordered


def compare_traces(launch: KernelLaunch, want: list[dict], got: list[dict], lanes: int
                   ) -> Mismatch | None:
    """None when every warp retired the same instructions with the same results; else the
    first difference (in program order) of the first warp (in block, warp order) that
    differs."""
    ww, gw = per_warp(want), per_warp(got)
    for key in sorted(set(ww) | set(gw)):
        wl, gl = program_order(ww.get(key, []), gw.get(key, []))
        where = f"block ({key[0]},{key[1]},{key[2]}) warp {key[3]}"
        for i, (w, g) in enumerate(zip(wl, gl, strict=False)):
            diff = [k for k in _KEYS if w.get(k) != g.get(k)]
            if not diff:
                continue
            pc = w["pc"]
            if pc == EXTRA_PC:
                lines = [f"{where}, instruction {i}: the rtl retired pc {g['pc']:#x} "
                         f"`{_disasm(launch, g['pc'])}`, which the ISS did not retire "
                         "before the launch's fault"]
            else:
                lines = [f"{where}, instruction {i} at pc {pc:#x} `{_disasm(launch, pc)}`: "
                         f"{diff[0]} differs"]
                detail = _lane_diff(w, g, lanes)
                if detail:
                    lines.append("  " + detail)
                for k in diff:
                    lines.append(f"  {k}: expected {_fmt(w.get(k))}, rtl {_fmt(g.get(k))}")
            if i:
                prev = wl[i - 1]["pc"]
                lines.append(f"  previous instruction of this warp: pc {prev:#x} "
                             f"`{_disasm(launch, prev)}`")
            return Mismatch("\n".join(lines))
        if len(wl) != len(gl):
            i = min(len(wl), len(gl))
            if len(wl) > len(gl):
                pc = wl[i]["pc"]
                return Mismatch(f"{where}: the rtl retired {len(gl)} instructions, the ISS "
                                f"{len(wl)}; the first missing one is at pc {pc:#x} "
                                f"`{_disasm(launch, pc)}`")
            pc = gl[i]["pc"]
            return Mismatch(f"{where}: the rtl retired {len(gl)} instructions, the ISS "
                            f"{len(wl)}; the first extra one is at pc {pc:#x} "
                            f"`{_disasm(launch, pc)}`")
    return None


def _fmt(v) -> str:
    if isinstance(v, int):
        return f"{v} ({v:#x})"
    if isinstance(v, list):
        return "[" + ", ".join(f"{x:#x}" for x in v) + "]"
    return repr(v)


def compare_memory(launch: KernelLaunch, want: dict[str, np.ndarray],
                   got: dict[str, np.ndarray]) -> Mismatch | None:
    """None when every buffer matches; else the first differing word of the first buffer."""
    for name, (addr, _) in launch.buffers.items():
        w, g = want[name], got[name]
        bad = np.nonzero(w != g)[0]
        if len(bad):
            i = int(bad[0])
            return Mismatch(f"memory: buffer {name!r} differs in {len(bad)} words; first at "
                            f"word {i} (address {addr + 4 * i:#x}): expected {int(w[i]):#010x}, "
                            f"rtl {int(g[i]):#010x}")
    return None
