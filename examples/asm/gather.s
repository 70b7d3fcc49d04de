; gather(src ptr, idx ptr, out ptr, n i32)
;
;   out[i] = src[idx[i]]   (32-bit words) for every i < n
;
; Launch: 1-D grid of 1-D blocks of any size; grid = ceil(n / block size).
; Teaches: an indirect (data-dependent) load. The loads of idx and the store of out are
; coalesced, but the lanes of one warp read src at unrelated addresses, so with random
; indices that load costs one memory transaction per lane, and the warp waits a full
; memory latency for the index before it can even issue it (the latency benchmark of
; docs/memory-system.md).

        .kernel gather
        .param  src, ptr
        .param  idx, ptr
        .param  out, ptr
        .param  n, i32

        s2r     r1, ctaid.x
        s2r     r2, ntid.x
        s2r     r3, tid.x
        mul     r1, r1, r2
        add     r1, r1, r3              ; i
        ldparam r4, n
        isetp.lt p0, r1, r4             ; p0: this thread has an element (i < n)

        shli    r5, r1, 2               ; byte offset of element i
        ldparam r6, idx
        ldparam r7, out
        add     r6, r6, r5              ; &idx[i]
        add     r7, r7, r5              ; &out[i]
   @p0  ldg     r8, [r6]                ; j = idx[i]
        ldparam r9, src
   @p0  shli    r8, r8, 2
   @p0  add     r9, r9, r8              ; &src[j]
   @p0  ldg     r10, [r9]               ; the gather: one line per lane in the worst case
   @p0  stg     [r7], r10
        exit
        .end
