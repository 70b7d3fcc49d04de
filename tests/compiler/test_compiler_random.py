"""Randomised differential test: random elementwise float kernels (masks, run-time loops,
branches, where/maximum/minimum) on the ISS against the same operations in NumPy, bit for
bit; where the compiler contracts a product into a fused multiply-add (its only use is an
add or subtract, after equal subexpressions are merged) the model rounds once too. A fixed
set of seeds keeps the run short; widen SEEDS for a longer search (400 seeds passed when
this test was written; 150 more with the contraction model)."""

import random
import re

import numpy as np
import pytest
from compiler_helpers import generated_kernel, regress_seeds
from simtgpu.sim.numerics import bits_to_f32, f32_to_bits, ffma

SEEDS = range(24)

_F_BIN = ["+", "-", "*"]
_NP = {"+": "np.add", "-": "np.subtract", "*": "np.multiply"}


def _tree(rng: random.Random, depth: int, names: list[str]) -> tuple:
    """A random float32 expression as a tree of tuples (equal subtrees are equal tuples)."""
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.2:
            return ("const", rng.choice(["0.5", "1.25", "2.0", "-0.75"]))
        return ("leaf", rng.choice(names))
    kind = rng.random()
    a = _tree(rng, depth - 1, names)
    b = _tree(rng, depth - 1, names)
    if kind < 0.55:
        return ("bin", rng.choice(_F_BIN), a, b)
    if kind < 0.7:
        return ("max", a, b)
    if kind < 0.8:
        return ("min", a, b)
    return ("where", a, b, _tree(rng, depth - 1, names))


def _kernel_text(t: tuple) -> str:
    if t[0] in ("const", "leaf"):
        return t[1]
    if t[0] == "bin":
        return f"({_kernel_text(t[2])} {t[1]} {_kernel_text(t[3])})"
    if t[0] in ("max", "min"):
        return f"tl.{t[0]}imum({_kernel_text(t[1])}, {_kernel_text(t[2])})"
    a, b, c = (_kernel_text(x) for x in t[1:])
    return f"tl.where({a} < {b}, {c}, {b})"


def _constant(t: tuple) -> bool:
    """Folded at compile time (the compiler folds +, -, * of constants, not max/min)."""
    return t[0] == "const" or (t[0] == "bin" and _constant(t[2]) and _constant(t[3]))


def _operands(t: tuple) -> list[tuple]:
    """The values an op of ``t`` reads, one entry per operand (where reads b twice)."""
    if t[0] == "bin":
        return [t[2], t[3]]
    if t[0] in ("max", "min"):
        return [t[1], t[2]]
    if t[0] == "where":
        return [t[1], t[2], t[3], t[2]]
    return []


def _uses(root: tuple) -> dict[tuple, int]:
    """Operand uses of each subtree after common-subexpression elimination: equal subtrees
    are one value, and each distinct op counts its operands once."""
    uses: dict[tuple, int] = {}
    seen: set[tuple] = set()

    def visit(t: tuple) -> None:
        if t in seen or _constant(t):
            return
        seen.add(t)
        for o in _operands(t):
            uses[o] = uses.get(o, 0) + 1
            visit(o)

    visit(root)
    return uses


def _numpy_text(t: tuple, uses: dict[tuple, int]) -> str:
    """The NumPy model of ``t``: float32 operations, and one rounding where the compiler
    contracts a product whose only use is an add or subtract (the left one if both are)."""
    if t[0] == "const":
        return f"np.float32({t[1]})"
    if t[0] == "leaf":
        return t[1]
    if t[0] == "bin":
        op, a, b = t[1:]
        if op in "+-":
            for i, m in enumerate((a, b)):
                if m[0] == "bin" and m[1] == "*" and not _constant(m) and uses.get(m) == 1:
                    x, y = (_numpy_text(v, uses) for v in m[2:])
                    c = _numpy_text(b if i == 0 else a, uses)
                    if op == "-":
                        c, x = (f"-{c}", x) if i == 0 else (c, f"-{x}")
                    return f"fma({x}, {y}, {c})"
        return f"{_NP[op]}({_numpy_text(a, uses)}, {_numpy_text(b, uses)}, dtype=np.float32)"
    if t[0] in ("max", "min"):
        return f"np.{t[0]}imum({_numpy_text(t[1], uses)}, {_numpy_text(t[2], uses)})"
    a, b, c = (_numpy_text(x, uses) for x in t[1:])
    return f"np.where({a} < {b}, {c}, {b})"


def _fma(a, b, c) -> np.ndarray:
    """a * b + c rounded once, flush-to-zero in and out (the ISA's ffma), elementwise."""
    bits = ffma(*(f32_to_bits(np.asarray(v, np.float32)) for v in (a, b, c)))
    return np.asarray(bits_to_f32(bits), np.float32)


def _make(tmp_path, seed: int):
    rng = random.Random(seed)
    block = rng.choice([8, 16, 32, 64, 128])
    tree = _tree(rng, rng.randint(1, 4), ["a", "b", "c"])
    if not re.search(r"\b[abc]\b", _kernel_text(tree)):
        # a constant expression would be a scalar: keep r a tile, as a kernel would
        tree = ("bin", "+", tree, ("leaf", "a"))
    expr_k = _kernel_text(tree)
    uses = _uses(tree)
    uses[tree] = uses.get(tree, 0) + 2  # r: stored, carried or branched on, never added here
    expr_n = _numpy_text(tree, uses)
    loop = rng.random() < 0.4
    branch = rng.random() < 0.4
    body = [
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
        "    m = offs < n",
        "    a = tl.load(a_ptr + offs, mask=m, other=1.0)",
        "    b = tl.load(b_ptr + offs, mask=m, other=1.0)",
        "    c = tl.load(c_ptr + offs, mask=m, other=1.0)",
        f"    r = {expr_k}",
    ]
    ref = [f"r = {expr_n}"]
    if loop:
        body += ["    for i in range(0, k):", "        r = r * 0.5 + a"]
        ref += ["for i in range(k):", "    r = fma(r, np.float32(0.5), a)"]  # contracted
    if branch:
        body += ["    if k > 1:", "        r = r - b", "    else:", "        r = r + c"]
        if not loop and tree[0] == "bin" and tree[1] == "*" and not _constant(tree):
            # r is still a lazy tile: each branch computes the product and fuses it
            x, y = (_numpy_text(v, uses) for v in tree[2:])
            ref += [f"r = fma({x}, {y}, -b) if k > 1 else fma({x}, {y}, c)"]
        else:
            ref += ["r = np.subtract(r, b) if k > 1 else np.add(r, c)"]
    body.append("    tl.store(out_ptr + offs, r, mask=m)")
    kern, src = generated_kernel(
        tmp_path, f"rand_{seed}",
        "def kern(a_ptr, b_ptr, c_ptr, out_ptr, n, k, BLOCK: tl.constexpr):\n"
        + "\n".join(body) + "\n")
    return kern, block, "\n".join(ref), src


@pytest.mark.parametrize("seed", SEEDS)
def test_random_expression_kernel(iss_device, tmp_path, seed):
    kern, block, ref, src = _make(tmp_path, seed)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    k = int(rng.integers(0, 4))
    a, b, c = (rng.uniform(0.5, 2.0, n).astype(np.float32) for _ in range(3))
    out = np.zeros(n, np.float32)
    kern[(-(-n // block),)](a, b, c, out, n, k, BLOCK=block)
    env = {"np": np, "a": a, "b": b, "c": c, "k": k, "fma": _fma}
    exec(ref, env)  # noqa: S102 - the reference is generated by this test
    want = np.broadcast_to(np.asarray(env["r"], dtype=np.float32), (n,))
    assert out.tobytes() == want.tobytes(), src


@pytest.mark.regress
def test_random_expression_kernel_regress(iss_device, tmp_path, request):
    for seed in regress_seeds(request):
        test_random_expression_kernel(iss_device, tmp_path, seed)
