; vector_add4(a ptr, b ptr, c ptr, n i32)
;
;   c[i] = a[i] + b[i]   (f32) for every i < n, four elements per thread
;
; Launch: 1-D; every 32 consecutive threads (by global id g = ctaid.x * ntid.x + tid.x) cover
; a chunk of 128 elements, so launch at least ceil(n / 128) * 32 threads, in all a multiple of
; 32: power-of-two blocks, grid = ceil(ceil(n / 128) * 32 / block)
; (simtgpu.verification.bench_rtl.vector_add4_launch).
; Teaches: memory-level parallelism. Thread g handles elements e + 32 j (j = 0..3), with
; e = (g / 32) * 128 + g % 32: for each j a warp's lanes read consecutive words (one line per
; warp access whatever the warp size, since it is at most 32), and the four offsets are
; immediates (128 j bytes), so the eight loads are issued back to back and are all in
; flight at once before the first add waits for its operands. The plain vector_add.s has
; two loads in flight per thread and spends 19 instructions per element, this one 10.5 (42
; per thread); on a bandwidth-bound memory both matter (docs/memory-system.md).

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
        s2r     r3, tid.x
        mul     r1, r1, r2
        add     r1, r1, r3              ; g
        andi    r2, r1, -32
        shli    r2, r2, 4               ; (g / 32) * 128 elements, in bytes
        andi    r3, r1, 31
        shli    r3, r3, 2               ; (g % 32) words, in bytes
        add     r5, r2, r3              ; byte offset of element e (j = 0)

        shli    r4, r4, 2               ; n, in bytes
        isetp.lt p0, r5, r4             ; p_j: element e + 32 j exists
        addi    r9, r4, -128
        isetp.lt p1, r5, r9
        addi    r9, r4, -256
        isetp.lt p2, r5, r9
        addi    r9, r4, -384
        isetp.lt p3, r5, r9
        add     r6, r6, r5              ; &a[e]
        add     r7, r7, r5              ; &b[e]
        add     r8, r8, r5              ; &c[e]

   @p0  ldg     r10, [r6]               ; all eight loads before any use
   @p0  ldg     r11, [r7]
   @p1  ldg     r12, [r6+128]
   @p1  ldg     r13, [r7+128]
   @p2  ldg     r14, [r6+256]
   @p2  ldg     r15, [r7+256]
   @p3  ldg     r16, [r6+384]
   @p3  ldg     r17, [r7+384]
   @p0  fadd    r10, r10, r11
   @p0  stg     [r8], r10
   @p1  fadd    r12, r12, r13
   @p1  stg     [r8+128], r12
   @p2  fadd    r14, r14, r15
   @p2  stg     [r8+256], r14
   @p3  fadd    r16, r16, r17
   @p3  stg     [r8+384], r16
        exit
        .end
