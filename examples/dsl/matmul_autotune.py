"""Matrix multiply with block pointers, autotuned: tl.make_block_ptr/tl.advance walk the
A and B tiles, boundary checks pad the ragged edges with zeros, and @triton.autotune picks
the block sizes with the smallest measure on the current device (instructions on the ISS,
cycles on the RTL, time on the cuda backend), once per (M, N, K)."""

import sys

import numpy as np
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from dsl_common import check_matmul, main


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 8, "BLOCK_N": 8, "BLOCK_K": 4}),
        triton.Config({"BLOCK_M": 8, "BLOCK_N": 8, "BLOCK_K": 8}),
        triton.Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 8}),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_block = tl.make_block_ptr(a_ptr, shape=(M, K), strides=(stride_am, stride_ak),
                                offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K),
                                order=(1, 0))
    b_block = tl.make_block_ptr(b_ptr, shape=(K, N), strides=(stride_bk, stride_bn),
                                offsets=(0, pid_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N),
                                order=(1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_block, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_block, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_block = tl.advance(a_block, (0, BLOCK_K))
        b_block = tl.advance(b_block, (BLOCK_K, 0))
    c_block = tl.make_block_ptr(c_ptr, shape=(M, N), strides=(stride_cm, stride_cn),
                                offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                                block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(c_block, acc, boundary_check=(0, 1))


def matmul(a: np.ndarray, b: np.ndarray):
    M, K = a.shape
    _, N = b.shape
    c = np.zeros((M, N), np.float32)
    grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]),  # noqa: E731
                         triton.cdiv(N, META["BLOCK_N"]))
    stats = matmul_kernel[grid](a, b, c, M, N, K, a.shape[1], 1, b.shape[1], 1,
                                c.shape[1], 1)
    return c, stats


def run(size: int, seed: int = 0):
    ok, detail, stats = check_matmul(matmul, size, seed)
    return ok, f"{detail}; tuned to {matmul_kernel.best_config}", stats


if __name__ == "__main__":
    sys.exit(main("matmul_autotune", run, 20))
