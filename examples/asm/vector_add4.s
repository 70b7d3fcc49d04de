; vector_add4(a ptr, b ptr, c ptr, n i32)
;
;   c[i] = a[i] + b[i]   (f32) for every i < n: a grid-stride loop, four elements per thread
;   per trip
;
; Launch: 1-D, any number of threads T (ctaid.x * ntid.x + tid.x = g) that is a multiple of
; 32; each trip of the loop, every 32 consecutive threads cover a chunk of 128 elements, and
; the grid moves on by 4 T elements. Launch as many threads as the GPU holds at once (every
; warp slot of every core) and no more than 32 * ceil(n / 128):
; simtgpu.verification.bench_rtl.vector_add4_launch computes it.
; Teaches: memory-level parallelism. In a trip thread g handles elements e + 32 j
; (j = 0..3), e = (g / 32) * 128 + g % 32 plus the trips done: for each j a warp's lanes read
; consecutive words (one line per warp access whatever the warp size, since it is at most
; 32) and the four offsets are immediates (128 j bytes), so the eight loads issue back to
; back and are in flight together before the first add waits for its operands. The warps
; stay resident for the whole launch: the parameter reads and the wait for the last
; stores' acknowledgements are paid once, not once per element group. The trip count is
; the same in every thread (a uniform counter), so the loop branch never diverges; elements
; past n are guarded off by predication. The plain vector_add.s has two loads in flight per
; thread and spends 19 instructions per element; this one spends 6.5 per element in the
; loop (26 per trip), and on a bandwidth-bound memory both matter (docs/memory-system.md).

        .kernel vector_add4
        .param  a, ptr
        .param  b, ptr
        .param  c, ptr
        .param  n, i32

        ldparam r4, n                   ; the parameters first: their reads overlap the
        ldparam r6, a                   ; index arithmetic below
        ldparam r7, b
        ldparam r8, c
        s2r     r1, ctaid.x
        s2r     r2, ntid.x
        s2r     r3, nctaid.x
        mul     r9, r2, r3              ; T, threads in the grid
        shli    r9, r9, 4               ; S = 16 T: the bytes of 4 T elements, one trip
        s2r     r3, tid.x
        mul     r1, r1, r2
        add     r1, r1, r3              ; g
        andi    r2, r1, -32
        shli    r2, r2, 4               ; (g / 32) * 128 elements, in bytes
        andi    r3, r1, 31
        shli    r3, r3, 2               ; (g % 32) words, in bytes
        add     r5, r2, r3              ; byte offset of element e in the first trip

        shli    r4, r4, 2               ; n, in bytes
        add     r19, r6, r4             ; &a[n]: element e + 32 j exists while
        addi    r20, r19, -128          ;   &a[e] < &a[n] - 128 j
        addi    r21, r19, -256
        addi    r22, r19, -384
        add     r6, r6, r5              ; &a[e]
        add     r7, r7, r5              ; &b[e]
        add     r8, r8, r5              ; &c[e]
        movi    r23, 0                  ; bytes of the trips done (the same in every thread)

loop:
        isetp.lt p0, r6, r19            ; p_j: element e + 32 j exists
        isetp.lt p1, r6, r20
        isetp.lt p2, r6, r21
        isetp.lt p3, r6, r22
   @p0  ldg     r10, [r6]               ; all eight loads before any use
   @p0  ldg     r11, [r7]
   @p1  ldg     r12, [r6+128]
   @p1  ldg     r13, [r7+128]
   @p2  ldg     r14, [r6+256]
   @p2  ldg     r15, [r7+256]
   @p3  ldg     r16, [r6+384]
   @p3  ldg     r17, [r7+384]
        add     r6, r6, r9              ; next trip's pointers, while the loads fly
        add     r7, r7, r9
        add     r23, r23, r9
        isetp.lt p4, r23, r4            ; another trip?
   @p0  fadd    r10, r10, r11
   @p0  stg     [r8], r10
   @p1  fadd    r12, r12, r13
   @p1  stg     [r8+128], r12
   @p2  fadd    r14, r14, r15
   @p2  stg     [r8+256], r14
   @p3  fadd    r16, r16, r17
   @p3  stg     [r8+384], r16
        add     r8, r8, r9
   @p4  bra     loop                    ; uniform: r23 is the same in every thread
        exit
        .end
