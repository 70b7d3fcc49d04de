"""Fuzz target: broken kernel source never crashes the compiler. Small valid kernels
(elementwise with masks, a reduction, a loop, a @jit helper call, a 2-D tile with
broadcasting) are mutated line by line and token by token: lines deleted, duplicated or
swapped; names, numbers and operators replaced (strings, None, floats, huge and negative
numbers, tuples); calls given other arguments and keywords; odd Python statements inserted
(nested functions, global, del, assert, walrus, starred, stepped slices, chained
comparisons, ``is``/``in``, augmented assignment on subscripts). Each mutant that Python
parses is compiled for the ISA target with a fixed signature: it compiles, or it raises a
``SourceError`` placed inside its file; any other exception fails the test.
"""

from __future__ import annotations

import itertools
import re
import tempfile
from pathlib import Path

import pytest
from compiler_helpers import KERNEL_PRELUDE, generated_kernel
from fuzzing import fuzz_target
from hypothesis import assume, given
from hypothesis import strategies as st
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from simtgpu.errors import SourceError

TYPES = {"x_ptr": ir.ptr("f32"), "y_ptr": ir.ptr("f32"), "n": ir.I32}
CONSTEXPRS = {"BLOCK": 32}
SIGNATURE = "def kern(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n"

BASES = [
    # elementwise with masks
    """    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.where(x > 0, x * 2.0, -x)
    tl.store(y_ptr + offs, y + 1.0, mask=mask)
""",
    # a reduction
    """    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=float("-inf"))
    m = tl.max(x, axis=0)
    s = tl.sum(tl.exp(x - m), axis=0)
    tl.store(y_ptr + offs, tl.exp(x - m) / s, mask=mask)
""",
    # a loop
    """    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n, BLOCK):
        mask = i + offs < n
        acc += tl.load(x_ptr + i + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, acc)
""",
    # a @jit helper call
    """    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = helper(x, 3.0)
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def helper(a, b):
    c = a * b
    return tl.maximum(c, 0.0)
""",
    # a 2-D tile with broadcasting
    """    rows = tl.arange(0, 4)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    offs = rows * BLOCK + cols
    mask = (rows < 4) & (cols < n)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    r = tl.sum(x, axis=1)
    tl.store(y_ptr + tl.arange(0, 4), r)
""",
]

# what a token may become: other names, wrong types, odd sizes, other operators
REPLACEMENTS = [
    "x", "offs", "mask", "n", "BLOCK", "tl", "tl.float32", "tl.int32", "helper", "range",
    "tl.arange", "tl.load", "tl.store", "tl.sum", "tl.zeros", "undefined_name", "triton",
    "'text'", "None", "True", "1.5", "0", "-1", "-32", "3", "2**40", "10**30", "(1, 2)",
    "[x]", "x_ptr", "y_ptr", "tl.program_id(0)", "float('nan')", "tl.constexpr", "...",
    "+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "<", ">=", "==", "!=",
    " is ", " in ", " and ", " or ", " not ", "@", "(", ")", "[", "]", ",", ":", "=", ".",
]

# statements inserted at a line's indentation
INSERTS = [
    "def inner(a):\n    return a",
    "global offs",
    "del x",
    "assert n > 0, 'n'",
    "assert offs",
    "z = (w := offs + 1)",
    "a, *b = offs",
    "a, *b = (1, 2, 3)",
    "z = offs[::2]",
    "z = offs[1:3:-1]",
    "z = 0 < offs < n",
    "z = x is None",
    "z = offs in mask",
    "x_ptr[0] += 1",
    "offs[0] += 1",
    "offs[0] = 1",
    "z = tl.arange(0, BLOCK)[None, :, None, None]",
    "z = tl.arange(BLOCK, 0)",
    "z = tl.arange(0, 3)",
    "z = tl.arange(0, -8)",
    "z = tl.arange(0, 2**40)",
    "z = tl.zeros((BLOCK, -1), dtype=tl.float32)",
    "z = tl.zeros(BLOCK, dtype='f32')",
    "z = tl.full((BLOCK,), None, tl.int32)",
    "z = tl.load(x_ptr + offs, mask='yes')",
    "z = tl.load(x_ptr, offs, offs, offs, offs, offs, offs)",
    "z = tl.sum(offs, axis=5)",
    "z = tl.sum(offs, axis=(0, 1))",
    "z = tl.reshape(offs, (3, 5))",
    "z = offs.to(None)",
    "z = offs.to(tl.float32, bitcast=True, nope=1)",
    "z = lambda q: q",
    "z = [i for i in range(3)]",
    "z = {1: 2}",
    "z = f'{n}'",
    "z = offs @ offs",
    "z = -tl",
    "z = tl.float32 + 1",
    "z = tl(1)",
    "z = n(1)",
    "z = helper(offs)",
    "z = helper(offs, 1, 2, 3)",
    "z = helper(a=offs, c=1)",
    "z = kern(x_ptr, y_ptr, n)",
    "z = kern(x_ptr, y_ptr, n, BLOCK)",
    "z = offs.shape[7]",
    "z = offs.dtype.nope",
    "z = tl.static_range(n)",
    "for i in tl.static_range(2**20):\n    pass",
    "for i in range(0, 10, 0):\n    pass",
    "for i, j in range(3):\n    pass",
    "for i in offs:\n    pass",
    "if offs:\n    pass",
    "return offs",
    "return",
    "pass",
    "raise ValueError('x')",
    "try:\n    pass\nexcept Exception:\n    pass",
    "with x:\n    pass",
    "import math",
    "class C:\n    pass",
    "yield offs",
    "z = BLOCK[0]",
    "BLOCK = 'no'",
    "BLOCK = -4",
    "BLOCK = 2**31",
    "tl = 1",
    "range = None",
    "z = x_ptr.nope",
    "z = tl.nope",
    "z = tl.math.nope(1)",
    "z = ()",
    "z = (offs, offs)[n]",
    "z = (offs, offs)[5]",
    "z = (offs, offs)[0:1]",
    "z = max(offs, 1, 2, 3)",
    "z = min()",
    "z = abs(None)",
    "z = int('3')",
    "z = float(offs)",
    "z = len(offs)",
    "z = print(offs)",
    "z = tl.static_assert(n > 0)",
    "z = tl.device_assert(offs)",
    "z = not offs",
    "z = ~1.5",
    "z = 1 / 0",
    "z = 1 // 0",
    "z = 1 << 100",
    "z = BLOCK // 0",
    "z = BLOCK % 0",
    "z = tl.program_id(5)",
    "z = tl.program_id(n)",
    "z = tl.arange(0, n)",
    "z = tl.arange(0.5, BLOCK)",
    "z = tl.load(n)",
    "z = tl.load(x_ptr + offs, mask=offs, other=x_ptr)",
    "tl.store(offs, 1)",
    "tl.store(x_ptr + offs, x_ptr)",
    "z = x_ptr * 2",
    "z = x_ptr + 1.5",
    "z = x_ptr + x_ptr",
    "z = tl.where(offs)",
    "z = tl.where(offs < 3, x_ptr, 1.0)",
    "z = tl.sum()",
    "z = tl.dot(offs, offs)",
    "z = tl.trans(offs)",
    "z = tl.view(offs, (BLOCK, 2))",
    "z = tl.broadcast_to(offs, (3,))",
    "z = tl.expand_dims(offs, 4)",
    "z = tl.cat(offs, offs)",
    "z = tl.join(offs, offs[:, None])",
    "a, b = tl.split(offs)",
    "z = tl.permute(offs, (1, 0))",
    "z = tl.reduce(offs, 0, max)",
    "z = tl.reduce(offs, 0, helper)",
    "z = tl.associative_scan(offs, 0, None)",
    "z = tl.cumsum(offs, axis=3)",
    "z = tl.atomic_add(x_ptr, None)",
    "z = tl.atomic_cas(x_ptr, 1)",
    "z = tl.cdiv(None, 2)",
    "z = tl.cdiv(n, 0)",
    "z = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (BLOCK,))",
    "z = tl.make_block_ptr(x_ptr, shape=n, strides=1, offsets=0, block_shape=BLOCK, order=0)",
    "z = tl.advance(x_ptr, (1,))",
    "z = tl.rand(None, offs)",
    "z = tl.randint(n, offs, 5)",
    "z = tl.sort(offs, dim=3)",
    "z = tl.topk(offs, 100)",
    "z = tl.histogram(offs, -1)",
    "z = tl.gather(offs, offs, 2)",
    "z = tl.flip(offs, 4)",
    "z = tl.softmax(offs, 2)",
    "z = tl.math.exp(x_ptr)",
    "z = tl.math.pow(offs)",
    "z = tl.fma(offs, offs)",
    "z = tl.clamp(offs, 1)",
    "z = tl.full((), 1, tl.nope)",
    "z = tl.full((BLOCK,), 1, 'int32')",
    "z = tl.zeros((BLOCK,), dtype=None)",
    "z = tl.zeros((0,), dtype=tl.float32)",
    "z = tl.zeros((3,), dtype=tl.float32)",
    "z = tl.zeros((BLOCK, BLOCK, BLOCK, BLOCK), dtype=tl.float32)",
    "z = offs.to(tl.pointer_type(tl.float32))",
    "z = offs.to(x_ptr)",
    "z = x_ptr.to(tl.float32)",
    "z = offs.reshape(BLOCK * 2)",
    "z = offs.sum(axis=None, keep_dims=5)",
    "z = tl.static_assert(offs)",
    "z = tl.static_assert(False, 1)",
    "tl.static_print(offs, tl)",
    "tl.device_print(1, offs)",
    "tl.device_assert(offs > 0, None)",
    "z = tl.max_contiguous(offs, None)",
    "z = tl.multiple_of(offs, 0)",
    "z = tl.multiple_of(n, -3)",
    "z = tl.constexpr(offs)",
    "z = BLOCK.value.value",
    "z = tl.int32(offs)",
    "z = tl.float32(None)",
    "z = offs[None]",
    "z = offs[...]",
    "z = offs[0]",
    "z = offs[n]",
    "z = offs[:, :, :]",
    "z = offs.T",
    "z = offs.shape + 1",
    "z = offs.numel * None",
    "z = x.dtype(1)",
    "z = (lambda: offs)()",
    "z = (lambda q: q)(1, 2)",
    "if n:\n    return 1\nelse:\n    return 2",
    "while n:\n    break",
    "while True:\n    pass",
    "for i in range(n):\n    break\nelse:\n    pass",
    "for i in tl.range(0, n, num_stages=-1):\n    pass",
    "for i in tl.range(0, n, 0):\n    pass",
    "for i in range(0.5):\n    pass",
    "for i in range(None):\n    pass",
    "for i in range(x_ptr):\n    pass",
    "for i in range(1, 2, 3, 4):\n    pass",
]

TOKEN = re.compile(r"\d+\.?\d*(?:e-?\d+)?|\w+|\*\*|//|<<|>>|[<>=!]=|\S")
_counter = itertools.count()
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")  # mutants like `-1(x)`
_TMP = Path(tempfile.mkdtemp(prefix="frontend_fuzz_"))


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _token_spans(line: str) -> list[tuple[int, int]]:
    return [m.span() for m in TOKEN.finditer(line)]


def mutate(lines: list[str], op: tuple) -> list[str]:
    """``lines`` with one edit ``op`` applied. ``def`` and decorator lines are kept: the
    signature is fixed, and Python evaluates them at import, before the compiler runs."""
    kind, a, b, pick = op
    body = [k for k, text in enumerate(lines) if not text.lstrip().startswith(("def ", "@"))]
    i, j = body[a % len(body)], body[b % len(body)]
    out = list(lines)
    if kind == "delete":
        del out[i]
    elif kind == "duplicate":
        out.insert(i, out[i])
    elif kind == "swap":
        out[i], out[j] = out[j], out[i]
    elif kind == "insert":
        ind = _indent(out[i]) or "    "
        out[i:i] = [ind + s for s in INSERTS[pick % len(INSERTS)].split("\n")]
    else:
        spans = _token_spans(out[i])
        if spans:
            s, e = spans[b % len(spans)]
            new = REPLACEMENTS[pick % len(REPLACEMENTS)] if kind == "replace" else ""
            out[i] = out[i][:s] + new + out[i][e:]
    return out


def check_source(definition: str) -> None:
    """Compile the kernel ``definition`` (from its ``def`` line); the property: it compiles
    or raises a SourceError placed inside its own file."""
    try:
        compile(KERNEL_PRELUDE + definition, "mutant", "exec")
    except (SyntaxError, ValueError):
        return
    stem = f"fuzz_{next(_counter)}"
    kern, src = generated_kernel(_TMP, stem, definition)
    try:
        compile_function(kern.fn, TYPES, CONSTEXPRS, Target("isa", 8), 4)
    except SourceError as e:
        assert e.loc.file.endswith(f"{stem}.py"), (e.loc, e.message)
        assert 1 <= e.loc.line <= src.count("\n") + 1, (e.loc, e.message)
        assert e.loc.col >= 1, (e.loc, e.message)


OPS = st.tuples(st.sampled_from(["delete", "duplicate", "swap", "insert", "replace", "drop"]),
                st.integers(0, 63), st.integers(0, 63), st.integers(0, 511))


def test_bases_compile():
    """The unmutated kernels compile (a mutant's failures are then the mutation's)."""
    for body in BASES:
        kern, _ = generated_kernel(_TMP, f"base_{next(_counter)}", SIGNATURE + body)
        compile_function(kern.fn, TYPES, CONSTEXPRS, Target("isa", 8), 4)


@fuzz_target(150)
@given(st.integers(0, len(BASES) - 1), st.lists(OPS, min_size=1, max_size=3))
def test_mutated_kernels_fail_in_place(base, ops):
    lines = (SIGNATURE + BASES[base]).rstrip("\n").split("\n")
    for op in ops:
        lines = mutate(lines, op)
    definition = "\n".join(lines) + "\n"
    assume(definition != SIGNATURE + BASES[base])
    check_source(definition)


def placed_error(body: str) -> SourceError:
    """The SourceError compiling a kernel with ``body`` under SIGNATURE raises, checked to be
    inside its file."""
    with pytest.raises(SourceError) as e:
        check_source_strict(SIGNATURE + body)
    return e.value


def check_source_strict(definition: str) -> None:
    """Compile ``definition`` and let every exception through."""
    kern, _ = generated_kernel(_TMP, f"regress_{next(_counter)}", definition)
    compile_function(kern.fn, TYPES, CONSTEXPRS, Target("isa", 8), 4)


# inputs the fuzz target found, each once a Python exception out of the compiler
@pytest.mark.parametrize(("body", "line", "message"), [
    ("    z = -tl\n", 7, "unary '-' does not apply to module"),
    ("    z = ~1.5\n", 7, "unary '~' does not apply to float"),
    ("    z = tl.full((BLOCK,), None, tl.int32)\n", 7, "expected a number, got NoneType"),
    ("    y = tl.where(n > 0, *2.0, -1.0)\n", 7, "cannot unpack float with '*'"),
    ("    for i in tl.static_range(0, 4, 0):\n        pass\n", 7, "step must not be zero"),
    ("    for i in tl.static_range(1 << 15):\n        pass\n", 7, "more than 16384"),
    ("    z = 2**10**6\n", 7, "more than 65536 bits"),
    ("    z = 1 << 10**7\n", 7, "more than 65536 bits"),
    ("    z = tl.arange(0, BLOCK) > 10**5000\n", 7, "of 16610 bits does not fit"),
])
def test_found_inputs_fail_in_place(body, line, message):
    e = placed_error(body)
    assert e.loc.line == line and e.loc.col > 1, e
    assert message in e.message, e
