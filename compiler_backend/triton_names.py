"""``triton.language.__all__`` against this language: which names exist here and, for each
missing one, why. docs/compiler.md carries the table this module renders; a test keeps the
two, and the ``tl`` namespace, consistent. After adding a name to the language, refresh it:
``python -m simtgpu.compiler_backend.triton_names --write``.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

TRITON_LANGUAGE_ALL = (
    "PropagateNan TRITON_MAX_TENSOR_NUMEL load_tensor_descriptor store_tensor_descriptor "
    "make_tensor_descriptor tensor_descriptor abs add advance arange argmax argmin "
    "associative_scan assume atomic_add atomic_and atomic_cas atomic_max atomic_min atomic_or "
    "atomic_xchg atomic_xor bfloat16 bitonic_merge block_type broadcast broadcast_to cat cast "
    "cdiv ceil clamp const constexpr constexpr_function cos cumprod cumsum debug_barrier "
    "device_assert device_print div_rn dot dot_scaled dtype erf exp exp2 expand_dims extra "
    "fdiv flip float16 float32 float64 float8e4b15 float8e4nv float8e4b8 float8e5 float8e5b16 "
    "floor fma full gather histogram inline_asm_elementwise interleave int1 int16 int32 int64 "
    "int8 join load log log2 make_block_ptr math max max_constancy max_contiguous maximum min "
    "minimum multiple_of num_programs pair_uniform_to_normal permute philox philox_impl pi32_t "
    "pointer_type program_id rand rand4x randint randint4x randn randn4x range ravel reduce "
    "reduce_or reshape rsqrt slice sigmoid sin softmax sort split sqrt sqrt_rn static_assert "
    "static_print static_range store sum swizzle2d tensor topk trans tuple uint16 uint32 "
    "uint64 uint8 uint_to_uniform_float umulhi view void warp_id where xor_sum zeros "
    "zeros_like").split()
"""``triton.language.__all__`` of Triton 3.x (the main branch of 2025: 136 names)."""

_TYPES = ("registers and memory words are 32-bit; of the narrower types float16, bfloat16 "
          "and the 8- and 16-bit integers exist, not the 8-bit floats (issue 12)")
REASONS: dict[str, str] = {
    **{n: _TYPES for n in ("float8e4b15", "float8e4nv", "float8e4b8", "float8e5",
                           "float8e5b16")},
    "float64": "the ISA has no double-precision arithmetic (int64 is a register pair with "
               "32-bit integer operations; a float64 would need a software float library)",
    "slice": "an object of Triton's front end (what `:` in `x[None, :]` becomes); indexing "
             "with `:` and `None` works here without it",
    "dot_scaled": "needs the 8-bit and 4-bit float types",
    "inline_asm_elementwise": "inline PTX has no meaning on this ISA",
    "TRITON_MAX_TENSOR_NUMEL": "the limit here is per thread (tiles.MAX_ELEMENTS_PER_THREAD), "
                               "reported when a tile is made",
    "block_type": "a type object of Triton's IR; kernels here do not name it",
    "pi32_t": "a type object of Triton's IR; kernels here do not name it",
    "void": "a type object of Triton's IR; kernels here do not name it",
    "const": "pointer constness is not tracked (the annotation would be accepted as no-op)",
    "tuple": "tuples of run-time values as kernel arguments are not supported",
}


ERROR_ONLY: dict[str, str] = {}
"""Names the language defines only to give a clear compile error: counted as missing."""


def coverage(tl=None) -> list[tuple[str, bool, str]]:
    """(name, present here, why missing) for each name of ``triton.language.__all__``."""
    if tl is None:
        from . import language as tl
    out = []
    for n in TRITON_LANGUAGE_ALL:
        ok = n in tl.__all__ and n not in ERROR_ONLY
        out.append((n, ok, "" if ok else ERROR_ONLY.get(n) or REASONS.get(
            n, "(no reason given)")))
    return out


def render_table() -> str:
    rows = coverage()
    have = sum(1 for _, ok, _ in rows if ok)
    out = [f"{have} of the {len(rows)} names of Triton 3.x `triton.language.__all__` exist "
           "here. Missing names, and why:", "", "| name | why it is missing |", "| --- | --- |"]
    out += [f"| `{n}` | {why} |" for n, ok, why in rows if not ok]
    out += ["", "Present: " + ", ".join(f"`{n}`" for n, ok, _ in rows if ok) + "."]
    return "\n".join(out) + "\n"


BEGIN = "<!-- triton-names:begin (python -m simtgpu.compiler_backend.triton_names --write) -->"
END = "<!-- triton-names:end -->"


def docs_path() -> Path:
    return Path(__file__).resolve().parent.parent / "docs" / "compiler.md"


def current_docs_table(text: str) -> str | None:
    m = re.search(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), text, re.S)
    return m.group(1) if m else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite the table in docs/compiler.md")
    args = ap.parse_args(argv)
    table = render_table()
    if not args.write:
        print(table, end="")
        return 0
    path = docs_path()
    text = path.read_text()
    new = re.sub(re.escape(BEGIN) + r"\n.*?" + re.escape(END),
                 lambda _: f"{BEGIN}\n{table}{END}", text, flags=re.S)
    path.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
