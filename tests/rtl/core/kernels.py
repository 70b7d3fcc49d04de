"""Kernels shared by the core tests (Amaranth simulator and Verilator).

``ALL_UNITS`` exercises the multiplier, FPU, SFU, compares, select, predicate logic,
shuffles, votes, global and shared atomics and fences.

Atomics from different warps may interleave in any order (the models need not agree on it),
so ``ALL_UNITS`` is compared on one warp; its lanes collide on purpose.
"""

ALL_UNITS = """
        .kernel k
        .param out, ptr
        .param cnt, ptr
        .shared 256
        s2r     r1, tid
        s2r     r2, laneid
        ldparam r20, out
        shli    r21, r1, 2
        add     r20, r20, r21           ; &out[tid] (stride 16 words per result row below)
        ; integer multiplier
        muli    r3, r1, -7
        mul     r4, r3, r3
        mulhi   r5, r3, r4
        mulhu   r6, r3, r4
        ; FP32
        cvt.i2f r7, r3
        fmul    r8, r7, r7
        ffma    r9, r7, r8, r7
        fsub    r10, r9, r8
        cvt.f2i r11, r10
        fmin    r12, r7, r8
        fabs    r13, r7
        ; compares, select, predicate logic
        fsetp.lt p1, r7, r12
        isetp.ge p2, r3, r5
        pxor    p3, p1, !p2
        sel     r14, r3, r4, p3
        lui     r15, 0x1234
        lli     r15, 0xabcd
        ; special functions
        cvt.u2f r16, r1
        sfu.rsqrt r17, r16
        sfu.sin r18, r16
        sfu.exp2 r19, r7
        stg     [r20+0], r4
        stg     [r20+64], r5
        stg     [r20+128], r6
        stg     [r20+192], r9
        stg     [r20+256], r11
        stg     [r20+320], r14
        stg     [r20+384], r15
        stg     [r20+448], r17
        stg     [r20+512], r18
        stg     [r20+576], r19
        stg     [r20+640], r12
        stg     [r20+704], r13
        ; shuffles and votes
        movi    r22, 1
        shfl.down r23, r3, r22
        shfl.up  r24, r3, r22
        xori    r25, r2, 3
        shfl.idx r26, r3, r25
        shfl.xor r27, r3, r22
        andi    r28, r1, 1
        isetp.ne p4, r28, r0
  @p4   shfl.down r23, r1, r22          ; a shuffle with only some lanes executing
        vote.ballot r29, p4
        vote.any p5, p2
        vote.all p6, p4
        sel     r30, r22, r0, p6
        sel     r31, r22, r0, p5
        add     r30, r30, r31
        stg     [r20+768], r23
        stg     [r20+832], r24
        stg     [r20+896], r26
        stg     [r20+960], r27
        addi    r20, r20, 1000
        addi    r20, r20, 24
        stg     [r20+0], r29
        stg     [r20+64], r30
        ; shared atomics (lanes collide on 3 words) and global atomics
        andi    r10, r1, 1
        shli    r10, r10, 2
        atoms.add r11, [r10], r1
        atoms.max r12, [r10], r3
        cvt.u2f r13, r1
        movi    r9, 64
        atoms.fadd r14, [r9], r13
        movi    r8, 32
        atoms.cas r15, [r8], r0, r1
        ldparam r7, cnt
        atom.add r16, [r7], r22
        addi    r6, r7, 4
        atom.max r17, [r6], r3
        addi    r5, r7, 8
        atom.cas r18, [r5], r0, r1
        fence
        bar
        lds     r19, [r10]
        stg     [r20+128], r11
        stg     [r20+192], r12
        stg     [r20+256], r14
        stg     [r20+320], r15
        stg     [r20+384], r16
        stg     [r20+448], r17
        stg     [r20+512], r18
        stg     [r20+576], r19
        exit
        .end
"""


def chain_program(distance: int) -> str:
    """A chain of dependent adds, each consumer ``distance`` independent instructions after
    its producer, then every register stored."""
    lines = ["s2r r1, tid", "shli r30, r1, 2", "ldparam r31, out", "add r31, r31, r30",
             "addi r2, r1, 3"]
    fill = 10  # filler registers r10..r19
    prev = 2
    dst = 3
    for step in range(4):
        for k in range(distance):
            lines.append(f"addi r{fill + (k % 10)}, r1, {step * 16 + k}")
        lines.append(f"add r{dst}, r{prev}, r{prev}")
        lines.append(f"xori r{dst}, r{dst}, {step + 1}")
        prev, dst = dst, dst + 1
    for i, r in enumerate([2, 3, 4, 5, 6] + list(range(10, 10 + min(distance, 10)))):
        lines.append(f"stg [r31+{i * 64}], r{r}")
    lines.append("exit")
    body = "\n".join("        " + x for x in lines)
    return f"        .kernel k\n        .param out, ptr\n{body}\n        .end\n"


LOOP = """
        .kernel k
        .param out, ptr
        s2r     r1, tid
        andi    r2, r1, 7           ; trip count 0..7 per thread
        movi    r3, 0
        movi    r4, 1
        ssy     done
loop:   isetp.gt p0, r2, r0
   @!p0 bra     out_
        add     r3, r3, r4
        shli    r4, r4, 1
        addi    r2, r2, -1
        bra     loop
out_:   sync
done:   ldparam r5, out
        shli    r6, r1, 2
        add     r5, r5, r6
        stg     [r5], r3
        exit
        .end
"""


SHARED_CONFLICTS = """
        .kernel k
        .param out, ptr
        .shared 512
        s2r     r1, tid
        shli    r2, r1, 2
        muli    r3, r1, 16          ; stride 4 words: 4 or more lanes share a bank
        addi    r4, r1, 100
        sts     [r3], r4
        andi    r5, r1, 3
        shli    r5, r5, 2           ; lanes read 4 distinct words (broadcast)
        lds     r6, [r5]
        lds     r7, [r3]
        ldparam r8, out
        add     r8, r8, r2
        add     r6, r6, r7
        stg     [r8], r6
        exit
        .end
"""





def _new_atomics() -> str:
    ops = ("and", "or", "xor", "fmin", "fmax", "cas")
    body = []
    for prefix, base, first in (("atom", "r4", 7), ("atoms", "r5", 13)):
        for k, op in enumerate(ops):
            addr = base
            if k:
                step = 4 if prefix == "atom" else 8  # shared: odd/even lanes use 2 words
                body.append(f"        addi    r31, {base}, {step * k}")
                addr = "r31"
            c = ", r3" if op == "cas" else ""
            body.append(f"        {prefix}.{op} r{first + k}, [{addr}], r2{c}")
    results = [f"r{r}" for r in range(7, 19)] + ["r23", "r24", "r25"]
    stores = [f"        stg     [r20+{64 * i}], {r}" for i, r in enumerate(results)]
    seed = [f"        sts     [r5+{8 * k}], r6" for k in range(len(ops))]
    return "\n".join([
        "        .kernel k", "        .param out, ptr", "        .param cells, ptr",
        "        .param vals, ptr", "        .shared 64",
        "        s2r     r1, tid", "        shli    r21, r1, 2", "        ldparam r20, out",
        "        add     r20, r20, r21", "        ldparam r22, vals",
        "        add     r22, r22, r21",
        "        ldg     r2, [r22]               ; this lane's operand",
        "        ldg     r3, [r22+64]            ; the cas swap value",
        "        ldparam r4, cells               ; every lane on one cell per operation",
        "        andi    r5, r1, 1",
        "        shli    r5, r5, 2               ; odd and even lanes on two shared words",
        "        ldg     r6, [r4+0]              ; the shared words start as the cells",
        *seed, "        bar", *body, "        fence", "        bar",
        "        lds     r23, [r5+24]", "        lds     r24, [r5+32]",
        "        lds     r25, [r5+40]", *stores, "        exit", "        .end", ""])


ATOMIC_OPS_ALL = _new_atomics()
"""The atomics added for Triton's names (and/or/xor, float min/max, cas) on one warp, global
and shared, every lane on one cell per operation; operands in ``vals`` (16 words, then 16 swap
values), the cells' initial words in ``cells``."""


UNEVEN_BLOCKS = """
        .kernel k
        .param data, ptr
        s2r     r1, ctaid.x
        s2r     r2, tid.x
        s2r     r3, ntid.x
        muli    r4, r1, 5
        andi    r4, r4, 7               ; trip count (5 * block) % 8: neighbours differ
        mul     r5, r1, r3
        add     r5, r5, r2
        shli    r5, r5, 2
        ldparam r6, data
        add     r6, r6, r5              ; &data[block * ntid + tid]
        ldg     r7, [r6]
        movi    r8, 0
        isetp.le p0, r4, r0
   @p0  bra     store                   ; uniform: the trip count is the block's
loop:   add     r8, r8, r7
        ldg     r9, [r6]                ; a global load per trip: memory timing too
        xor     r7, r7, r9
        addi    r7, r7, 3
        addi    r4, r4, -1
        isetp.gt p1, r4, r0
   @p1  bra     loop
store:  stg     [r6], r8
        exit
        .end
"""
"""One-warp blocks (``ntid`` = lanes) of uneven length: 0 to 7 trips, each with a global
load, so resident blocks finish in every order and phase against the next ones' arrival."""


STALL_MIX = """
        .kernel k
        .param out, ptr
        .shared 256
        ; one warp: every lane's shared word in the same bank, so each access takes a round
        ; per lane and mem holds the stages behind it, where independent ALU instructions of
        ; different ops wait in ex1 and rr (each must keep its own op through the stall)
        s2r     r1, tid
        ldparam r20, out
        shli    r2, r1, 4               ; tid * 16: one bank, four words
        sts     [r2], r1
        addi    r3, r1, 5               ; in ex2 while sts holds mem
        xori    r4, r1, 9               ; in ex1
        shli    r5, r1, 3               ; in rr
        sub     r6, r5, r1
        lds     r7, [r2]
        or      r8, r3, r4
        and     r9, r6, r3
        shri    r10, r5, 1
        isetp.lt p1, r3, r4
        sel     r11, r8, r9, p1
        sts     [r2+4], r11
        mul     r12, r3, r4
        fadd    r13, r5, r6
        lds     r14, [r2+4]
        shli    r21, r1, 2
        add     r20, r20, r21
        stg     [r20+0], r3
        stg     [r20+32], r4
        stg     [r20+64], r6
        stg     [r20+96], r7
        stg     [r20+128], r8
        stg     [r20+160], r9
        stg     [r20+192], r10
        stg     [r20+224], r11
        stg     [r20+256], r12
        stg     [r20+288], r13
        stg     [r20+320], r14
        exit
        .end
"""
"""ALU instructions of different ops held in ex1 and rr by a multi-cycle shared access, in
both of the core's forms (``tests/rtl/core/test_core_programs.py``)."""

