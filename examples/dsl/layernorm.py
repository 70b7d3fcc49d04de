"""Layer norm: the forward kernel of Triton's layer-norm tutorial, changed only in its
imports. Rows longer than BLOCK_SIZE are walked in chunks by run-time loops."""

import sys

import numpy as np
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from dsl_common import close, main


@triton.jit
def _layer_norm_fwd_fused(
    X,  # pointer to the input
    Y,  # pointer to the output
    W,  # pointer to the weights
    B,  # pointer to the biases
    Mean,  # pointer to the mean
    Rstd,  # pointer to the 1/std
    stride,  # how much to increase the pointer when moving by 1 row
    N,  # number of columns in X
    eps,  # epsilon to avoid division by zero
    BLOCK_SIZE: tl.constexpr,
):
    # Map the program id to the row of X and Y it should compute.
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    # Compute mean
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    # Compute variance
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    # Write mean / rstd
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    # Normalize and apply linear transformation
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        # Write output
        tl.store(Y + cols, y, mask=mask)


def run(size: int, seed: int = 0, block: int = 32):
    rng = np.random.default_rng(seed)
    rows, n = max(1, size // 50), size % 83 + 5
    x = rng.standard_normal((rows, n)).astype(np.float32) * 2 + 1
    w = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    y = np.zeros_like(x)
    mean = np.zeros(rows, np.float32)
    rstd = np.zeros(rows, np.float32)
    eps = 1e-5
    stats = _layer_norm_fwd_fused[(rows,)](x, y, w, b, mean, rstd, n, n, eps,
                                            BLOCK_SIZE=block)
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1, keepdims=True)
    rs = 1 / np.sqrt(((x64 - mu) ** 2).mean(axis=1, keepdims=True) + eps)
    want = (x64 - mu) * rs * w + b
    ok1, d1 = close(y, want, rtol=1e-4, atol=1e-4)
    ok2, _ = close(mean, mu[:, 0], rtol=1e-5, atol=1e-5)
    ok3, _ = close(rstd, rs[:, 0], rtol=1e-4, atol=1e-5)
    return ok1 and ok2 and ok3, f"{rows}x{n}: {d1}; mean ok {ok2}, rstd ok {ok3}", stats


if __name__ == "__main__":
    sys.exit(main("layernorm", run, 300))
