; saxpy(x ptr, y ptr, a f32, n i32)
;
;   y[i] = a * x[i] + y[i]   (f32, one rounding: fused multiply-add) for every i < n
;
; Launch: 1-D grid of 1-D blocks of any size; grid = ceil(n / block size).
; Teaches: a float parameter (its 32 bits arrive in a register like any other word),
; ffma, and the same predicated bounds check as vector_add.s.

        .kernel saxpy
        .param  x, ptr
        .param  y, ptr
        .param  a, f32
        .param  n, i32

        s2r     r1, ctaid.x
        s2r     r2, ntid.x
        s2r     r3, tid.x
        mul     r1, r1, r2
        add     r1, r1, r3              ; i = ctaid.x * ntid.x + tid.x
        ldparam r2, n
        isetp.lt p0, r1, r2             ; p0: i < n

        shli    r1, r1, 2               ; byte offset of element i
        ldparam r4, x
        ldparam r5, y
        add     r4, r4, r1              ; &x[i]
        add     r5, r5, r1              ; &y[i]
        ldparam r6, a                   ; the scalar a (f32 bits)

   @p0  ldg     r7, [r4]                ; x[i]
   @p0  ldg     r8, [r5]                ; y[i]
   @p0  ffma    r8, r6, r7, r8          ; a * x[i] + y[i], rounded once
   @p0  stg     [r5], r8
        exit
        .end
