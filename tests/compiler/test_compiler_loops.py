"""``while`` loops and ``break``/``continue`` on the ISS against Python/NumPy models: uniform
loops in tile programs, per-thread divergent loops in thread-level kernels, ``for`` loops
that break (lowered to ``while``) or only continue, unrolled loops that break, and the
errors for what is not supported."""


import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from compiler_helpers import compile_error
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from test_compiler_ptx import needs_ptxas, ptxas_errors


@triton.jit
def k_collatz(x_ptr, y_ptr, n, LIMIT: tl.constexpr):
    i = tl.program_id(0) * tl.block_dim(0) + tl.thread_id(0)
    if i < n:
        v = tl.load(x_ptr + i)
        steps = 0
        while v != 1:
            if v % 2 == 0:
                v = v // 2
                steps += 1
                continue
            v = 3 * v + 1
            steps += 1
            if steps > LIMIT:
                break
        tl.store(y_ptr + i, steps * 1000 + v % 1000)


def _collatz(v: int, limit: int) -> int:
    s = 0
    while v != 1:
        if v % 2 == 0:
            v //= 2
            s += 1
            continue
        v = 3 * v + 1
        s += 1
        if s > limit:
            break
    return s * 1000 + v % 1000


@pytest.mark.parametrize("limit", [5, 40, 200])
def test_divergent_while_with_break_and_continue(iss_device, limit):
    """Each thread runs its own trip count (ssy/sync reconvergence around the loop)."""
    x = np.arange(1, 90, dtype=np.int32)
    y = np.zeros_like(x)
    k_collatz[(3,)](x, y, len(x), LIMIT=limit, block=(32, 1, 1))
    assert y.tolist() == [_collatz(int(v), limit) for v in x]


@triton.jit
def k_blocks_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.int32)
    start = 0
    while start < n:
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0)
        start += BLOCK
    tl.store(out_ptr, tl.sum(acc))
    tl.store(out_ptr + 1, start)


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 200])
def test_uniform_while_over_blocks(iss_device, n):
    x = np.random.default_rng(n).integers(-1000, 1000, max(n, 1)).astype(np.int32)
    out = np.zeros(2, np.int32)
    k_blocks_sum[(1,)](x, out, n, BLOCK=32)
    assert out.tolist() == [int(x[:n].sum()), -(-n // 32) * 32]


@triton.jit
def k_first_negative(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    found = -1
    visited = 0
    for b in range(0, n, BLOCK):
        offs = b + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
        idx = tl.min(tl.where(v < 0.0, offs, 1 << 30))
        visited += 1
        if idx < (1 << 30):
            found = idx
            break
    tl.store(out_ptr, found)
    tl.store(out_ptr + 1, visited)


@pytest.mark.parametrize("n, neg", [(100, 37), (300, 250), (50, None), (64, 0), (64, 63)])
def test_for_loop_that_breaks(iss_device, n, neg):
    x = np.ones(n, np.float32)
    if neg is not None:
        x[neg] = -1.0
        x[neg + 3:] = -2.0
    out = np.zeros(2, np.int32)
    k_first_negative[(1,)](x, out, n, BLOCK=32)
    want = -1 if neg is None else neg
    visited = -(-n // 32) if neg is None else neg // 32 + 1
    assert out.tolist() == [want, visited]


@triton.jit
def k_skip_blocks(x_ptr, out_ptr, n, skip, BLOCK: tl.constexpr):
    acc = 0
    for b in range(n // BLOCK - 1, -1, -1):
        if b % skip == 0:
            continue
        offs = b * BLOCK + tl.arange(0, BLOCK)
        acc = acc * 3 + tl.sum(tl.load(x_ptr + offs))
    tl.store(out_ptr, acc)


@pytest.mark.parametrize("skip", [1, 2, 3, 7])
def test_for_loop_that_continues_counts_down(iss_device, skip):
    n, block = 256, 16
    x = np.random.default_rng(skip).integers(-50, 50, n).astype(np.int32)
    out = np.zeros(1, np.int32)
    k_skip_blocks[(1,)](x, out, n, skip, BLOCK=block)
    acc = 0
    for b in range(n // block - 1, -1, -1):
        if b % skip == 0:
            continue
        acc = acc * 3 + int(x[b * block:(b + 1) * block].sum())
    assert out[0] == np.int32(np.int64(acc).astype(np.int32))


@triton.jit
def k_static_break(x_ptr, out_ptr, limit, N: tl.constexpr):
    total = 0.0
    for i in tl.static_range(N):
        v = tl.load(x_ptr + i)
        if total + v > limit:
            break
        total += v
    tl.store(out_ptr, total)


@pytest.mark.parametrize("limit", [0.5, 3.0, 100.0])
def test_static_range_that_breaks(iss_device, limit):
    x = np.array([1.0, 0.5, 2.0, 0.25, 4.0, 1.0, 1.0, 1.0], np.float32)
    out = np.zeros(1, np.float32)
    k_static_break[(1,)](x, out, limit, N=8)
    total = np.float32(0)
    for v in x:
        if total + v > limit:
            break
        total += v
    assert out[0] == total


@triton.jit
def k_nested(x_ptr, out_ptr, rows, cols, target):
    # per program: count rows whose running sum first reaches `target` within the row,
    # scanning with a while loop nested in a for loop; `while True` ends only by break
    hits = 0
    for r in range(rows):
        c = 0
        s = 0
        while True:
            if c >= cols:
                break
            s += tl.load(x_ptr + r * cols + c)
            c += 1
            if s >= target:
                hits += 1
                break
    tl.store(out_ptr, hits)


def test_while_true_nested_in_for(iss_device):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 5, (6, 9)).astype(np.int32)
    out = np.zeros(1, np.int32)
    k_nested[(1,)](x, out, 6, 9, 12)
    assert out[0] == int((np.cumsum(x, axis=1) >= 12).any(axis=1).sum())


P, IP, I, F = ir.ptr("f32"), ir.ptr("i32"), ir.I32, ir.F32
LOOP_KERNELS = [
    (k_collatz, dict(x_ptr=IP, y_ptr=IP, n=I), dict(LIMIT=40), (32, 1, 1)),
    (k_blocks_sum, dict(x_ptr=IP, out_ptr=IP, n=I), dict(BLOCK=64), None),
    (k_first_negative, dict(x_ptr=P, out_ptr=IP, n=I), dict(BLOCK=32), None),
    (k_skip_blocks, dict(x_ptr=IP, out_ptr=IP, n=I, skip=I), dict(BLOCK=16), None),
    (k_static_break, dict(x_ptr=P, out_ptr=P, limit=F), dict(N=8), None),
    (k_nested, dict(x_ptr=IP, out_ptr=IP, rows=I, cols=I, target=I), {}, None),
]


@needs_ptxas
@pytest.mark.parametrize("kern, types, cexpr, block", LOOP_KERNELS,
                         ids=[k[0].__name__ for k in LOOP_KERNELS])
def test_loops_pass_ptxas(tmp_path, kern, types, cexpr, block):
    text = compile_function(kern.fn, types, cexpr, Target.ptx("sm_90"), 4, block).code
    assert not (err := ptxas_errors(tmp_path, text)), err


def test_uniform_while_has_no_reconvergence_bracket():
    isa = compile_function(k_blocks_sum.fn, dict(x_ptr=IP, out_ptr=IP, n=I), dict(BLOCK=64),
                           Target("isa", 8), 4).code
    assert "ssy" not in isa
    isa = compile_function(k_collatz.fn, dict(x_ptr=IP, y_ptr=IP, n=I), dict(LIMIT=4),
                           Target("isa", 8), 4, (32, 1, 1)).code
    assert "ssy" in isa


@pytest.mark.parametrize("body, line, col, message", [
    ("    i = 0\n    while tl.arange(0, 8) < i:\n        i += 1\n", 8, 11,
     "a while condition must be a scalar, not a tile of shape [8]"),
    ("    i = 0\n    while i < 4:\n        with x_ptr:\n            break\n", 10, 13,
     "break and continue may only appear in the loop body itself"),
    ("    for i in range(4):\n        pass\n    else:\n        pass\n", 7, 5,
     "for ... else is not supported"),
])
def test_loop_errors_point_at_the_source(tmp_path, body, line, col, message):
    err = compile_error(tmp_path, "loops_err", "def kern(x_ptr, n):\n" + body,
                        dict(x_ptr=P, n=I))
    assert message in str(err)
    assert (err.loc.line, err.loc.col) == (line, col), str(err)


@triton.jit
def k_search(x_ptr, y_ptr, n, key):
    # per thread: the first index >= its start whose value equals key, or -1; the loop ends
    # by return (thread-level kernel: lanes leave the loop one by one)
    i = tl.program_id(0) * tl.block_dim(0) + tl.thread_id(0)
    if i >= n:
        return
    j = i
    while j < n:
        if tl.load(x_ptr + j) == key:
            tl.store(y_ptr + i, j)
            return
        j += 1
    tl.store(y_ptr + i, -1)


def test_while_left_by_return(iss_device):
    x = np.random.default_rng(3).integers(0, 6, 70).astype(np.int32)
    y = np.full(70, -7, np.int32)
    k_search[(3,)](x, y, 70, 4, block=(32, 1, 1))
    want = [next((j for j in range(i, 70) if x[j] == 4), -1) for i in range(70)]
    assert y.tolist() == want


@needs_ptxas
def test_while_left_by_return_passes_ptxas(tmp_path):
    test_loops_pass_ptxas(tmp_path, k_search, dict(x_ptr=IP, y_ptr=IP, n=I, key=I), {},
                          (32, 1, 1))


def test_while_ir_prints_and_verifies():
    from simtgpu.compiler_backend.frontend import lower_kernel

    fn = lower_kernel(k_blocks_sum.fn, dict(x_ptr=IP, out_ptr=IP, n=I), dict(BLOCK=64), 32, 8)
    ir.verify(fn)
    text = ir.print_function(fn)
    assert " while " in text and "} do {" in text
    loop = next(op for op in fn.walk() if op.name == "while")
    cond = loop.regions[0]
    good = cond.terminator.operands
    cond.terminator.operands = [cond.args[0]]  # an i32 where the i1 test goes
    with pytest.raises(ir.IRError, match="yields"):
        ir.verify(fn)
    cond.terminator.operands = good
    ir.verify(fn)
