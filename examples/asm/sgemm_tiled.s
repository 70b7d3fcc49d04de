; sgemm_tiled(a ptr, b ptr, c ptr, m i32, n i32, k i32)
;
;   C[m, n] = A[m, k] @ B[k, n]   (f32, row-major), with shared-memory tiles.
;
; Launch: 2-D grid of 2-D blocks of BX x BY threads, one thread per element of C:
;   row = ctaid.y * BY + tid.y,  col = ctaid.x * BX + tid.x,
;   grid = (ceil(n / BX), ceil(m / BY)).
; The tile shape is read from ntid.x / ntid.y at run time. Requirements:
;   BX a multiple of 4 and at most 16 (the inner loop is unrolled 4x; the B tile is BX x BX),
;   BX * BY <= 256 (the A tile is BY x BX), ntid.z = 1.
; Shapes used by examples/sgemm.py: tiny 4x2, small 8x4, full 16x16 (the configuration's
; maximum threads per block). Any warp size works: nothing depends on where warps split the
; block, and every branch around a bar is uniform.
;
; Each block computes the BY x BX tile of C at (ctaid.y * BY, ctaid.x * BX). It walks K in
; steps of BX ("k0" = 0, BX, 2*BX, ...); per step:
;   1. cooperative load: thread (tx, ty) copies A[row][k0 + tx] to As[ty][tx], and
;      B[k0 + t][col] to Bt[tx][t] for t = ty, ty + BY, ... < BX (B is stored transposed so
;      that the inner loop reads both operands at constant offsets from one pointer each).
;      Elements outside A or B are stored as 0.0 (predicated ldg of a zeroed register);
;   2. bar;
;   3. acc = fma(As[ty][j], Bt[tx][j], acc) for j = 0 .. BX-1, unrolled 4x;
;   4. bar (nobody overwrites the tiles while another warp still reads them).
; Finally thread (tx, ty) stores acc to C[row][col] if row < m and col < n.
;
; Accumulation order (bit-exact reference: tests/driver/test_sgemm_tiled.py and
; examples/sgemm.py): acc starts at +0.0; then acc = fma(A[row][j], B[j][col], acc), one
; rounding each (docs/numerics.md), for j = 0, 1, ..., K' - 1 where K' = k rounded up to a
; multiple of BX and the terms j >= k use A = B = 0.0. That is matmul.s's order plus the
; zero padding terms (each adds +0.0, which changes acc only when acc is -0.0).
;
; Shared memory: As at byte 0 (BY*BX words, at most 256), Bt at BT (BX rows of BX+1 words;
; the extra word per row keeps both the transposed stores and the inner-loop reads of a
; warp in distinct banks: lanes tx and tx' differ by (tx - tx') * (BX + 1) words, odd stride).
; The As reads of one warp are broadcasts (lanes of a row read the same word).
;
; Measured on the ISS (examples/sgemm.py --stats, warp-instructions per element of C =
; warp-instructions * warp size / (m * n); "ffma" = ffma share of warp-instructions):
;
;   size 64^3, config      tile    warp-instr/elem   ffma    vs matmul.s (same size/config)
;   small (8 lanes)        8x4          54.6         14.6%   matmul.s: 523.8 / 12.2%
;   full (32 lanes)        16x16        27.5         ...
;
; Per K step of BX the inner loop costs 4 * BX warp-instructions for BX ffma (16 per 4:
; 8 lds, 4 ffma, 2 pointer steps, compare, branch), i.e. 25% ffma; the rest is the tile
; load (one A word and ceil(BX/BY) B words per thread), two bars and the K-loop step.
; matmul.s spends 8 warp-instructions per ffma (two ldg from global memory each time).

        .equ    AS_BYTES, 4 * 256               ; As: up to 256 words
        .equ    BT, AS_BYTES                    ; Bt: byte offset in shared memory
        .equ    MAX_BX, 16

        .kernel sgemm_tiled
        .param  a, ptr
        .param  b, ptr
        .param  c, ptr
        .param  m, i32
        .param  n, i32
        .param  k, i32
        .shared AS_BYTES + 4 * MAX_BX * (MAX_BX + 1)

        ; ---- indices and guards ----
        s2r     r1, tid.x               ; tx
        s2r     r2, tid.y               ; ty
        s2r     r3, ntid.x              ; BX (also the K step)
        s2r     r4, ntid.y              ; BY
        s2r     r5, ctaid.y
        mul     r5, r5, r4
        add     r5, r5, r2              ; row
        s2r     r6, ctaid.x
        mul     r6, r6, r3
        add     r6, r6, r1              ; col
        ldparam r7, m
        ldparam r8, n
        ldparam r21, k                  ; rem = k - k0: what is left of K
        isetp.lt p0, r5, r7             ; p0: row < m
        isetp.lt p1, r6, r8             ; p1: col < n
        isetp.lt p4, r2, r3             ; p4: ty < BX: this thread copies B words
        pand    p5, p1, p4              ; p5: ... and they exist (before the K tail)

        ; ---- global pointers ----
        ldparam r10, a
        mul     r11, r5, r21            ; row * k
        add     r11, r11, r1            ; + tx
        shli    r11, r11, 2
        add     r10, r10, r11           ; pa = &A[row][k0 + tx]   (steps 4*BX)
        shli    r11, r3, 2              ; 4*BX
        ldparam r12, b
        mul     r13, r2, r8             ; ty * n
        add     r13, r13, r6            ; + col
        shli    r13, r13, 2
        add     r12, r12, r13           ; pb = &B[k0 + ty][col]   (steps BX rows)
        shli    r15, r8, 2              ; 4*n: one row of B
        mul     r14, r15, r3            ; 4*n*BX: pb's step
        mul     r15, r15, r4            ; 4*n*BY: between a thread's B words in one step
        ldparam r7, c
        mul     r13, r5, r8             ; row * n
        add     r13, r13, r6            ; + col
        shli    r13, r13, 2
        add     r5, r7, r13             ; pc = &C[row][col]

        ; ---- shared addresses ----
        mul     r16, r2, r3
        shli    r16, r16, 2             ; sa = &As[ty][0]
        shli    r17, r1, 2
        add     r17, r16, r17           ; &As[ty][tx]
        addi    r18, r3, 1              ; BX + 1: row length of Bt
        mul     r18, r18, r1
        shli    r18, r18, 2
        movi    r7, BT
        add     r18, r18, r7            ; sb = &Bt[tx][0]
        shli    r19, r2, 2
        add     r19, r18, r19           ; &Bt[tx][ty]
        add     r9, r19, r11            ; &Bt[tx][ty + BX]: end of this thread's B copies
        shli    r13, r4, 2              ; 4*BY: Bt step between a thread's B words

        movi    r20, 0                  ; acc = +0.0
        movi    r23, 0                  ; A word: stays 0.0 where row >= m (never loaded)
        movi    r28, 0                  ; B word: stays 0.0 where !p5 (never loaded)
        movi    r6, 4
        isetp.eq p2, r3, r6             ; p2: BX == 4
        movi    r6, 8
        isetp.eq p6, r3, r6             ; p6: BX == 8
        isetp.ge p3, r21, r3
   @p3  bra     kstep                   ; uniform: a whole first K step
        isetp.gt p3, r21, r0
   @p3  bra     ktail                   ; uniform: 0 < k < BX
        bra     store                   ; k <= 0: C = 0

kstep:  ; ---- 1. cooperative tile load; a whole K step needs no K bounds ----
   @p0  ldg     r23, [r10]              ; A[row][k0 + tx]
        sts     [r17], r23              ; As[ty][tx]
        mov     r24, r12                ; &B[k0 + t][col] for t = ty, ty + BY, ... < BX
        mov     r25, r19                ; &Bt[tx][t]
bcopy:
   @p5  ldg     r28, [r24]
   @p4  sts     [r25], r28              ; Bt[tx][t] = B[k0 + t][col]
        add     r24, r24, r15
        add     r25, r25, r13
        isetp.lt p3, r25, r9
   @p3  bra     bcopy                   ; uniform: t - ty is the same in every thread
loaded:
        bar                             ; ---- 2. the tiles are complete ----

        ; ---- 3. acc += As[ty][j] * Bt[tx][j] for j = 0 .. BX-1, fully unrolled for
        ;      BX = 16 (constant offsets, no loop counter); BX = 4 and 8 leave early by
        ;      uniform branches. Each group of 4 terms loads its 8 operands, then fmas. ----
        lds     r22, [r16]
        lds     r24, [r18]
        lds     r25, [r16+4]
        lds     r26, [r18+4]
        lds     r27, [r16+8]
        lds     r29, [r18+8]
        lds     r30, [r16+12]
        lds     r31, [r18+12]
        ffma    r20, r22, r24, r20      ; j = 0
        ffma    r20, r25, r26, r20      ; j = 1
        ffma    r20, r27, r29, r20      ; j = 2
        ffma    r20, r30, r31, r20      ; j = 3
   @p2  bra     kdone                   ; uniform: BX == 4
        lds     r22, [r16+16]
        lds     r24, [r18+16]
        lds     r25, [r16+20]
        lds     r26, [r18+20]
        lds     r27, [r16+24]
        lds     r29, [r18+24]
        lds     r30, [r16+28]
        lds     r31, [r18+28]
        ffma    r20, r22, r24, r20      ; j = 4
        ffma    r20, r25, r26, r20      ; j = 5
        ffma    r20, r27, r29, r20      ; j = 6
        ffma    r20, r30, r31, r20      ; j = 7
   @p6  bra     kdone                   ; uniform: BX == 8
        lds     r22, [r16+32]
        lds     r24, [r18+32]
        lds     r25, [r16+36]
        lds     r26, [r18+36]
        lds     r27, [r16+40]
        lds     r29, [r18+40]
        lds     r30, [r16+44]
        lds     r31, [r18+44]
        ffma    r20, r22, r24, r20      ; j = 8
        ffma    r20, r25, r26, r20      ; j = 9
        ffma    r20, r27, r29, r20      ; j = 10
        ffma    r20, r30, r31, r20      ; j = 11
        lds     r22, [r16+48]
        lds     r24, [r18+48]
        lds     r25, [r16+52]
        lds     r26, [r18+52]
        lds     r27, [r16+56]
        lds     r29, [r18+56]
        lds     r30, [r16+60]
        lds     r31, [r18+60]
        ffma    r20, r22, r24, r20      ; j = 12
        ffma    r20, r25, r26, r20      ; j = 13
        ffma    r20, r27, r29, r20      ; j = 14
        ffma    r20, r30, r31, r20      ; j = 15
kdone:
        bar                             ; ---- 4. done reading the tiles ----

        add     r10, r10, r11           ; pa: next BX columns of A
        add     r12, r12, r14           ; pb: next BX rows of B
        sub     r21, r21, r3            ; rem -= BX
        isetp.ge p3, r21, r3
   @p3  bra     kstep                   ; uniform: another whole step
        isetp.gt p3, r21, r0
   @p3  bra     ktail                   ; uniform: a partial step is left

store:
        pand    p0, p0, p1              ; this thread owns C[row][col]
   @p0  stg     [r5], r20
        exit

ktail:  ; ---- 1'. the last step, K bounds checked: k0 + j < k is j < rem ----
        isetp.lt p3, r1, r21
        pand    p3, p3, p0              ; A[row][k0 + tx] exists
        movi    r26, 0
   @p3  ldg     r26, [r10]
        sts     [r17], r26              ; As[ty][tx] (0.0 past k)
        mov     r27, r2                 ; t = ty
        mov     r24, r12
        mov     r25, r19
btail:
        isetp.lt p3, r27, r21
        pand    p3, p3, p5              ; B[k0 + t][col] exists
        movi    r26, 0
   @p3  ldg     r26, [r24]
   @p4  sts     [r25], r26              ; Bt[tx][t] (0.0 past k)
        add     r27, r27, r4
        add     r24, r24, r15
        add     r25, r25, r13
        isetp.lt p3, r25, r9
   @p3  bra     btail                   ; uniform, as bcopy
        bra     loaded                  ; uniform

        .end
