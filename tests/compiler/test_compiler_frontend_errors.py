"""User mistakes in kernels are SourceErrors at this file's line and column, with a
one-line explanation, never a compiler traceback."""

from pathlib import Path

import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from simtgpu.errors import SourceError

HERE = Path(__file__).resolve()
LINES = HERE.read_text().splitlines()


def where(marker: str) -> tuple[int, int]:
    """(line, column) of the statement tagged with ``# <- marker`` in this file."""
    for i, text in enumerate(LINES, 1):
        if text.rstrip().endswith(f"# <- {marker}"):
            return i, len(text) - len(text.lstrip()) + 1
    raise AssertionError(marker)


P = ir.ptr("f32")


ISA8 = Target("isa", 8)


def compile_(k, types=None, cexpr=None, target=ISA8):
    types = types if types is not None else {"x_ptr": P, "n": ir.I32}
    return compile_function(k.fn, types, cexpr or {"BLOCK": 32}, target)


@triton.jit
def k_undefined(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, undefined_thing)  # noqa: F821  # <- undefined


@triton.jit
def k_while(x_ptr, n, BLOCK: tl.constexpr):
    i = 0
    while i < 3:  # <- while
        i += 1
    else:
        i = 5


@triton.jit
def k_shapes(x_ptr, n, BLOCK: tl.constexpr):
    a = tl.arange(0, BLOCK)
    b = tl.arange(0, 2 * BLOCK)
    c = a + b  # <- shapes
    tl.store(x_ptr + c, 1.0)


@triton.jit
def k_not_constexpr(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, n)  # <- constexpr
    tl.store(x_ptr + offs, 1.0)


@triton.jit
def k_tile_if(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if offs < n:  # <- tile_if
        tl.store(x_ptr + offs, 1.0)


@triton.jit
def k_loop_type(x_ptr, n, BLOCK: tl.constexpr):
    acc = 0
    for i in range(0, n):  # <- loop_type
        acc += tl.load(x_ptr + i)
    tl.store(x_ptr, acc)


@triton.jit
def k_python_call(x_ptr, n, BLOCK: tl.constexpr):
    v = tl.load(x_ptr + tl.arange(0, BLOCK))
    w = sorted(v)  # <- python_call
    tl.store(x_ptr, w)


@triton.jit
def k_return_value(x_ptr, n, BLOCK: tl.constexpr):
    return n  # <- return_value


@triton.jit
def k_pow2(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, 12)  # <- pow2
    tl.store(x_ptr + offs, 1.0)


@triton.jit
def k_store_shape(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.zeros((2 * BLOCK,), dtype=tl.float32)
    tl.store(x_ptr + offs, v)  # <- store_shape


@triton.jit
def k_bad_pointer(x_ptr, n, BLOCK: tl.constexpr):
    tl.store(n + tl.arange(0, BLOCK), 1.0)  # <- bad_pointer


@triton.jit
def k_recursive(x_ptr, n, BLOCK: tl.constexpr):
    k_recursive(x_ptr, n, BLOCK)  # <- recursive


@triton.jit
def helper_a(x_ptr, n, BLOCK: tl.constexpr):
    helper_b(x_ptr, n, BLOCK)


@triton.jit
def helper_b(x_ptr, n, BLOCK: tl.constexpr):
    helper_a(x_ptr, n, BLOCK)  # <- mutual


@triton.jit
def k_mutual(x_ptr, n, BLOCK: tl.constexpr):
    helper_a(x_ptr, n, BLOCK)


@triton.jit
def k_huge(x_ptr, n, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, 1 << 20), 1.0)  # <- huge


LOAD_OPTIONS = {"other": 7.0}
BOGUS_OPTIONS = {"bogus": 1}
LOOP_OPTIONS = {"num_stages": 2, "bogus": 1}


@triton.jit
def k_kwargs_tensor(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, **offs)  # <- kwargs_tensor


@triton.jit
def k_kwargs_unknown(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, **BOGUS_OPTIONS)  # <- kwargs_unknown


@triton.jit
def k_kwargs_twice(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n, other=1.0, **LOAD_OPTIONS)  # <- kwargs_twice
    tl.store(x_ptr + offs, v)


@triton.jit
def k_kwargs_number(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, **BLOCK)  # <- kwargs_number


@triton.jit
def k_kwargs_literal(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, **{"mask": None})  # <- kwargs_literal


@triton.jit
def k_kwargs_helper(x_ptr, n, BLOCK: tl.constexpr):
    k_store_shape(x_ptr, n, **BOGUS_OPTIONS)  # <- kwargs_helper


@triton.jit
def k_kwargs_loop(x_ptr, n, BLOCK: tl.constexpr):
    for i in tl.range(0, 4, **LOOP_OPTIONS):  # <- kwargs_loop
        tl.store(x_ptr + i, 1.0)


CASES = [
    (k_kwargs_tensor, "kwargs_tensor", "cannot unpack a tensor with '**' (it takes a "
     "compile-time dict of keyword arguments)"),
    (k_kwargs_unknown, "kwargs_unknown", "tl.store(): got an unexpected keyword argument 'bogus'"),
    (k_kwargs_twice, "kwargs_twice", "keyword argument 'other' given twice"),
    (k_kwargs_number, "kwargs_number", "cannot unpack int with '**'"),
    (k_kwargs_literal, "kwargs_literal", "a dict literal is not supported"),
    (k_kwargs_helper, "kwargs_helper", "k_store_shape has no parameter 'bogus'"),
    (k_kwargs_loop, "kwargs_loop", "unsupported loop option 'bogus'"),
    (k_huge, "huge", "a tile of shape (1048576,) is 32768 elements per thread on 32 threads"),
    (k_recursive, "recursive", "recursive call (k_recursive -> k_recursive)"),
    (k_mutual, "mutual", "recursive call (k_mutual -> helper_a -> helper_b -> helper_a)"),
    (k_undefined, "undefined", "name 'undefined_thing' is not defined"),
    (k_while, "while", "while ... else is not supported"),
    (k_shapes, "shapes", "do not broadcast"),
    (k_not_constexpr, "constexpr", "compile-time integer"),
    (k_tile_if, "tile_if", "must be a scalar"),
    (k_loop_type, "loop_type", "starts as i32"),
    (k_python_call, "python_call", "cannot call 'sorted' on tensors"),
    (k_return_value, "return_value", "cannot return a value"),
    (k_pow2, "pow2", "powers of two"),
    (k_store_shape, "store_shape", "do not broadcast"),
    (k_bad_pointer, "bad_pointer", "expected a pointer"),
]


@pytest.mark.parametrize("kernel, marker, message", CASES, ids=[c[1] for c in CASES])
def test_error_points_at_file_line_col(kernel, marker, message):
    line, col = where(marker)
    with pytest.raises(SourceError) as ei:
        compile_(kernel)
    e = ei.value
    assert Path(e.loc.file).resolve() == HERE
    assert e.loc.line == line
    assert message in e.message
    # the column is the statement's or one of its sub-expressions on that line
    assert e.loc.col >= col
    text = e.render()
    assert text.startswith(f"{e.loc.file}:{line}:{e.loc.col}: error: ")
    assert "Traceback" not in text and "\n" in text  # message, source line and caret


def test_missing_constexpr_value():
    with pytest.raises(SourceError, match="constexpr parameter 'BLOCK' needs a value"):
        compile_function(k_pow2.fn, {"x_ptr": P, "n": ir.I32}, {}, Target("isa", 8))


def test_spill_area_out_of_reach_is_a_clear_error():
    from simtgpu.compiler_backend.errors import CompileError
    from simtgpu.compiler_backend.isa_codegen import SpillStride, spill_gpr

    with pytest.raises(CompileError, match="spill area lies beyond the reach"):
        spill_gpr([], [], [(ir.Value(ir.I32), 1024)], SpillStride())


def test_cli_reports_without_traceback(tmp_path, capsys):
    from simtgpu.cli.main import main

    src = tmp_path / "bad.py"
    src.write_text("import simtgpu.compiler_backend as triton\n"
                   "import simtgpu.compiler_backend.language as tl\n\n"
                   "@triton.jit\n"
                   "def k(x_ptr, BLOCK: tl.constexpr):\n"
                   "    tl.store(x_ptr + tl.arange(0, BLOCK), nope)\n")
    rc = main(["compile", str(src), "--kernel", "k", "-D", "BLOCK=8"])
    err = capsys.readouterr().err
    assert rc == 1
    assert f"{src}:6:" in err and "error: name 'nope' is not defined" in err
    assert "Traceback" not in err


@triton.jit
def k_kwargs_dict(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n, **LOAD_OPTIONS)
    for i in tl.range(0, 2, **dict(num_stages=1)):
        v += i
    tl.store(x_ptr + offs, v, mask=offs < n)


@triton.jit
def k_kwargs_written_out(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n, other=7.0)
    for i in tl.range(0, 2, num_stages=1):
        v += i
    tl.store(x_ptr + offs, v, mask=offs < n)


def test_double_star_of_a_compile_time_dict_passes_its_keywords():
    # (``**`` was once dropped without a word: the load lost its other=7.0)
    got, want = compile_(k_kwargs_dict), compile_(k_kwargs_written_out)
    for form in ("ir", "isa"):
        assert (got.asm[form].replace("k_kwargs_dict", "K")
                == want.asm[form].replace("k_kwargs_written_out", "K")), form
