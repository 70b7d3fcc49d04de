; hgemm_mma(a ptr, bt ptr, c ptr, m i32, n i32, k i32)
;
;   C[m, n] = A[m, k] @ B[k, n]   (fp16 inputs, f32 C), on the matrix unit (mma.f16).
;
; A is row-major fp16; B comes transposed, bt[n, k] row-major fp16 (PTX's ".row.col"): the
; two halves of every A and B fragment register are then adjacent in memory, so each
; register is one 32-bit ldg. C is row-major f32, written, not read (C = A @ B).
;
; The shape of one mma at warp width W is isa/mma.py's: T threads per group (the smallest
; power of two with 2 T^2 >= W), G = W / T groups, tile m = 2G, n = 2T, k = 4T; the kernel
; derives T, G from warpsize, so one binary serves tiny (W 4: m4n4k8), small (W 8: m8n4k8)
; and full (W 32: m16n8k16). Lane (g, t) = (laneid / T, laneid % T).
;
; Launch: blocks of whole warps, B_W warps each; grid = (n / (2n * B_W), m / m_tile).
; Warp w of block (x, y) computes the m x 2n strip of C at rows y * m, columns
; (x * B_W + w) * 2n: two mma tiles side by side that share the A fragment. Requirements
; (the caller checks them): m a multiple of 2G, n of 4T * B_W, k of 4T and k > 0.
;
; Per k step (4T halves of K) a warp loads A (4 registers) and two B fragments (2 or 4
; registers each: 4 T^2 / W), then issues two mma into the accumulators D0 = r16..r19 and
; D1 = r20..r23, which start at +0.0. Accumulation order, reproduced by NumPy in
; tests/driver/test_hgemm_mma.py: D = numerics.mma("f16", A[:, kk:kk+k], B[kk:kk+k, :], D)
; for kk = 0, k, 2k, ... (each mma: exact products, a pairwise FP32 tree, + D).
;
; Registers: r4..r7 A, r8..r11 B0, r12..r15 B1, r16..r23 D0, D1; r24 &A[row][kk + 2t],
; r25 the same G rows down, r26 &bt[col0 + g][kk + 2t], r28 4T (bytes of 2T halves; also
; k halves per step), r29 2GK (bytes of G rows of A or bt), r31 4TK (bytes of 2T rows of
; bt: the second tile), r30 4GN (bytes of G rows of C), r1 K left, r2 8T (bytes per k
; step), r3 &C[row][col0 + 2t], r27 scratch. p0: B has 4 registers (T^2 = W).

        .kernel hgemm_mma
        .param  a, ptr
        .param  bt, ptr
        .param  c, ptr
        .param  m, i32
        .param  n, i32
        .param  k, i32

        ; ---- the mma shape: T (r2), log2 T (r3), G (r4) ----
        s2r     r1, warpsize
        movi    r2, 1
        movi    r3, 0
tloop:
        mul     r27, r2, r2
        shli    r27, r27, 1             ; 2 T^2
        isetp.ge p1, r27, r1
   @p1  bra     tdone                   ; uniform
        shli    r2, r2, 1
        addi    r3, r3, 1
        bra     tloop                   ; uniform
tdone:
        mul     r27, r2, r2
        isetp.eq p0, r27, r1            ; p0: 4 B registers
        shr     r4, r1, r3              ; G
        s2r     r5, laneid
        shr     r6, r5, r3              ; g
        addi    r7, r2, -1
        and     r7, r5, r7              ; t
        shli    r7, r7, 1               ; 2t
        shli    r28, r2, 2              ; 4T
        shli    r2, r2, 3               ; 8T

        ; ---- the warp's strip: row = y * 2G + g, col0 = (x * B_W + w) * 4T ----
        s2r     r8, ctaid.y
        shli    r9, r4, 1
        mul     r8, r8, r9
        add     r8, r8, r6              ; row
        s2r     r9, ctaid.x
        s2r     r10, nwarps
        mul     r9, r9, r10
        s2r     r10, warpid
        add     r9, r9, r10
        mul     r9, r9, r28             ; col0
        ldparam r1, k
        ldparam r12, n

        ; ---- pointers ----
        mul     r13, r8, r1             ; row * K
        add     r13, r13, r7            ; + 2t
        shli    r13, r13, 1
        ldparam r24, a
        add     r24, r24, r13           ; &A[row][2t]
        mul     r29, r4, r1
        shli    r29, r29, 1             ; 2GK
        add     r25, r24, r29           ; &A[row + G][2t]
        add     r13, r9, r6             ; col0 + g
        mul     r13, r13, r1
        add     r13, r13, r7
        shli    r13, r13, 1
        ldparam r26, bt
        add     r26, r26, r13           ; &bt[col0 + g][2t]
        mul     r31, r28, r1            ; 4TK
        mul     r13, r8, r12            ; row * N
        add     r13, r13, r9            ; + col0
        add     r13, r13, r7            ; + 2t
        shli    r13, r13, 2
        ldparam r3, c
        add     r3, r3, r13             ; &C[row][col0 + 2t]
        mul     r30, r4, r12
        shli    r30, r30, 2             ; 4GN

        movi    r16, 0                  ; D0 = D1 = +0.0
        movi    r17, 0
        movi    r18, 0
        movi    r19, 0
        movi    r20, 0
        movi    r21, 0
        movi    r22, 0
        movi    r23, 0
        isetp.le p1, r1, r0
   @p1  bra     store                   ; uniform: K = 0

kstep:  ; ---- fragments of this k step ----
        ldg     r4, [r24]               ; A reg 0: rows g,     cols 2t, 2t+1
        ldg     r5, [r25]               ; A reg 1: rows g + G
        add     r27, r24, r28
        ldg     r6, [r27]               ; A reg 2: cols + 2T
        add     r27, r25, r28
        ldg     r7, [r27]               ; A reg 3
        ldg     r8, [r26]               ; B0 reg 0: k rows 2t, 2t+1, col g
        add     r27, r26, r28
        ldg     r9, [r27]               ; B0 reg 1: k rows + 2T
        add     r27, r26, r31
        ldg     r12, [r27]              ; B1 reg 0: columns + 2T
        add     r27, r27, r28
        ldg     r13, [r27]              ; B1 reg 1
   @p0  bra     bfour                   ; uniform: B regs 2, 3 (columns g + G)
bdone:
        mma.f16 r16, r4, r8, r16
        mma.f16 r20, r4, r12, r20
        add     r24, r24, r2
        add     r25, r25, r2
        add     r26, r26, r2
        sub     r1, r1, r28             ; K left -= 4T
        isetp.gt p1, r1, r0
   @p1  bra     kstep                   ; uniform

store:  ; ---- D reg r: C[row + G * (r / 2)][col0 + 2t + r % 2]; D1 2T columns on ----
        stg     [r3], r16
        stg     [r3+4], r17
        add     r27, r3, r30
        stg     [r27], r18
        stg     [r27+4], r19
        add     r3, r3, r2
        stg     [r3], r20
        stg     [r3+4], r21
        add     r27, r3, r30
        stg     [r27], r22
        stg     [r27+4], r23
        exit

bfour:
        add     r27, r26, r29
        ldg     r10, [r27]              ; B0 reg 2: columns g + G
        add     r27, r27, r28
        ldg     r11, [r27]              ; B0 reg 3
        add     r27, r26, r31
        add     r27, r27, r29
        ldg     r14, [r27]              ; B1 reg 2
        add     r27, r27, r28
        ldg     r15, [r27]              ; B1 reg 3
        bra     bdone                   ; uniform
        .end
