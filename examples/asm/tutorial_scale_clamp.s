; scale_clamp(x ptr, y ptr, n i32, scale f32, limit f32)
;   y[i] = clamp(x[i] * scale, 0, limit) for every i < n
; Launch: 1-D grid of 1-D blocks, grid = ceil(n / block size).
; The kernel of docs/tutorial.md: a masked load and store, and a
; divergent if/else bracketed by ssy ... sync.

        .kernel scale_clamp
        .param  x, ptr
        .param  y, ptr
        .param  n, i32
        .param  scale, f32
        .param  limit, f32

        s2r     r1, ctaid.x             ; block index
        s2r     r2, ntid.x              ; threads per block
        s2r     r3, tid.x               ; thread index in the block
        mul     r1, r1, r2
        add     r1, r1, r3              ; i = ctaid.x * ntid.x + tid.x
        ldparam r2, n
        isetp.lt p0, r1, r2             ; p0: i < n

        shli    r1, r1, 2               ; byte offset of x[i], y[i]
        ldparam r4, x
        add     r4, r4, r1              ; &x[i]
   @p0  ldg     r5, [r4]                ; masked load
        ldparam r6, scale
        fmul    r5, r5, r6              ; v = x[i] * scale
        ldparam r7, limit
        fsetp.gt p1, r5, r7             ; p1: v > limit

        ssy     store                   ; reconverge at 'store'
   @p1  bra     clamp                   ; p1 lanes jump
        fmax    r5, r5, r0              ; not clamped: v = max(v, 0.0)
        sync                            ; end of this path
clamp:  mov     r5, r7                  ; clamped: v = limit
        sync                            ; end of this path

store:  ldparam r8, y                   ; all lanes active again
        add     r8, r8, r1              ; &y[i]
   @p0  stg     [r8], r5                ; masked store
        exit
        .end
