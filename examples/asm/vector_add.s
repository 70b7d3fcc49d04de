; vector_add(a ptr, b ptr, c ptr, n i32)
;
;   c[i] = a[i] + b[i]   (f32) for every i < n
;
; Launch: 1-D grid of 1-D blocks of any size; grid = ceil(n / block size).
; Teaches: the global thread id (ctaid.x * ntid.x + tid.x), reading kernel parameters,
; and a bounds check by predication: threads past the end run the same instructions
; with a false guard, so the loads and the store make no memory access, and no branch
; (hence no divergence) is needed.

        .kernel vector_add
        .param  a, ptr
        .param  b, ptr
        .param  c, ptr
        .param  n, i32

        s2r     r1, ctaid.x
        s2r     r2, ntid.x
        s2r     r3, tid.x
        mul     r1, r1, r2              ; block start = ctaid.x * ntid.x
        add     r1, r1, r3              ; i = block start + tid.x
        ldparam r4, n
        isetp.lt p0, r1, r4             ; p0: this thread has an element (i < n)

        shli    r5, r1, 2               ; byte offset of element i
        ldparam r6, a
        ldparam r7, b
        ldparam r8, c
        add     r6, r6, r5              ; &a[i]
        add     r7, r7, r5              ; &b[i]
        add     r8, r8, r5              ; &c[i]

   @p0  ldg     r9, [r6]                ; masked loads: no access where p0 is false
   @p0  ldg     r10, [r7]
   @p0  fadd    r9, r9, r10
   @p0  stg     [r8], r9
        exit
        .end
