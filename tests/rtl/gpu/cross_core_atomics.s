; cross_core_atomics(vals ptr, sums ptr, olds ptr, counts ptr, n i32, rounds i32)
;
; Every warp of every core adds its threads' values into its own word of `sums` with
; atom.fadd, `rounds` times, keeping the old word each lane got back in `olds`; every thread
; also counts itself into one of eight counters all cores share. The warps' words lie side by
; side, so the cores' atomics meet on the same lines at the L2 (where atomics are performed)
; and wait behind one another at its port.
;
; Per warp the results are fixed (its lanes in lane order, its rounds in program order):
; olds[k * n + gid] = the warp's sum of rounds before k plus round k's lanes below this one.
; Launch: 1-D; n = grid * block threads, a multiple of 32 (full's warp).

        .kernel cross_core_atomics
        .param  vals, ptr
        .param  sums, ptr
        .param  olds, ptr
        .param  counts, ptr
        .param  n, i32
        .param  rounds, i32

        s2r     r1, ctaid.x
        s2r     r2, ntid.x
        s2r     r3, tid.x
        mul     r1, r1, r2
        add     r1, r1, r3              ; gid
        shri    r4, r1, 5
        shli    r4, r4, 2
        ldparam r5, sums
        add     r5, r5, r4              ; &sums[gid / 32]
        andi    r6, r1, 7
        shli    r6, r6, 2
        ldparam r7, counts
        add     r7, r7, r6              ; &counts[gid % 8]
        shli    r8, r1, 2
        ldparam r9, vals
        add     r9, r9, r8              ; &vals[gid]
        ldparam r10, olds
        add     r10, r10, r8            ; &olds[gid]
        ldparam r11, n
        shli    r11, r11, 2             ; a round's stride in bytes
        ldparam r12, rounds
        movi    r13, 1
round:
        ldg     r14, [r9]
        atom.fadd r15, [r5], r14
        stg     [r10], r15
        atom.add r16, [r7], r13
        add     r9, r9, r11
        add     r10, r10, r11
        addi    r12, r12, -1
        isetp.ne p0, r12, r0
   @p0  bra     round                   ; uniform
        exit
        .end
