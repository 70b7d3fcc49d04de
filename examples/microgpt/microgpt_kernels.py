"""The device kernels of microgpt's inference step, in the Triton-style DSL.

Device memory holds, between launches, the weights, the residual stream ``x``, scratch
vectors, and one ``state`` buffer laid out as ``[q (E) | K cache (E x T) | V cache (E x T)]``:
the query of the current token and the keys and values of every position so far, stored
feature-major (column ``t`` is position ``t``) so that the positions a head reads lie side by
side. The token being fed is an ``int32`` word in device memory too: the sampling kernel
writes it, the next step's embedding kernel reads it, so a whole name is generated without
the host touching the activations.

Weight matrices are stored transposed, ``(in, out)``, padded to whole programs: a
matrix-vector product (``_matvec``) gives each thread an output row, walks the input a chunk
of columns at a time (each a load of one word that the whole warp shares) and reads the
weights of neighbouring rows from neighbouring words, so every load coalesces.

Two sets of kernels:

* **unfused**, one op per launch as an eager framework would run them: a gather, a
  reduction, an elementwise op or a matrix-vector product each;
* **fused**: the embedding with its RMSNorm; each later RMSNorm folded into the prologue of
  the matrix-vector product that consumes it (every program re-derives the scale of the
  whole vector, a few instructions that save two launches); the query, key and value
  projections in one launch that also writes the KV cache; attention (scores, scale, causal
  mask, softmax, weighted sum of values) in one thread-level kernel that keeps each head in
  the registers of a group of threads; the residual adds and the ReLU in the epilogue of
  their matrix-vector product; the head with the sampling.

The matrix-vector products and the RMSNorm reduction are the same ``@jit`` helpers
(``_matvec``, ``_mean_square``) in both sets, so that they differ by fusion, not by how
well each op is written.

No kernel updates a buffer in place: a tile smaller than the block is held by several
threads, and one warp could read a word that another has already rewritten.
"""

from __future__ import annotations

import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl


# -- building blocks (inlined into the kernels) -----------------------------------------------
@triton.jit
def _matvec(x_ptr, wt_ptr, rows, N: tl.constexpr, K: tl.constexpr, BLOCK_N: tl.constexpr,
            KS: tl.constexpr):
    """sum_k W[rows, k] * x[k], with W stored transposed and padded: Wt is K x N (``rows``
    are offsets into a row of Wt), N a multiple of BLOCK_N, so no load needs a mask. The k
    range is cut into KS contiguous splits, one per group of BLOCK_N threads, each a chain
    of fused multiply-adds in k order over a run-time loop of unrolled chunks (small code,
    few live registers); the splits are added at the end. A chunk is CH columns, as many as
    keep every weight's offset from the chunk's pointer within a load's immediate field: a
    larger constant offset would be built in registers for every load and, with eight of
    them live, spill."""
    CH = min(8, max(1, 256 // N))
    tl.static_assert(K % (8 * KS) == 0)
    if KS == 1:  # (a compile-time choice: no split, nothing to add up across threads)
        acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
        for k0 in tl.range(0, K, CH):
            w_ptrs = wt_ptr + rows + k0 * N
            for k in tl.static_range(CH):
                acc = tl.fma(tl.load(w_ptrs + k * N), tl.load(x_ptr + k0 + k), acc)
        y = acc
    else:
        # the split's first column, for every element of the tile: the x loads below are
        # then made in the tile's own layout (a (KS, 1) tile would go through shared memory)
        split = tl.broadcast_to(tl.arange(0, KS)[:, None] * (K // KS), (KS, BLOCK_N))
        acc2 = tl.zeros((KS, BLOCK_N), dtype=tl.float32)
        for k0 in tl.range(0, K // KS, CH):
            w_ptrs = wt_ptr + rows[None, :] + (split + k0) * N
            xs = x_ptr + split + k0
            for k in tl.static_range(CH):
                acc2 = tl.fma(tl.load(w_ptrs + k * N), tl.load(xs + k), acc2)
        y = tl.sum(acc2, axis=0)
    return y


@triton.jit
def _mean_square(x_ptr, K: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, K))
    return tl.sum(x * x, axis=0) / K


@triton.jit
def _rows(BLOCK_N: tl.constexpr):
    return tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)


# -- unfused: one op per launch ---------------------------------------------------------------
@triton.jit
def embed_kernel(tok_ptr, wte_ptr, wpe_ptr, x_ptr, pos, E: tl.constexpr):
    """x = wte[token] + wpe[pos]: the embedding gather."""
    tok = tl.load(tok_ptr)
    cols = tl.arange(0, E)
    x = tl.load(wte_ptr + tok * E + cols) + tl.load(wpe_ptr + pos * E + cols)
    tl.store(x_ptr + cols, x)


@triton.jit
def mean_square_kernel(x_ptr, out_ptr, N: tl.constexpr):
    """out = mean(x * x): the reduction half of RMSNorm."""
    tl.store(out_ptr, _mean_square(x_ptr, N))


@triton.jit
def rsqrt_scale_kernel(x_ptr, ms_ptr, y_ptr, eps, N: tl.constexpr):
    """y = x * rsqrt(ms + eps): the elementwise half of RMSNorm."""
    cols = tl.arange(0, N)
    tl.store(y_ptr + cols, tl.load(x_ptr + cols) * tl.rsqrt(tl.load(ms_ptr) + eps))


@triton.jit
def linear_kernel(x_ptr, wt_ptr, y_ptr, y_off, y_stride, N: tl.constexpr, NP: tl.constexpr,
                  K: tl.constexpr, BLOCK_N: tl.constexpr, KS: tl.constexpr):
    """y[y_off + n * y_stride] = (W @ x)[n] for the program's rows (N of them, NP with the
    padding; the stride writes a column of the K or V cache)."""
    rows = _rows(BLOCK_N)
    y = _matvec(x_ptr, wt_ptr, rows, NP, K, BLOCK_N, KS)
    tl.store(y_ptr + y_off + rows * y_stride, y, mask=rows < N)


@triton.jit
def scores_kernel(state_ptr, s_ptr, E: tl.constexpr, D: tl.constexpr, T: tl.constexpr):
    """s[h, t] = q_h . k_h[t] for every cache slot t (slots past the position are masked
    later); one program per head."""
    h = tl.program_id(0)
    t = tl.arange(0, T)
    s = tl.zeros((T,), dtype=tl.float32)
    for d in tl.static_range(D):
        s += tl.load(state_ptr + h * D + d) * tl.load(state_ptr + E + (h * D + d) * T + t)
    tl.store(s_ptr + h * T + t, s)


@triton.jit
def scale_kernel(x_ptr, y_ptr, c, N: tl.constexpr):
    """y = c * x."""
    i = tl.arange(0, N)
    tl.store(y_ptr + i, tl.load(x_ptr + i) * c)


@triton.jit
def causal_mask_kernel(s_ptr, y_ptr, pos, N: tl.constexpr, T: tl.constexpr):
    """y[h, t] = s[h, t], or -inf where t > pos."""
    i = tl.arange(0, N)
    tl.store(y_ptr + i, tl.where(i % T <= pos, tl.load(s_ptr + i), -float("inf")))


@triton.jit
def row_max_kernel(x_ptr, out_ptr, C: tl.constexpr):
    """out[row] = max of row ``program_id`` of x (C columns)."""
    row = tl.program_id(0)
    tl.store(out_ptr + row, tl.max(tl.load(x_ptr + row * C + tl.arange(0, C)), axis=0))


@triton.jit
def sub_exp_kernel(x_ptr, m_ptr, y_ptr, C: tl.constexpr):
    """y[row] = exp(x[row] - m[row])."""
    row = tl.program_id(0)
    i = row * C + tl.arange(0, C)
    tl.store(y_ptr + i, tl.exp(tl.load(x_ptr + i) - tl.load(m_ptr + row)))


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, C: tl.constexpr):
    """out[row] = sum of row ``program_id`` of x."""
    row = tl.program_id(0)
    tl.store(out_ptr + row, tl.sum(tl.load(x_ptr + row * C + tl.arange(0, C)), axis=0))


@triton.jit
def row_div_kernel(x_ptr, d_ptr, y_ptr, C: tl.constexpr):
    """y[row] = x[row] / d[row]."""
    row = tl.program_id(0)
    i = row * C + tl.arange(0, C)
    tl.store(y_ptr + i, tl.load(x_ptr + i) / tl.load(d_ptr + row))


@triton.jit
def weighted_sum_kernel(p_ptr, state_ptr, o_ptr, E: tl.constexpr, D: tl.constexpr,
                        T: tl.constexpr):
    """o[h * D + d] = sum_t p[h, t] v_h[t, d]; one program per head."""
    h = tl.program_id(0)
    t = tl.arange(0, T)
    p = tl.load(p_ptr + h * T + t)
    for d in tl.static_range(D):
        v = tl.load(state_ptr + E + E * T + (h * D + d) * T + t)
        tl.store(o_ptr + h * D + d, tl.sum(p * v, axis=0))


@triton.jit
def add_kernel(a_ptr, b_ptr, y_ptr, N: tl.constexpr):
    """y = a + b (the residual connections)."""
    i = tl.arange(0, N)
    tl.store(y_ptr + i, tl.load(a_ptr + i) + tl.load(b_ptr + i))


@triton.jit
def relu_kernel(x_ptr, y_ptr, N: tl.constexpr):
    """y = max(x, 0)."""
    i = tl.arange(0, N)
    tl.store(y_ptr + i, tl.maximum(tl.load(x_ptr + i), 0.0))


@triton.jit
def argmax_kernel(x_ptr, tok_ptr, N, BLOCK: tl.constexpr):
    """token = argmax of x[:N] (the lower index on ties)."""
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < N, other=-float("inf"))
    tl.store(tok_ptr, tl.argmax(x, axis=0))


# -- fused ------------------------------------------------------------------------------------
@triton.jit
def embed_norm_kernel(tok_ptr, wte_ptr, wpe_ptr, x_ptr, pos, eps, E: tl.constexpr):
    """x = rmsnorm(wte[token] + wpe[pos])."""
    tok = tl.load(tok_ptr)
    cols = tl.arange(0, E)
    x = tl.load(wte_ptr + tok * E + cols) + tl.load(wpe_ptr + pos * E + cols)
    tl.store(x_ptr + cols, x * tl.rsqrt(tl.sum(x * x, axis=0) / E + eps))


@triton.jit
def norm_qkv_kernel(x_ptr, wqkv_t_ptr, state_ptr, pos, eps, E: tl.constexpr, T: tl.constexpr,
                    BLOCK_N: tl.constexpr, KS: tl.constexpr):
    """[q; k; v] = [Wq; Wk; Wv] @ rmsnorm(x). The three transposed matrices lie one after
    the other (E x E each: the weights' stride stays E, whatever the shape), a program's rows
    may run across two of them. Row n < E goes to q, the others to column pos of the K and V
    caches."""
    rows = _rows(BLOCK_N)
    r = tl.minimum(rows, 3 * E - 1)  # the padding rows read the last one again
    y = _matvec(x_ptr, wqkv_t_ptr, (r // E) * (E * E) + r % E, E, E, BLOCK_N, KS)
    y = y * tl.rsqrt(_mean_square(x_ptr, E) + eps)
    dest = tl.where(rows < E, rows, E + (rows // E - 1) * (E * T) + (rows % E) * T + pos)
    tl.store(state_ptr + dest, y, mask=rows < 3 * E)


@triton.jit
def _group_sum(x, G: tl.constexpr):
    """Sum over the G threads of an aligned group (xor shuffles by G/2 .. 1 stay inside it,
    whatever the warp size); every thread of the group gets the same bits."""
    off = G // 2
    for _ in tl.static_range(0, 5):
        if off > 0:
            x += tl.shfl_xor(x, off)
            off = off // 2
    return x


@triton.jit
def _group_max(x, G: tl.constexpr):
    off = G // 2
    for _ in tl.static_range(0, 5):
        if off > 0:
            x = tl.maximum(x, tl.shfl_xor(x, off))
            off = off // 2
    return x


@triton.jit
def attention_kernel(state_ptr, o_ptr, pos, scale, E: tl.constexpr, D: tl.constexpr,
                     T: tl.constexpr, G: tl.constexpr):
    """Attention written thread by thread: head h runs on a group of G threads (a block
    holds block_dim / G heads), thread ``lane`` of the group holding positions ``lane`` and
    ``lane + G`` (so T = 2G). Scores, scale, causal mask, softmax and the weighted sum of
    values stay in registers, and every reduction is a butterfly of shuffles inside the
    group: no shared memory, no barrier."""
    tl.static_assert(T == 2 * G)
    tid = tl.thread_id(0)
    h = tl.program_id(0) * (tl.block_dim(0) // G) + tid // G
    lane = tid % G
    k_ptr = state_ptr + E + h * D * T + lane
    s0 = 0.0
    s1 = 0.0
    for d in tl.static_range(D):
        qd = tl.load(state_ptr + h * D + d)
        s0 += qd * tl.load(k_ptr + d * T)
        s1 += qd * tl.load(k_ptr + d * T + G)
    s0 = tl.where(lane <= pos, s0 * scale, -float("inf"))
    s1 = tl.where(lane + G <= pos, s1 * scale, -float("inf"))
    m = _group_max(tl.maximum(s0, s1), G)
    e0 = tl.exp(s0 - m)
    e1 = tl.exp(s1 - m)
    z = _group_sum(e0 + e1, G)
    p0 = e0 / z
    p1 = e1 / z
    v_ptr = state_ptr + E + E * T + h * D * T + lane
    for d in tl.static_range(D):
        o = _group_sum(p0 * tl.load(v_ptr + d * T) + p1 * tl.load(v_ptr + d * T + G), G)
        tl.store(o_ptr + h * D + d, o, mask=lane == 0)


@triton.jit
def linear_residual_kernel(x_ptr, wt_ptr, res_ptr, y_ptr, N: tl.constexpr, K: tl.constexpr,
                           BLOCK_N: tl.constexpr, KS: tl.constexpr):
    """y = res + W @ x for the program's rows."""
    rows = _rows(BLOCK_N)
    rmask = rows < N
    y = _matvec(x_ptr, wt_ptr, rows, N, K, BLOCK_N, KS)
    tl.store(y_ptr + rows, tl.load(res_ptr + rows, mask=rmask) + y, mask=rmask)


@triton.jit
def norm_linear_relu_kernel(x_ptr, wt_ptr, y_ptr, eps, N: tl.constexpr, K: tl.constexpr,
                            BLOCK_N: tl.constexpr, KS: tl.constexpr):
    """y = relu(W @ rmsnorm(x)) for the program's rows."""
    rows = _rows(BLOCK_N)
    rmask = rows < N
    y = _matvec(x_ptr, wt_ptr, rows, N, K, BLOCK_N, KS)
    y = y * tl.rsqrt(_mean_square(x_ptr, K) + eps)
    tl.store(y_ptr + rows, tl.maximum(y, 0.0), mask=rmask)


@triton.jit
def head_sample_kernel(x_ptr, wt_ptr, logits_ptr, noise_ptr, tok_ptr, inv_temp,
                       V: tl.constexpr, K: tl.constexpr, BLOCK_V: tl.constexpr,
                       KS: tl.constexpr, GREEDY: tl.constexpr):
    """logits = W @ x, then the next token: argmax(logits) when GREEDY, else
    argmax(logits * inv_temp + noise) with Gumbel noise (a sample of softmax(logits / T))."""
    rows = tl.arange(0, BLOCK_V)
    rmask = rows < V
    logits = _matvec(x_ptr, wt_ptr, rows, BLOCK_V, K, BLOCK_V, KS)
    tl.store(logits_ptr + rows, logits, mask=rmask)
    if GREEDY:
        z = logits
    else:
        z = logits * inv_temp + tl.load(noise_ptr + rows, mask=rmask, other=0.0)
    tl.store(tok_ptr, tl.argmax(tl.where(rmask, z, -float("inf")), axis=0))
