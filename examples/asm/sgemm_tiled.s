; sgemm_tiled(a ptr, b ptr, c ptr, m i32, n i32, k i32)
;
;   C[m, n] = A[m, k] @ B[k, n]   (f32, row-major), through shared-memory tiles.
;
; Launch: 2-D grid of 2-D blocks of BX x BY threads, one thread per element of C:
;   row = ctaid.y * BY + tid.y,  col = ctaid.x * BX + tid.x,
;   grid = (ceil(n / BX), ceil(m / BY)).
; The tile shape comes from ntid.x / ntid.y at run time. Requirements (not checked here;
; examples/sgemm.py checks them): BX is 4, 8 or 16; BY divides BX or BY >= BX;
; BX * BY <= 256; ntid.z = 1. examples/sgemm.py uses the configuration's whole block:
; tiny 4x2, small 8x4, full 16x16. Any warp size works: nothing depends on where warps split
; the block, and every branch is uniform (the same in every thread), so no ssy is needed
; and each bar is reached by whole warps.
;
; Block (ctaid.x, ctaid.y) computes the BY x BX tile of C at rows ctaid.y * BY ..,
; columns ctaid.x * BX ... It walks K in steps of BX (k0 = 0, BX, 2*BX, ...); per step:
;   1. cooperative load: thread (tx, ty) copies A[row][k0 + tx] to As[ty][tx], and
;      B[k0 + t][col] to Bt[tx][t] for t = ty, ty + BY, ... < BX. B is stored transposed so
;      that the inner product reads both operands at constant offsets from one base each.
;      Whole steps need no K bounds; the last, partial step (ktail) stores 0.0 for
;      k0 + j >= k. Rows >= m of A and columns >= n of B are neither loaded nor stored
;      (predicated ldg/sts; their shared words keep the 0.0 of block start); they would only
;      feed elements of C that are not stored;
;   2. bar;
;   3. acc = fma(As[ty][j], Bt[tx][j], acc) for j = 0 .. BX-1, unrolled completely and
;      software-pipelined (loads of the next 4 terms between the fmas of these 4);
;   4. bar (no warp overwrites the tiles while another still reads them).
; Finally thread (tx, ty) stores acc to C[row][col] if row < m and col < n.
; The K loop is written out once per BX (16, 8, 4), chosen once at entry, so no step pays
; for the run-time tile shape.
;
; Accumulation order (reproduced bit for bit by examples/sgemm.py and
; tests/driver/test_sgemm_tiled.py): acc starts at +0.0, then acc = fma(A[row][j], B[j][col],
; acc) with one rounding each (docs/numerics.md), for j = 0, 1, ..., K' - 1, where K' is k
; rounded up to a multiple of BX and the terms j >= k have A = B = 0.0. That is matmul.s's
; order plus zero terms (each adds +0.0, which changes acc only when acc is -0.0).
;
; Shared memory: As at byte 0 (BY x BX words, at most 256); Bt at BT (BX rows of BX + 1
; words). With one bank per lane (bank = word % warp size) the extra word keeps the
; transposed stores and the inner-product reads of a warp conflict-free: lanes tx, tx'
; of a row differ by (tx - tx') * (BX + 1) words, an odd stride. The As reads of one warp
; are broadcasts (every lane of a tile row reads the same word).
;
; Cost of one whole K step per thread, in instructions (steady state, counted on the ISS):
;   full  16x16: 61 for 16 ffma (26%): 48 inner (32 lds + 16 ffma), 6 tile load (2 ldg,
;                2 sts, the "more B rows?" test), 2 bar, 5 K-loop;
;   small  8x4:  46 for 8 ffma (17%): a second B row per thread (bmore8) costs 9;
;   tiny   4x2:  34 for 4 ffma (12%).
; Setup and the final store add 64 per thread. matmul.s spends 8 per ffma (2 ldg, ffma,
; 2 pointer steps, counter, compare, branch).
;
; Measured on the ISS, m = n = k, uniform(-1, 1) inputs, the launch of examples/sgemm.py
; (--stats) and of examples/matmul.py on the same configuration; per element of C:
; warp-instructions, thread-instructions (no divergence: warp-instructions x warp size),
; global loads (lane accesses); ffma as a share of executed warp-instructions:
;
;   config size  kernel       tile   warp-instr  thread-instr  ldg/elem  ffma
;   tiny    64   sgemm_tiled  4x2      152.0        608.0        48.0    10.5%
;   tiny    64   matmul.s     4x2      136.8        547.0       128.0    11.7%
;   small   64   sgemm_tiled  8x4       54.1        433.0        24.0    14.8%
;   small   64   matmul.s     8x4       68.4        547.0       128.0    11.7%
;   small  256   sgemm_tiled  8x4      192.1       1537.0        96.0    16.7%
;   small  256   matmul.s     8x4      260.4       2083.0       512.0    12.3%
;   full    64   sgemm_tiled  16x16      9.6        308.0         8.0    20.8%
;   full    64   matmul.s     32x8      17.1        547.0       128.0    11.7%
;   full   128   sgemm_tiled  16x16     17.3        552.0        16.0    23.2%
;   full   128   matmul.s     32x8      33.1       1059.0       256.0    12.1%
;   full   256   sgemm_tiled  16x16     32.5       1040.0        32.0    24.6%
;   full   256   matmul.s     32x8      65.1       2083.0       512.0    12.3%
;
; On tiny (8-thread blocks) the per-step overhead outweighs the shorter inner loop: more
; instructions than matmul.s, but 2.7x fewer global loads. One output per thread bounds
; the ffma share at 1/3 (two lds per ffma); more needs several outputs per thread.

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
        shli    r13, r4, 2              ; 4*BY: Bt step between a thread's B words
        sub     r9, r11, r13
        add     r9, r19, r9             ; &Bt[tx][ty + BX - BY]: this thread's last B copy

        movi    r20, 0                  ; acc = +0.0
        movi    r6, 4
        isetp.eq p2, r3, r6             ; p2: BX == 4
        movi    r6, 8
        isetp.eq p6, r3, r6             ; p6: BX == 8
        ; The K loop exists three times, one copy per BX (chosen once, here): the copies
        ; differ only in the length of the unrolled inner product, and no step pays for
        ; choosing. ktail, the partial last step, is shared and returns into its copy.
        isetp.lt p3, r21, r3
   @p3  bra     kshort                  ; uniform: k < BX
   @p2  bra     kstep4                  ; uniform: BX == 4
   @p6  bra     kstep8                  ; uniform: BX == 8

kstep16:  ; ---- 1. cooperative tile load; a whole K step needs no K bounds ----
   @p0  ldg     r23, [r10]              ; A[row][k0 + tx]
   @p5  ldg     r28, [r12]              ; B[k0 + ty][col]
   @p0  sts     [r17], r23              ; As[ty][tx]
   @p5  sts     [r19], r28              ; Bt[tx][ty]
        isetp.lt p3, r13, r11
   @p3  bra     bmore16                 ; uniform: BY < BX, more B rows to copy
loaded16:
        bar                             ; ---- 2. the tiles are complete ----
        ; ---- 3. acc += As[ty][j] * Bt[tx][j] for j = 0 .. BX-1, unrolled completely
        ;      (constant offsets from sa = r16 and sb = r18, no loop counter).
        ;      Software-pipelined: the operands of terms j + 4 .. j + 7 are loaded between
        ;      the fmas of terms j .. j + 3, so that dependent fmas of a warp (acc is one
        ;      chain) are 3 instructions apart and every load is 8 ahead of its use. ----
        lds     r22, [r16]
        lds     r24, [r18]
        lds     r25, [r16+4]
        lds     r26, [r18+4]
        lds     r27, [r16+8]
        lds     r29, [r18+8]
        lds     r30, [r16+12]
        lds     r31, [r18+12]
        ffma    r20, r22, r24, r20      ; j = 0
        lds     r1, [r16+16]
        lds     r2, [r18+16]
        ffma    r20, r25, r26, r20      ; j = 1
        lds     r4, [r16+20]
        lds     r6, [r18+20]
        ffma    r20, r27, r29, r20      ; j = 2
        lds     r7, [r16+24]
        lds     r8, [r18+24]
        ffma    r20, r30, r31, r20      ; j = 3
        lds     r23, [r16+28]
        lds     r28, [r18+28]
        ffma    r20, r1, r2, r20        ; j = 4
        lds     r22, [r16+32]
        lds     r24, [r18+32]
        ffma    r20, r4, r6, r20        ; j = 5
        lds     r25, [r16+36]
        lds     r26, [r18+36]
        ffma    r20, r7, r8, r20        ; j = 6
        lds     r27, [r16+40]
        lds     r29, [r18+40]
        ffma    r20, r23, r28, r20      ; j = 7
        lds     r30, [r16+44]
        lds     r31, [r18+44]
        ffma    r20, r22, r24, r20      ; j = 8
        lds     r1, [r16+48]
        lds     r2, [r18+48]
        ffma    r20, r25, r26, r20      ; j = 9
        lds     r4, [r16+52]
        lds     r6, [r18+52]
        ffma    r20, r27, r29, r20      ; j = 10
        lds     r7, [r16+56]
        lds     r8, [r18+56]
        ffma    r20, r30, r31, r20      ; j = 11
        lds     r23, [r16+60]
        lds     r28, [r18+60]
        ffma    r20, r1, r2, r20        ; j = 12
        ffma    r20, r4, r6, r20        ; j = 13
        ffma    r20, r7, r8, r20        ; j = 14
        ffma    r20, r23, r28, r20      ; j = 15
        bar                             ; ---- 4. done reading the tiles ----
        add     r10, r10, r11           ; pa: next BX columns of A
        add     r12, r12, r14           ; pb: next BX rows of B
        sub     r21, r21, r3            ; rem -= BX
        isetp.ge p3, r21, r3
   @p3  bra     kstep16                 ; uniform: another whole step
        isetp.gt p3, r21, r0
   @p3  bra     ktail                   ; uniform: a partial step is left

store:
        pand    p0, p0, p1              ; this thread owns C[row][col]
   @p0  stg     [r5], r20
        exit

bmore16:  ; ---- 1 (continued). B rows t = ty + BY, ty + 2*BY, ... < BX ----
        add     r24, r12, r15           ; &B[k0 + t][col]
        add     r25, r19, r13           ; &Bt[tx][t]
bcopy16:
   @p5  ldg     r28, [r24]
   @p5  sts     [r25], r28              ; Bt[tx][t] = B[k0 + t][col]
        add     r24, r24, r15
        add     r25, r25, r13
        isetp.le p3, r25, r9
   @p3  bra     bcopy16                 ; uniform: t - ty is the same in every thread
        bra     loaded16                ; uniform

kstep8:  ; ---- BX = 8: as kstep16 ----
   @p0  ldg     r23, [r10]
   @p5  ldg     r28, [r12]
   @p0  sts     [r17], r23
   @p5  sts     [r19], r28
        isetp.lt p3, r13, r11
   @p3  bra     bmore8                  ; uniform
loaded8:
        bar
        lds     r22, [r16]
        lds     r24, [r18]
        lds     r25, [r16+4]
        lds     r26, [r18+4]
        lds     r27, [r16+8]
        lds     r29, [r18+8]
        lds     r30, [r16+12]
        lds     r31, [r18+12]
        ffma    r20, r22, r24, r20      ; j = 0
        lds     r1, [r16+16]
        lds     r2, [r18+16]
        ffma    r20, r25, r26, r20      ; j = 1
        lds     r4, [r16+20]
        lds     r6, [r18+20]
        ffma    r20, r27, r29, r20      ; j = 2
        lds     r7, [r16+24]
        lds     r8, [r18+24]
        ffma    r20, r30, r31, r20      ; j = 3
        lds     r23, [r16+28]
        lds     r28, [r18+28]
        ffma    r20, r1, r2, r20        ; j = 4
        ffma    r20, r4, r6, r20        ; j = 5
        ffma    r20, r7, r8, r20        ; j = 6
        ffma    r20, r23, r28, r20      ; j = 7
        bar
        add     r10, r10, r11
        add     r12, r12, r14
        sub     r21, r21, r3
        isetp.ge p3, r21, r3
   @p3  bra     kstep8                  ; uniform: another whole step
        isetp.gt p3, r21, r0
   @p3  bra     ktail                   ; uniform: a partial step is left
        bra     store                   ; uniform

bmore8:
        add     r24, r12, r15
        add     r25, r19, r13
bcopy8:
   @p5  ldg     r28, [r24]
   @p5  sts     [r25], r28
        add     r24, r24, r15
        add     r25, r25, r13
        isetp.le p3, r25, r9
   @p3  bra     bcopy8                  ; uniform
        bra     loaded8                 ; uniform

kstep4:  ; ---- BX = 4: as kstep16 ----
   @p0  ldg     r23, [r10]
   @p5  ldg     r28, [r12]
   @p0  sts     [r17], r23
   @p5  sts     [r19], r28
        isetp.lt p3, r13, r11
   @p3  bra     bmore4                  ; uniform
loaded4:
        bar
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
        bar
        add     r10, r10, r11
        add     r12, r12, r14
        sub     r21, r21, r3
        isetp.ge p3, r21, r3
   @p3  bra     kstep4                  ; uniform: another whole step
        isetp.gt p3, r21, r0
   @p3  bra     ktail                   ; uniform: a partial step is left
        bra     store                   ; uniform

bmore4:
        add     r24, r12, r15
        add     r25, r19, r13
bcopy4:
   @p5  ldg     r28, [r24]
   @p5  sts     [r25], r28
        add     r24, r24, r15
        add     r25, r25, r13
        isetp.le p3, r25, r9
   @p3  bra     bcopy4                  ; uniform
        bra     loaded4                 ; uniform

kshort:
        isetp.gt p3, r21, r0
   @p3  bra     ktail                   ; uniform: 0 < k < BX
        bra     store                   ; k <= 0: C = 0

ktail:  ; ---- 1'. the last step, K bounds checked: k0 + j < k is j < rem ----
        s2r     r1, tid.x               ; (the inner product used r1, r2, r4)
        s2r     r2, tid.y
        s2r     r4, ntid.y
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
        isetp.le p3, r25, r9
   @p3  bra     btail                   ; uniform, as bcopy16
   @p2  bra     loaded4                 ; uniform: back into the K loop of this BX
   @p6  bra     loaded8
        bra     loaded16
        .end
