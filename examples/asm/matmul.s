; matmul(a ptr, b ptr, c ptr, m i32, n i32, k i32)
;
;   C[m, n] = A[m, k] @ B[k, n]   (f32, row-major, C[r][c] accumulated as
;   acc = fma(A[r][j], B[j][c], acc) for j = 0, 1, ..., k-1, starting from acc = 0.0)
;
; Launch: 2-D grid of 2-D blocks, one thread per element of C:
;   row = ctaid.y * ntid.y + tid.y,  col = ctaid.x * ntid.x + tid.x,
;   grid = (ceil(n / ntid.x), ceil(m / ntid.y)).
;
; Teaches: 2-D thread indexing, pointer arithmetic for row-major arrays, and a loop over
; k. The trip count k is the same in every thread, so the loop branch never diverges;
; threads outside C (row >= m or col >= n) run the loop with a false guard on the
; loads and the store (the bounds check is predication, not a branch).

        .kernel matmul
        .param  a, ptr
        .param  b, ptr
        .param  c, ptr
        .param  m, i32
        .param  n, i32
        .param  k, i32

        s2r     r1, ctaid.y
        s2r     r2, ntid.y
        s2r     r3, tid.y
        mul     r1, r1, r2
        add     r1, r1, r3              ; row
        s2r     r4, ctaid.x
        s2r     r5, ntid.x
        s2r     r6, tid.x
        mul     r4, r4, r5
        add     r4, r4, r6              ; col

        ldparam r7, m
        ldparam r8, n
        ldparam r9, k
        isetp.lt p0, r1, r7             ; row < m
        isetp.lt p1, r4, r8             ; col < n
        pand    p0, p0, p1              ; p0: this thread owns C[row][col]

        ldparam r10, a
        mul     r11, r1, r9             ; row * k
        shli    r11, r11, 2
        add     r10, r10, r11           ; pa = &A[row][0]
        ldparam r12, b
        shli    r13, r4, 2
        add     r12, r12, r13           ; pb = &B[0][col]
        shli    r14, r8, 2              ; stride of B between rows: 4 * n bytes

        movi    r15, 0                  ; acc = 0.0
        movi    r16, 0                  ; j = 0
        isetp.le p2, r9, r0
   @p2  bra     store                   ; k <= 0: C = 0 (uniform: k is a parameter)
loop:
   @p0  ldg     r17, [r10]              ; A[row][j]
   @p0  ldg     r18, [r12]              ; B[j][col]
   @p0  ffma    r15, r17, r18, r15      ; acc += A[row][j] * B[j][col], one rounding
        addi    r10, r10, 4             ; next column of A
        add     r12, r12, r14           ; next row of B
        addi    r16, r16, 1
        isetp.lt p3, r16, r9
   @p3  bra     loop                    ; uniform: every thread has the same k
store:
        ldparam r19, c
        mul     r20, r1, r8             ; row * n
        add     r20, r20, r4            ; + col
        shli    r20, r20, 2
        add     r19, r19, r20           ; &C[row][col]
   @p0  stg     [r19], r15
        exit
        .end
