"""Compile time of the kernels of Triton's tutorials, at the tile sizes their
configurations use on ``small``: the ports in examples/dsl/ where there is one, otherwise
our own kernels in the tutorials' style (below).

``compile_times()`` compiles each one for the ISA target and returns its CPU time (best of
``repeat``) with its size in instructions, registers and spilled values, and the CPU time
of its PTX (the same front end and passes, no register allocation). It is a measure,
not a timed test: ``python -m simtgpu.cli.bench --part compile`` writes the figures into
docs/performance.md. Issue 13's target is under one second per kernel.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from . import ir
from . import language as tl
from .compiler import Target
from .errors import KernelError
from .jit import jit


@jit
def t04_dropout(x_ptr, out_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    keep = tl.rand(seed, offsets) > p
    tl.store(out_ptr + offsets, tl.where(keep, x / (1 - p), 0.0), mask=mask)


@jit
def _attn_inner(acc, l_i, m_i, q, K_blk, V_blk, start_m, qk_scale, BLOCK_M: tl.constexpr,
                BLOCK_N: tl.constexpr, STAGE: tl.constexpr, offs_m, offs_n, N_CTX):
    # STAGE 1: the blocks left of the diagonal, 2: the diagonal block (masked), 3: all
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, N_CTX
    K_blk = tl.advance(K_blk, (0, lo))
    V_blk = tl.advance(V_blk, (lo, 0))
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(K_blk)
        qk = tl.dot(q, k)
        if STAGE == 2:
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(mask, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(V_blk)
        acc = tl.dot(p, v, acc)
        m_i = m_ij
        V_blk = tl.advance(V_blk, (BLOCK_N, 0))
        K_blk = tl.advance(K_blk, (0, BLOCK_N))
    return acc, l_i, m_i


@jit
def t06_attention(Q, K, V, sm_scale, Out, stride_qz, stride_qh, stride_qm, stride_qk, H, N_CTX,
                  HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  STAGE: tl.constexpr):
    # tutorial 06's forward kernel (release 3.1 form: the head's base offset in int64, block
    # pointers; one set of strides for Q, K, V and Out); STAGE 3 is causal, 1 is not
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    qvk_offset = off_z.to(tl.int64) * stride_qz + off_h.to(tl.int64) * stride_qh
    Q_blk = tl.make_block_ptr(base=Q + qvk_offset, shape=(N_CTX, HEAD_DIM),
                              strides=(stride_qm, stride_qk), offsets=(start_m * BLOCK_M, 0),
                              block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    V_blk = tl.make_block_ptr(base=V + qvk_offset, shape=(N_CTX, HEAD_DIM),
                              strides=(stride_qm, stride_qk), offsets=(0, 0),
                              block_shape=(BLOCK_N, HEAD_DIM), order=(1, 0))
    K_blk = tl.make_block_ptr(base=K + qvk_offset, shape=(HEAD_DIM, N_CTX),
                              strides=(stride_qk, stride_qm), offsets=(0, 0),
                              block_shape=(HEAD_DIM, BLOCK_N), order=(0, 1))
    O_blk = tl.make_block_ptr(base=Out + qvk_offset, shape=(N_CTX, HEAD_DIM),
                              strides=(stride_qm, stride_qk), offsets=(start_m * BLOCK_M, 0),
                              block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    q = tl.load(Q_blk)
    if STAGE & 1:
        acc, l_i, m_i = _attn_inner(acc, l_i, m_i, q, K_blk, V_blk, start_m, qk_scale,
                                    BLOCK_M, BLOCK_N, 4 - STAGE, offs_m, offs_n, N_CTX)
    if STAGE & 2:
        acc, l_i, m_i = _attn_inner(acc, l_i, m_i, q, K_blk, V_blk, start_m, qk_scale,
                                    BLOCK_M, BLOCK_N, 2, offs_m, offs_n, N_CTX)
    acc = acc / l_i[:, None]
    tl.store(O_blk, acc)


@jit
def t08_grouped_gemm(a_ptr, b_ptr, c_ptr, group_size, M, N, K, NUM_SM: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    tile_idx = tl.program_id(0)
    last_problem_end = 0
    for _g in range(group_size):
        num_m_tiles = tl.cdiv(M, BLOCK_M)
        num_n_tiles = tl.cdiv(N, BLOCK_N)
        num_tiles = num_m_tiles * num_n_tiles
        while (tile_idx >= last_problem_end and tile_idx < last_problem_end + num_tiles):
            tile_idx_in_gemm = tile_idx - last_problem_end
            tile_m_idx = tile_idx_in_gemm // num_n_tiles
            tile_n_idx = tile_idx_in_gemm % num_n_tiles
            # (tutorial 08's loop; the pointer tables of its groups need 64-bit integers)
            accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for kk in range(0, tl.cdiv(K, BLOCK_K)):
                ks = kk * BLOCK_K + tl.arange(0, BLOCK_K)
                a = tl.load(a_ptr + (tile_m_idx * BLOCK_M + tl.arange(0, BLOCK_M))[:, None] * K
                            + ks[None, :])
                b = tl.load(b_ptr + ks[:, None] * N
                            + (tile_n_idx * BLOCK_N + tl.arange(0, BLOCK_N))[None, :])
                accumulator += tl.dot(a, b)
            offs_cm = tile_m_idx * BLOCK_M + tl.arange(0, BLOCK_M)
            offs_cn = tile_n_idx * BLOCK_N + tl.arange(0, BLOCK_N)
            tl.store(c_ptr + N * offs_cm[:, None] + offs_cn[None, :], accumulator)
            tile_idx += NUM_SM
        last_problem_end = last_problem_end + num_tiles


_P = ir.ptr("f32")
_I = ir.I32
_F = ir.F32


def _types(**kinds: str) -> dict[str, ir.Type]:
    return {k: {"p": _P, "i": _I, "f": _F}[v] for k, v in kinds.items()}


_ATTN = _types(Q="p", K="p", V="p", sm_scale="f", Out="p", stride_qz="i", stride_qh="i",
               stride_qm="i", stride_qk="i", H="i", N_CTX="i")

# name -> (kernel, parameter types, constexprs): a kernel of examples/dsl/ (the tutorials'
# own, ported) by its label in bench_ptx.CASES, or one of the kernels above; all on
# ``small`` (8 lanes, 4 warps)
CASES: dict[str, tuple] = {
    "01 add BLOCK_SIZE=1024": ("vector_add", None, dict(BLOCK_SIZE=1024)),
    "02 softmax BLOCK_SIZE=128": ("softmax", None, dict(BLOCK_SIZE=128, num_stages=2)),
    "03 matmul 16x16x16": ("matmul 64x64x32", None, dict(
        BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16, GROUP_SIZE_M=4)),
    "03 matmul 32x16x8": ("matmul 64x64x32", None, dict(
        BLOCK_SIZE_M=32, BLOCK_SIZE_N=16, BLOCK_SIZE_K=8, GROUP_SIZE_M=4)),
    "03 matmul 32x32x16": ("matmul 64x64x32", None, dict(
        BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=16, GROUP_SIZE_M=4)),
    "04 dropout BLOCK_SIZE=1024": (t04_dropout, _types(x_ptr="p", out_ptr="p",
                                                       n_elements="i", p="f", seed="i"),
                                   dict(BLOCK_SIZE=1024)),
    "05 layer norm BLOCK_SIZE=128": ("layernorm", None, dict(BLOCK_SIZE=128)),
    "06 attention 16x16 d=16 causal": (t06_attention, _ATTN, dict(
        HEAD_DIM=16, BLOCK_M=16, BLOCK_N=16, STAGE=3)),
    "06 attention 32x16 d=16": (t06_attention, _ATTN, dict(
        HEAD_DIM=16, BLOCK_M=32, BLOCK_N=16, STAGE=1)),
    "08 grouped GEMM 16x16x16": (
        t08_grouped_gemm, _types(a_ptr="p", b_ptr="p", c_ptr="p", group_size="i", M="i",
                                 N="i", K="i"),
        dict(NUM_SM=4, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)),
}
_LOADED: dict[str, tuple] = {}


def kernel_of(name: str) -> tuple:
    """(JITFunction, parameter types, constexprs) of case ``name``."""
    kernel, types, cexpr = CASES[name]
    if isinstance(kernel, str):
        if kernel not in _LOADED:
            from .bench_ptx import CASES as EXAMPLES
            from .bench_ptx import _load
            from .compiler import parse_type

            case = next(c for c in EXAMPLES if c.label == kernel)
            mod = _load(case.file, False, "compile_" + case.kernel)
            _LOADED[kernel] = (getattr(mod, case.kernel),
                               {k: parse_type(v) for k, v in case.signature.items()})
        kernel, types = _LOADED[kernel]
    return kernel, types, cexpr


@dataclass
class CompileTime:
    kernel: str
    ms: float
    instructions: int
    registers: int
    spilled: int
    note: str = ""  # why it does not compile (a limit of the configuration), if it does not
    spill_space: str = ""  # where the spilled values are: shared or local memory
    ptx_ms: float = 0.0  # the same kernel compiled to PTX

    @property
    def spills(self) -> str:
        """The spilled values and where they are (``12 (shared)``), or ``0``."""
        return f"{self.spilled} ({self.spill_space})" if self.spilled else "0"


def compile_one(name: str, warp_size: int = 8, target: Target | None = None):
    """The compiled kernel of case ``name`` (uncached), for 4 warps, for this ISA (or
    ``target``)."""
    jf, types, cexpr = kernel_of(name)
    jf.cache.clear()
    return jf.compile(target or Target("isa", warp_size), types, cexpr, 4)


def compile_times(repeat: int = 3, names: list[str] | None = None) -> list[CompileTime]:
    """Best-of-``repeat`` CPU time of each case, so that other work on the machine does
    not count."""
    out = []
    for name in names or list(CASES):
        best = float("inf")
        ck, note = None, ""
        kernel_of(name)  # (an example's module loads outside the measure)
        for _ in range(repeat):
            t0 = time.process_time()
            try:
                ck = compile_one(name)
            except KernelError as e:  # a limit of the configuration: the time to say so
                note = e.message.split(": ", 1)[-1]
            best = min(best, time.process_time() - t0)
        ptx = float("inf")
        for _ in range(repeat):
            t0 = time.process_time()
            compile_one(name, target=Target.ptx())
            ptx = min(ptx, time.process_time() - t0)
        stats = ck.stats if ck is not None else {}
        out.append(CompileTime(name, round(best * 1000, 1), stats.get("static_instructions", 0),
                               stats.get("registers", 0), stats.get("spilled", 0), note,
                               stats.get("spill_space", ""), round(ptx * 1000, 1)))
    return out


def render(rows: list[CompileTime], info: dict[str, str], load: float) -> str:
    """The compile-time section of docs/performance.md."""
    lines = [
        "## Compile time of the tutorial kernels", "",
        "The tutorials' kernels (the ports in examples/dsl/, and tutorial-style kernels "
        "of our own in compiler_backend/bench_compile.py for 04, 06 and 08; 06 is the "
        "release 3.1 form, int64 head offsets included, which "
        "tests/compiler/test_compiler_int64.py runs against NumPy), "
        "compiled for the ISA of `small` (8 lanes, 4 warps) at the block sizes their "
        "configurations use there: front end, passes, instruction selection, register "
        "allocation with spilling and assembly text, without assembling or checking the "
        "configuration's limits (the 06 kernels exceed `small`'s instruction memory: they "
        "run on `full`; the 04 kernel at 1024 compiles to a chunk loop, one element an "
        "iteration, as it would not fit unrolled; 03 at 32x32x16 spills to local memory in "
        "device memory and exceeds the instruction memory too). Spilled values stay in "
        "shared memory while they fit, else they go to local memory (docs/compiler.md). "
        "*PTX ms* compiles the same kernel to PTX (front end and passes, no register "
        "allocation: ptxas allocates). Best of 3 in process CPU time.", "",
        f"Commit {info['commit']}, {info['date']}, {info['cpu']} ({info['nproc']} cores, "
        f"load average {load:.1f} while measuring).", "",
        "| kernel | compile ms | instructions | registers | spilled values (where) | PTX ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        if r.note:
            lines.append(f"| {r.kernel} | {r.ms:.0f} (to the error) | does not fit: {r.note} "
                         f"| | | {r.ptx_ms:.0f} |")
        else:
            lines.append(f"| {r.kernel} | {r.ms:.0f} | {r.instructions:,} | {r.registers} | "
                         f"{r.spills} | {r.ptx_ms:.0f} |")
    worst = max(rows, key=lambda r: r.ms)
    lines += ["", f"Slowest: {worst.kernel}, {worst.ms:.0f} ms. Target (issue 13): under "
              "1 s per tutorial kernel. Command: `python -m simtgpu.cli.bench --part "
              "compile` (library: `simtgpu.compiler_backend.bench_compile`)."]
    return "\n".join(lines)


def main() -> None:
    for row in compile_times(repeat=1):
        print(f"{row.kernel:34s} {row.ms:8.1f} ms  {row.instructions:5d} instr  "
              f"{row.registers:2d} regs  {row.spills} spilled  {row.ptx_ms:6.1f} ms PTX")


if __name__ == "__main__":
    main()
