; block_sum(x ptr, out ptr, n i32)
;
;   out[b] = sum of x[b*B .. b*B + B-1]   (f32; elements at or past n count as 0.0)
;
; Launch: 1-D grid, 1-D blocks of B threads, B a power of two from 1 to 256;
; grid = ceil(n / B). Shared memory: 4 * 256 bytes (one f32 per thread).
;
; The sum is a tree: with s = B/2, B/4, ..., 1, thread t < s does
; sh[t] = sh[t] + sh[t + s]. A reference that adds in the same order gets the same bits.
;
; Teaches: shared memory, bar between the steps of the tree, a loop whose condition is
; the same for every thread (a uniform branch needs no ssy), and a divergent "if"
; bracketed by ssy/bra/sync so that the warp is whole again before the next bar
; (bar inside divergent code is a DIVERGENT_BARRIER fault).

        .equ    MAX_BLOCK, 256

        .kernel block_sum
        .param  x, ptr
        .param  out, ptr
        .param  n, i32
        .shared 4 * MAX_BLOCK

        s2r     r1, tid.x
        s2r     r2, ntid.x
        s2r     r3, ctaid.x
        mul     r4, r3, r2
        add     r4, r4, r1              ; i = ctaid.x * ntid.x + tid.x
        ldparam r5, n
        isetp.lt p0, r4, r5             ; p0: element i exists

        movi    r6, 0                   ; 0.0 for threads past the end
        ldparam r7, x
        shli    r8, r4, 2
        add     r7, r7, r8              ; &x[i]
   @p0  ldg     r6, [r7]
        shli    r9, r1, 2               ; r9 = &sh[tid] (shared byte address)
        sts     [r9], r6
        bar                             ; every sh[] slot is written

        shri    r10, r2, 1              ; s = B / 2
        isetp.eq p1, r10, r0
   @p1  bra     done                    ; B == 1: nothing to add (uniform)
step:
        isetp.lt p2, r1, r10            ; p2: this thread adds (tid < s)
        ssy     joined                  ; reconverge at 'joined'
   @!p2 bra     skip                    ; the others skip the add (may diverge)
        shli    r11, r10, 2
        add     r11, r9, r11            ; &sh[tid + s]
        lds     r12, [r11]
        lds     r13, [r9]
        fadd    r13, r13, r12
        sts     [r9], r13
skip:   sync                            ; both paths end here; the warp is whole again
joined:
        bar                             ; the step's writes are visible to the next step
        shri    r10, r10, 1             ; s = s / 2
        isetp.ne p1, r10, r0
   @p1  bra     step                    ; uniform: s is the same in every thread
done:
        isetp.eq p3, r1, r0             ; thread 0 writes the block's sum
        lds     r14, [r0]               ; sh[0]
        ldparam r15, out
        shli    r16, r3, 2
        add     r15, r15, r16           ; &out[ctaid.x]
   @p3  stg     [r15], r14
        exit
        .end
