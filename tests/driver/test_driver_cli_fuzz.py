"""Fuzz target: the ``simtgpu run`` argument grammar (``--arg``, ``--print``, ``--grid``).

Whatever the text, parsing gives a spec or a DriverError, never another exception; a spec it
accepts builds its host array (or holds its scalar) without another exception either.
"""

from __future__ import annotations

import numpy as np
from fuzzing import fuzz_target
from hypothesis import example, given
from hypothesis import strategies as st
from simtgpu.cli.run_cmd import parse_dims
from simtgpu.driver_model import DriverError
from simtgpu.driver_model.argspec import parse_arg, parse_print

PIECES = ["a", "n", "x1", "=", "f32", "i32", "u32", "ptr", "f64", "[", "]", "8", "0", "-1",
          "3,4", "1e30", "100000000000", ":", "rand", "randint", "zeros", "ones", "arange",
          "fill", "(", ")", ",", "inf", "nan", "-5", "1.5", "0x10", "2.5", " ", "::", "::0"]
structured = st.lists(st.sampled_from(PIECES), max_size=10).map("".join)
texts = st.one_of(structured, st.text(max_size=40))


def _build(spec) -> None:
    if spec.is_array and int(np.prod(spec.shape)) <= 4096:
        out = spec.make_array(np.random.default_rng(0))
        assert out.shape == spec.shape and out.dtype.itemsize == 4


@fuzz_target(600)
@given(texts)
def test_arg_grammar_never_raises_a_foreign_exception(text: str) -> None:
    try:
        spec = parse_arg(text)
    except DriverError as e:
        assert "--arg" in str(e)
        return
    _build(spec)


@fuzz_target(500)
@given(texts)
@example("0\x1f")  # a control character that \s matched and int() refused
def test_print_and_dims_grammar_never_raise_a_foreign_exception(text: str) -> None:
    for parse in (parse_print, lambda t: parse_dims(t, "grid")):
        try:
            parse(text)
        except DriverError:
            pass
