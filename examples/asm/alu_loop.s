; alu_loop(out ptr, iters i32)
;
;   out[tid] = iters * tid + (1 ^ tid if iters is odd else 1) + (4 | tid)   (i32, iters >= 1)
;
; computed by iters trips of a loop of 14 ALU operations (most of whose results are unused).
; Launch: one block of any size (out has one word per thread of that block).
; Teaches: the issue rate of the pipeline. The loop body is 14 integer operations with few
; dependences between neighbours plus the loop branch, so a core whose scheduler hides the
; ALU latency across warps issues close to one instruction per cycle (the issue-rate figure
; of docs/performance.md and tests/rtl/core/test_core_verilator.py::test_alu_loop_ipc).

        .kernel alu_loop
        .param  out, ptr
        .param  iters, i32

        s2r     r1, tid
        ldparam r2, iters
        movi    r3, 0
        movi    r4, 1
        movi    r5, 2
        movi    r6, 3
        movi    r7, 4
loop:   add     r3, r3, r1
        xor     r4, r4, r1
        addi    r5, r5, 7
        shli    r6, r6, 1
        or      r7, r7, r1
        sub     r8, r1, r2
        and     r9, r1, r2
        addi    r2, r2, -1
        max     r10, r1, r2
        minu    r11, r1, r2
        isetp.gt p0, r2, r0
        xori    r12, r1, 5
        shri    r13, r1, 1
        sra     r14, r1, r1
   @p0  bra     loop
        ldparam r15, out
        shli    r16, r1, 2
        add     r15, r15, r16
        add     r3, r3, r4
        add     r3, r3, r7
        stg     [r15], r3
        exit
        .end
