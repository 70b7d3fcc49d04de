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
;      k0 + j >= k. Rows >= m of A and columns >= n of B are never loaded (predicated ldg);
;      their shared words (0.0 or stale) feed only elements of C that are not stored;
;   2. bar;
;   3. acc = fma(As[ty][j], Bt[tx][j], acc) for j = 0 .. BX-1, unrolled completely and
;      software-pipelined (the loads of the next 4 terms sit between the fmas of these 4);
;   4. bar (no warp overwrites the tiles while another still reads them).
; Finally thread (tx, ty) stores acc to C[row][col] if row < m and col < n.
; The K loop is written out once per BX (16, 8, 4) and chosen once at entry, so no step
; pays for the run-time tile shape.
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
; Registers: r20 acc; r10/r12/r3 global pointers (A, B row ty, B row ty + BY); r16/r18
; shared bases of the inner product; r17/r19/r9 shared store addresses; r11 4*BX,
; r13 4*BY, r14 4*n*BX, r15 4*n*BY; r21 what is left of K (bytes); r5 &C[row][col];
; the 16 others hold the operands of the inner product (two sets of 4 terms).
; Predicates: p0 row < m, p1 col < n, p5/p4 copy B row ty / ty + BY, p2 more B rows
; (bmore), p3 scratch.
;
; Cost of one whole K step per thread, in instructions (steady state, counted on the ISS):
;   full  16x16: 60 for 16 ffma (27%): 48 inner (32 lds + 16 ffma), 4 tile load (2 ldg,
;                2 sts), the "more B rows?" branch, 2 bar, 5 K-loop;
;   small  8x4:  39 for 8 ffma (21%): 24 inner, 6 tile load (two B rows per thread), 1, 2, 6;
;   tiny   4x2:  27 for 4 ffma (15%).
; Setup and the final store add about 70 per thread. matmul.s spends 8 per ffma (2 ldg,
; ffma, 2 pointer steps, counter, compare, branch).
;
; Measured on the ISS, m = n = k, uniform(-1, 1) inputs, the launch of examples/sgemm.py
; (--stats) and of examples/matmul.py on the same configuration; per element of C:
; warp-instructions, thread-instructions (no divergence: warp-instructions x warp size),
; global loads (lane accesses); ffma as a share of executed warp-instructions:
;
;   config size  kernel       tile   warp-instr  thread-instr  ldg/elem  ffma
;   tiny    64   sgemm_tiled  4x2      125.0        500.0        48.0    12.8%
;   tiny    64   matmul.s     4x2      136.8        547.0       128.0    11.7%
;   small   64   sgemm_tiled  8x4       47.9        383.0        24.0    16.7%
;   small   64   matmul.s     8x4       68.4        547.0       128.0    11.7%
;   small  256   sgemm_tiled  8x4      164.9       1319.0        96.0    19.4%
;   small  256   matmul.s     8x4      260.4       2083.0       512.0    12.3%
;   full    64   sgemm_tiled  16x16      9.7        309.0         8.0    20.7%
;   full    64   matmul.s     32x8      17.1        547.0       128.0    11.7%
;   full   128   sgemm_tiled  16x16     17.2        549.0        16.0    23.3%
;   full   128   matmul.s     32x8      33.1       1059.0       256.0    12.1%
;   full   256   sgemm_tiled  16x16     32.2       1029.0        32.0    24.9%
;   full   256   matmul.s     32x8      65.1       2083.0       512.0    12.3%
;
; One output per thread bounds the ffma share at 1/3 (two lds per ffma); more would need
; several outputs per thread (register blocking).

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
        ldparam r21, k
        isetp.lt p0, r5, r7             ; p0: row < m
        isetp.lt p1, r6, r8             ; p1: col < n
        isetp.lt p5, r2, r3
        pand    p5, p5, p1              ; p5: col < n, ty < BX: copy B row ty of each step
        add     r7, r2, r4
        isetp.lt p4, r7, r3
        pand    p4, p4, p1              ; p4: col < n, ty + BY < BX: ... and B row ty + BY

        ; ---- global pointers ----
        ldparam r10, a
        mul     r11, r5, r21            ; row * k
        add     r11, r11, r1            ; + tx
        shli    r11, r11, 2
        add     r10, r10, r11           ; pa = &A[row][k0 + tx]        (steps 4*BX)
        shli    r21, r21, 2             ; rem = 4 * (k - k0): what is left of K, in bytes
        shli    r11, r3, 2              ; 4*BX
        ldparam r12, b
        mul     r13, r2, r8             ; ty * n
        add     r13, r13, r6            ; + col
        shli    r13, r13, 2
        add     r12, r12, r13           ; pb = &B[k0 + ty][col]        (steps BX rows)
        shli    r15, r8, 2              ; 4*n: one row of B
        mul     r14, r15, r3            ; 4*n*BX: pb's step
        mul     r15, r15, r4            ; 4*n*BY: between a thread's B rows in one step
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
        shli    r13, r4, 2              ; 4*BY: Bt step between a thread's B rows
        add     r9, r19, r13            ; &Bt[tx][ty + BY]
        add     r3, r12, r15            ; pb2 = &B[k0 + ty + BY][col]  (steps BX rows)
        movi    r20, 0                  ; acc = +0.0

        ; The K loop exists three times, one copy per BX (chosen here, once): the copies
        ; differ in the length of the unrolled inner product and in copying B rows ty and
        ; ty + BY inline (8 and 4, whose default tiles have BY = BX / 2). ktail, the
        ; partial last step, is shared and returns into its copy.
        isetp.lt p3, r21, r11
   @p3  bra     kshort                  ; uniform: k < BX
        movi    r6, 16
        isetp.eq p3, r11, r6
   @p3  bra     entry4                  ; uniform: BX == 4
        movi    r6, 32
        isetp.eq p3, r11, r6
   @p3  bra     entry8                  ; uniform: BX == 8

entry16:                                ; BX == 16; p2: BY < BX, rows past ty (bmore16)
        isetp.lt p2, r13, r11
kstep16:  ; ---- 1. cooperative tile load; whole K steps need no K bounds ----
   @p0  ldg     r23, [r10]              ; A[row][k0 + tx]
   @p5  ldg     r28, [r12]              ; B[k0 + ty][col]
   @p0  sts     [r17], r23              ; As[ty][tx]
   @p5  sts     [r19], r28              ; Bt[tx][ty]
   @p2  bra     bmore16                 ; uniform: more B rows to copy
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
        sub     r21, r21, r11           ; rem -= BX
        isetp.ge p3, r21, r11
   @p3  bra     kstep16                 ; uniform: another whole step
        isetp.gt p3, r21, r0
   @p3  bra     ktail                   ; uniform: a partial step is left

store:
        pand    p0, p0, p1              ; this thread owns C[row][col]
   @p0  stg     [r5], r20
        exit

bmore16:                                ; ---- 1 (continued). further B rows t, up to BX - BY ----
        sub     r26, r11, r13
        add     r26, r19, r26           ; &Bt[tx][ty + BX - BY]: the last copy
        add     r24, r12, r15           ; &B[k0 + t][col], t = ty + BY
        add     r25, r19, r13           ; &Bt[tx][t]
bcopy16:
   @p5  ldg     r28, [r24]
   @p5  sts     [r25], r28              ; Bt[tx][t] = B[k0 + t][col]
        add     r24, r24, r15
        add     r25, r25, r13
        isetp.le p3, r25, r26
   @p3  bra     bcopy16                 ; uniform: t - ty is the same in every thread
        bra     loaded16                ; uniform

entry8:                                 ; BX == 8; p2: 2*BY < BX, rows past ty + BY
        shli    r6, r13, 1
        isetp.lt p2, r6, r11
kstep8:                                 ; ---- as kstep16, and B row ty + BY inline ----
   @p0  ldg     r23, [r10]
   @p5  ldg     r28, [r12]
   @p4  ldg     r22, [r3]               ; B[k0 + ty + BY][col]
   @p0  sts     [r17], r23
   @p5  sts     [r19], r28
   @p4  sts     [r9], r22               ; Bt[tx][ty + BY]
   @p2  bra     bmore8                  ; uniform: more B rows to copy
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
        add     r3, r3, r14
        sub     r21, r21, r11
        isetp.ge p3, r21, r11
   @p3  bra     kstep8                  ; uniform: another whole step
        isetp.gt p3, r21, r0
   @p3  bra     ktail                   ; uniform: a partial step is left
        bra     store                   ; uniform

bmore8:
        sub     r26, r11, r13
        add     r26, r19, r26
        add     r24, r3, r15            ; t = ty + 2*BY
        add     r25, r9, r13
bcopy8:
   @p5  ldg     r28, [r24]
   @p5  sts     [r25], r28
        add     r24, r24, r15
        add     r25, r25, r13
        isetp.le p3, r25, r26
   @p3  bra     bcopy8                  ; uniform
        bra     loaded8                 ; uniform

entry4:                                 ; BX == 4; p2: 2*BY < BX, rows past ty + BY
        shli    r6, r13, 1
        isetp.lt p2, r6, r11
kstep4:                                 ; ---- as kstep16, and B row ty + BY inline ----
   @p0  ldg     r23, [r10]
   @p5  ldg     r28, [r12]
   @p4  ldg     r22, [r3]               ; B[k0 + ty + BY][col]
   @p0  sts     [r17], r23
   @p5  sts     [r19], r28
   @p4  sts     [r9], r22               ; Bt[tx][ty + BY]
   @p2  bra     bmore4                  ; uniform: more B rows to copy
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
        add     r3, r3, r14
        sub     r21, r21, r11
        isetp.ge p3, r21, r11
   @p3  bra     kstep4                  ; uniform: another whole step
        isetp.gt p3, r21, r0
   @p3  bra     ktail                   ; uniform: a partial step is left
        bra     store                   ; uniform

bmore4:
        sub     r26, r11, r13
        add     r26, r19, r26
        add     r24, r3, r15            ; t = ty + 2*BY
        add     r25, r9, r13
bcopy4:
   @p5  ldg     r28, [r24]
   @p5  sts     [r25], r28
        add     r24, r24, r15
        add     r25, r25, r13
        isetp.le p3, r25, r26
   @p3  bra     bcopy4                  ; uniform
        bra     loaded4                 ; uniform

kshort:
        isetp.gt p3, r21, r0
   @p3  bra     ktail                   ; uniform: 0 < k < BX
        bra     store                   ; k <= 0: C = 0

ktail:  ; ---- 1'. the last step, K bounds checked: k0 + j < k is 4*j < rem ----
        s2r     r1, tid.x               ; (the inner product used r1, r2)
        s2r     r2, tid.y
        shli    r1, r1, 2
        isetp.lt p3, r1, r21
        pand    p3, p3, p0              ; A[row][k0 + tx] exists
        movi    r26, 0
   @p3  ldg     r26, [r10]
        sts     [r17], r26              ; As[ty][tx] (0.0 past k)
        shli    r27, r2, 2              ; 4*t, t = ty
        sub     r22, r11, r13
        add     r22, r19, r22           ; &Bt[tx][ty + BX - BY]: the last copy
        mov     r24, r12
        mov     r25, r19
btail:
        isetp.lt p3, r27, r21
        pand    p3, p3, p5              ; B[k0 + t][col] exists
        movi    r26, 0
   @p3  ldg     r26, [r24]
   @p5  sts     [r25], r26              ; Bt[tx][t] (0.0 past k)
        add     r27, r27, r13           ; t += BY
        add     r24, r24, r15
        add     r25, r25, r13
        isetp.le p3, r25, r22
   @p3  bra     btail                   ; uniform, as bcopy16
        movi    r26, 16                 ; back into the K loop of this BX
        isetp.eq p3, r11, r26
   @p3  bra     loaded4                 ; uniform
        movi    r26, 32
        isetp.eq p3, r11, r26
   @p3  bra     loaded8                 ; uniform
        bra     loaded16                ; uniform
        .end
