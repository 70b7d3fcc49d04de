"""Random structured programs (integer arithmetic, guards, nested if/else, loops with
per-thread trip counts, exits anywhere, guarded loads and stores to per-thread scratch
memory) against a scalar per-thread interpreter.

The interpreter knows nothing of warps, masks or stacks: it runs each thread on its own.
Agreement at warp sizes 4, 8 and 32 checks the SIMT machinery (divergence, reconvergence,
groups of warps at different PCs, partial warps) end to end. More programs with
``SIMTGPU_RANDOM_PROGRAMS=N``.
"""

import os
import random

import numpy as np
import pytest
from int_ref import CMP_REF, IMM_REF, INT_REF, MASK32
from sim_harness import GID, run

M = MASK32
REGS = list(range(3, 11))  # r3..r10 hold data; r20.. are loop counters

RR = INT_REF
RI = {op: IMM_REF[op] for op in ("addi", "xori", "andi", "shri", "muli")}
COND = {c: CMP_REF[c] for c in ("eq", "ne", "lt", "ge", "ltu", "gtu")}


class Exited(Exception):
    pass


class Gen:
    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.label = 0

    def block(self, depth: int, n: int) -> list:
        return [self.stmt(depth) for _ in range(n)]

    def stmt(self, depth: int):
        r = self.r
        k = r.random()
        if depth < 3 and k < 0.12:
            return ("if", r.choice(list(COND)), r.choice(REGS), r.choice(REGS),
                    self.block(depth + 1, r.randint(0, 3)), self.block(depth + 1, r.randint(0, 3)))
        if depth < 2 and k < 0.2:
            return ("loop", r.choice(REGS), depth, self.block(depth + 1, r.randint(1, 3)))
        if k < 0.3:
            return ("st" if r.random() < 0.5 else "ld", r.randint(0, 3), r.choice(REGS),
                    r.choice(list(COND)), r.choice(REGS), r.choice(REGS), r.random() < 0.3)
        if k < 0.34:
            return ("exit", r.choice(list(COND)), r.choice(REGS), r.choice(REGS))
        if k < 0.45:
            return ("guarded", r.choice(list(COND)), r.choice(REGS), r.choice(REGS),
                    r.random() < 0.5, r.choice(list(RR)), r.choice(REGS), r.choice(REGS),
                    r.choice(REGS))
        if k < 0.62:
            return ("ri", r.choice(list(RI)), r.choice(REGS), r.choice(REGS),
                    r.randint(-1024, 1023))
        return ("rr", r.choice(list(RR)), r.choice(REGS), r.choice(REGS), r.choice(REGS))

    def emit(self, stmts: list) -> list[str]:
        out = []
        for s in stmts:
            kind = s[0]
            if kind == "rr":
                out.append(f"    {s[1]} r{s[2]}, r{s[3]}, r{s[4]}")
            elif kind == "ri":
                out.append(f"    {s[1]} r{s[2]}, r{s[3]}, {s[4]}")
            elif kind == "guarded":
                _, c, a, b, neg, op, d, x, y = s
                out += [f"    isetp.{c} p2, r{a}, r{b}",
                        f"@{'!' if neg else ''}p2 {op} r{d}, r{x}, r{y}"]
            elif kind == "exit":
                out += [f"    isetp.{s[1]} p3, r{s[2]}, r{s[3]}", "@p3 exit"]
            elif kind in ("st", "ld"):  # r12 points at the thread's four scratch words
                _, slot, reg, c, a, b, guarded = s
                guard = ""
                if guarded:
                    out.append(f"    isetp.{c} p4, r{a}, r{b}")
                    guard = "@p4 "
                if kind == "st":
                    out.append(f"{guard}stg [r12+{4 * slot}], r{reg}")
                else:
                    out.append(f"{guard}ldg r{reg}, [r12+{4 * slot}]")
            elif kind == "if":
                self.label += 1
                n = self.label
                out += [f"    isetp.{s[1]} p0, r{s[2]}, r{s[3]}", f"    ssy J{n}",
                        f"@p0 bra T{n}"]
                out += self.emit(s[5]) + ["    sync", f"T{n}:"]
                out += self.emit(s[4]) + ["    sync", f"J{n}:"]
            else:  # loop: runs (r & 3) + 1 times
                _, reg, depth, body = s
                self.label += 1
                n, c = self.label, 20 + depth
                out += [f"    andi r{c}, r{reg}, 3", f"    ssy D{n}", f"L{n}:"]
                out += self.emit(body)
                out += [f"    addi r{c}, r{c}, -1", f"    isetp.ge p1, r{c}, r0",
                        f"@p1 bra L{n}", "    sync", f"D{n}:"]
        return out


def interpret(stmts: list, regs: dict) -> None:
    for s in stmts:
        kind = s[0]
        if kind == "rr":
            regs[s[2]] = RR[s[1]](regs[s[3]], regs[s[4]])
        elif kind == "ri":
            regs[s[2]] = RI[s[1]](regs[s[3]], s[4])
        elif kind == "guarded":
            _, c, a, b, neg, op, d, x, y = s
            if COND[c](regs[a], regs[b]) != neg:
                regs[d] = RR[op](regs[x], regs[y])
        elif kind == "exit":
            if COND[s[1]](regs[s[2]], regs[s[3]]):
                raise Exited
        elif kind in ("st", "ld"):
            _, slot, reg, c, a, b, guarded = s
            if not guarded or COND[c](regs[a], regs[b]):
                if kind == "st":
                    regs["mem"][slot] = regs[reg]
                else:
                    regs[reg] = regs["mem"][slot]
        elif kind == "if":
            interpret(s[4] if COND[s[1]](regs[s[2]], regs[s[3]]) else s[5], regs)
        else:
            for _ in range((regs[s[1]] & 3) + 1):
                interpret(s[3], regs)


def program(seed: int) -> tuple[str, tuple]:
    g = Gen(seed)
    # r3 = gid, r4 = 7 * gid + 3, r5..r10 = (r4 ^ r3 or r4) * k with random k
    consts = [(reg, 3 if i % 2 == 0 else 4, g.r.randint(-1024, 1023))
              for i, reg in enumerate(REGS[2:])]
    stmts = g.block(0, 14)
    lines = [".kernel k", ".param out, ptr", ".param scratch, ptr", GID,
             "    muli r4, r1, 7", "    addi r4, r4, 3", "    add r3, r1, r0",
             "    ldparam r12, scratch", "    shli r13, r1, 4", "    add r12, r12, r13"]
    for reg, src, k in consts:
        lines += [f"    xor r{reg}, r4, r{src}", f"    muli r{reg}, r{reg}, {k}"]
    lines += g.emit(stmts)
    lines += ["    muli r2, r1, 32", "    ldparam r11, out", "    add r11, r11, r2"]
    lines += [f"    stg [r11+{4 * i}], r{reg}" for i, reg in enumerate(REGS)]
    lines += ["    exit", ".end"]
    return "\n".join(lines), (consts, stmts)


def reference(tree: tuple, nthreads: int) -> np.ndarray:
    consts, stmts = tree
    out = np.full((nthreads, len(REGS)), 0xDEAD, np.uint32)
    for t in range(nthreads):
        regs = {3: t, 4: (t * 7 + 3) & M, "mem": [0, 0, 0, 0]}
        for reg, src, k in consts:
            regs[reg] = ((regs[4] ^ regs[src]) * k) & M
        try:
            interpret(stmts, regs)
        except Exited:
            continue
        out[t] = [regs[r] for r in REGS]
    return out


N = int(os.environ.get("SIMTGPU_RANDOM_PROGRAMS", "24"))


@pytest.mark.parametrize("seed", range(N))
def test_random_program(seed):
    src, tree = program(seed)
    nthreads = 2 * 48
    want = reference(tree, nthreads)
    for warp in (4, 8, 32):
        res = run(src, warp_size=warp, grid=(2, 1, 1), block=(48, 1, 1),
                  params=[("out", np.full(nthreads * len(REGS), 0xDEAD, np.uint32)),
                          ("scratch", np.zeros(nthreads * 4, np.uint32))])
        got = res.out["out"].reshape(nthreads, len(REGS))
        bad = np.flatnonzero((got != want).any(axis=1))
        assert bad.size == 0, f"warp {warp}: threads {bad[:8].tolist()} differ\n{src}"
