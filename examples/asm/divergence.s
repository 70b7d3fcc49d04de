; classify(x ptr, out ptr, n i32)
;
;   for every i < n, with v = x[i] (i32):
;     v <= 0  ->  out[i] = -1
;     v == 1  ->  out[i] = 0
;     else    ->  out[i] = number of Collatz steps from v to 1, capped at 255:
;                 v = v / 2 if v is even, else v = 3 * v + 1 (32-bit unsigned arithmetic,
;                 wrapping), until v == 1 or 255 steps were taken.
;
; Launch: 1-D grid of 1-D blocks of any size; grid = ceil(n / block size).
;
; Teaches (see docs/execution-model.md):
;   - exit of part of a warp (threads past n leave at once);
;   - an if/else whose else path holds a nested if and a loop, each bracketed by
;     ssy (push the reconvergence point) ... sync (end of a path);
;   - a loop with a per-thread trip count: "@p3 bra loop" lets lanes leave one by one;
;     each leaver is parked in one DIV entry (the merge rule ORs later leavers into it)
;     and all of them meet again at 'counted'.

        .equ    CAP, 255

        .kernel classify
        .param  x, ptr
        .param  out, ptr
        .param  n, i32

        s2r     r1, ctaid.x
        s2r     r2, ntid.x
        s2r     r3, tid.x
        mul     r1, r1, r2
        add     r1, r1, r3              ; i
        ldparam r2, n
        isetp.lt p0, r1, r2
   @!p0 exit                            ; threads past the end are done

        shli    r1, r1, 2               ; byte offset of element i
        ldparam r4, x
        add     r4, r4, r1
        ldg     r5, [r4]                ; v = x[i]

        isetp.le p1, r5, r0             ; p1: v <= 0
        ssy     store                   ; outer if/else reconverges at 'store'
   @!p1 bra     positive
        movi    r6, -1                  ; then: v <= 0
        sync                            ; end of the then path
positive:                               ; else: v > 0
        movi    r6, 0                   ; steps = 0
        movi    r7, CAP
        movi    r9, 1
        isetp.ne p5, r5, r9             ; p5: v != 1, there is work to do
        ssy     counted                 ; nested if: only lanes with v != 1 loop
   @!p5 bra     no_steps
loop:
        andi    r8, r5, 1
        isetp.eq p2, r8, r0             ; p2: v is even
        ssy     stepped                 ; innermost if/else
   @!p2 bra     odd
        shri    r5, r5, 1               ; even: v = v / 2
        sync
odd:    muli    r5, r5, 3               ; odd: v = 3 * v + 1
        addi    r5, r5, 1
        sync
stepped:
        addi    r6, r6, 1               ; steps += 1
        isetp.ne p3, r5, r9             ; continue while v != 1 ...
        isetp.lt p4, r6, r7             ; ... and steps < CAP
        pand    p3, p3, p4
   @p3  bra     loop                    ; lanes leave the loop one by one
no_steps:
        sync                            ; parked leavers resume here, then pop to 'counted'
counted:
        sync                            ; end of the else path
store:                                  ; every lane that did not exit is active again
        ldparam r10, out
        add     r10, r10, r1
        stg     [r10], r6
        exit
        .end
