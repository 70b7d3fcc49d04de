"""The device kernels of microgpt's inference step, in the Triton-style DSL.

Device memory holds, between launches, the weights, the residual stream ``x``, scratch
vectors, and one ``state`` buffer laid out as ``[q (E) | K cache (T x E) | V cache (T x E)]``:
the query of the current token and the keys and values of every position so far. The token
being fed is an ``int32`` word in device memory too: the sampling kernel writes it, the next
step's embedding kernel reads it, so a whole name is generated without the host touching the
activations.

Two sets of kernels:

* **unfused**, one op per launch as an eager framework would run them: a gather, a
  reduction, an elementwise op or a matrix-vector product each;
* **fused**: the embedding with its RMSNorm; each RMSNorm folded into the prologue of the
  matrix-vector product that consumes it (every program re-derives the scale of the whole
  vector, which costs a few instructions and saves a launch); the query, key and value
  projections in one launch that writes the KV cache; per-head attention (scores, scale,
  causal mask, softmax, weighted sum of values) in one program; residual adds and the ReLU
  in the epilogue of their matrix-vector product; the head with the sampling.

Matrices are row-major ``(out, in)``; a matrix-vector program takes ``BLOCK_N`` rows and
walks the input in ``BLOCK_K`` chunks, accumulating a 2-D tile that it sums along the rows
at the end.
"""

from __future__ import annotations

import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl


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
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(out_ptr, tl.sum(x * x, axis=0) / N)


@triton.jit
def rsqrt_scale_kernel(x_ptr, ms_ptr, y_ptr, eps, N: tl.constexpr):
    """y = x * rsqrt(ms + eps): the elementwise half of RMSNorm."""
    cols = tl.arange(0, N)
    ms = tl.load(ms_ptr)
    tl.store(y_ptr + cols, tl.load(x_ptr + cols) * tl.rsqrt(ms + eps))


@triton.jit
def linear_kernel(x_ptr, w_ptr, y_ptr, y_off, N, K: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    """y[y_off + n] = sum_k W[n, k] x[k] for the program's BLOCK_N rows."""
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rmask = rows < N
    acc = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
    for k0 in tl.static_range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        w = tl.load(w_ptr + rows[:, None] * K + cols[None, :], mask=rmask[:, None], other=0.0)
        acc += w * tl.load(x_ptr + cols)[None, :]
    tl.store(y_ptr + y_off + rows, tl.sum(acc, axis=1), mask=rmask)


@triton.jit
def scores_kernel(state_ptr, s_ptr, E: tl.constexpr, D: tl.constexpr, T: tl.constexpr):
    """s[h, t] = q_h . k_h[t] for every cache slot t (slots past pos are masked later)."""
    h = tl.program_id(0)
    t = tl.arange(0, T)
    d = tl.arange(0, D)
    q = tl.load(state_ptr + h * D + d)
    k = tl.load(state_ptr + E + t[:, None] * E + h * D + d[None, :])
    tl.store(s_ptr + h * T + t, tl.sum(k * q[None, :], axis=1))


@triton.jit
def scale_kernel(x_ptr, y_ptr, c, N: tl.constexpr):
    """y = c * x."""
    i = tl.arange(0, N)
    tl.store(y_ptr + i, tl.load(x_ptr + i) * c)


@triton.jit
def causal_mask_kernel(s_ptr, pos, N: tl.constexpr, T: tl.constexpr):
    """s[h, t] = -inf where t > pos."""
    i = tl.arange(0, N)
    s = tl.load(s_ptr + i)
    tl.store(s_ptr + i, tl.where(i % T <= pos, s, -float("inf")))


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
    """o_h = sum_t p[h, t] v_h[t]."""
    h = tl.program_id(0)
    t = tl.arange(0, T)
    d = tl.arange(0, D)
    p = tl.load(p_ptr + h * T + t)
    v = tl.load(state_ptr + E + T * E + t[:, None] * E + h * D + d[None, :])
    tl.store(o_ptr + h * D + d, tl.sum(p[:, None] * v, axis=0))


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
def _matvec(x_ptr, w_ptr, rows, rmask, scale, K: tl.constexpr, BLOCK_N: tl.constexpr,
            BLOCK_K: tl.constexpr):
    """sum_k W[rows, k] * (scale * x[k]), the tile loop every fused matrix-vector uses."""
    acc = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
    for k0 in tl.static_range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        w = tl.load(w_ptr + rows[:, None] * K + cols[None, :], mask=rmask[:, None], other=0.0)
        acc += w * (tl.load(x_ptr + cols) * scale)[None, :]
    return tl.sum(acc, axis=1)


@triton.jit
def _rms_scale(x_ptr, eps, K: tl.constexpr):
    """rsqrt(mean(x * x) + eps) of the whole vector x (K elements)."""
    x = tl.load(x_ptr + tl.arange(0, K))
    return tl.rsqrt(tl.sum(x * x, axis=0) / K + eps)


@triton.jit
def embed_norm_kernel(tok_ptr, wte_ptr, wpe_ptr, x_ptr, pos, eps, E: tl.constexpr):
    """x = rmsnorm(wte[token] + wpe[pos])."""
    tok = tl.load(tok_ptr)
    cols = tl.arange(0, E)
    x = tl.load(wte_ptr + tok * E + cols) + tl.load(wpe_ptr + pos * E + cols)
    tl.store(x_ptr + cols, x * tl.rsqrt(tl.sum(x * x, axis=0) / E + eps))


@triton.jit
def norm_qkv_kernel(x_ptr, wqkv_ptr, state_ptr, pos, eps, E: tl.constexpr, T: tl.constexpr,
                    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """[q; k; v] = Wqkv @ rmsnorm(x): row r < E goes to q, the others to the K and V caches
    at position pos."""
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rmask = rows < 3 * E
    y = _matvec(x_ptr, wqkv_ptr, rows, rmask, _rms_scale(x_ptr, eps, E), E, BLOCK_N, BLOCK_K)
    part = rows // E
    dest = tl.where(part == 0, rows, E + (part - 1) * (T * E) + pos * E + rows % E)
    tl.store(state_ptr + dest, y, mask=rmask)


@triton.jit
def attention_kernel(state_ptr, o_ptr, pos, scale, E: tl.constexpr, D: tl.constexpr,
                     T: tl.constexpr):
    """One head: scores against the K cache, scale, causal mask, softmax, weighted sum of the
    V cache."""
    h = tl.program_id(0)
    t = tl.arange(0, T)
    d = tl.arange(0, D)
    q = tl.load(state_ptr + h * D + d)
    k = tl.load(state_ptr + E + t[:, None] * E + h * D + d[None, :])
    s = tl.sum(k * q[None, :], axis=1) * scale
    s = tl.where(t <= pos, s, -float("inf"))
    p = tl.exp(s - tl.max(s, axis=0))
    p = p / tl.sum(p, axis=0)
    v = tl.load(state_ptr + E + T * E + t[:, None] * E + h * D + d[None, :])
    tl.store(o_ptr + h * D + d, tl.sum(p[:, None] * v, axis=0))


@triton.jit
def linear_residual_kernel(x_ptr, w_ptr, res_ptr, N, K: tl.constexpr, BLOCK_N: tl.constexpr,
                           BLOCK_K: tl.constexpr):
    """res += W @ x for the program's rows (each program reads and writes only its own rows
    of res, so updating it in place is safe)."""
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rmask = rows < N
    y = _matvec(x_ptr, w_ptr, rows, rmask, 1.0, K, BLOCK_N, BLOCK_K)
    tl.store(res_ptr + rows, tl.load(res_ptr + rows, mask=rmask) + y, mask=rmask)


@triton.jit
def norm_linear_relu_kernel(x_ptr, w_ptr, y_ptr, N, eps, K: tl.constexpr,
                            BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y = relu(W @ rmsnorm(x)) for the program's rows."""
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rmask = rows < N
    y = _matvec(x_ptr, w_ptr, rows, rmask, _rms_scale(x_ptr, eps, K), K, BLOCK_N, BLOCK_K)
    tl.store(y_ptr + rows, tl.maximum(y, 0.0), mask=rmask)


@triton.jit
def head_sample_kernel(x_ptr, w_ptr, logits_ptr, noise_ptr, tok_ptr, inv_temp, V,
                       K: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_K: tl.constexpr,
                       GREEDY: tl.constexpr):
    """logits = W @ x, then the next token: argmax(logits) when GREEDY, else
    argmax(logits * inv_temp + noise) with Gumbel noise (a sample of softmax(logits / T))."""
    rows = tl.arange(0, BLOCK_V)
    rmask = rows < V
    logits = _matvec(x_ptr, w_ptr, rows, rmask, 1.0, K, BLOCK_V, BLOCK_K)
    tl.store(logits_ptr + rows, logits, mask=rmask)
    if GREEDY:
        z = logits
    else:
        z = logits * inv_temp + tl.load(noise_ptr + rows, mask=rmask, other=0.0)
    tl.store(tok_ptr, tl.argmax(tl.where(rmask, z, -float("inf")), axis=0))
