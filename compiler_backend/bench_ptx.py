"""This compiler's PTX side by side with Triton's, on the same kernels, as SASS.

Each kernel (the DSL examples, written in Triton's syntax) is compiled twice at the
same constexprs and ``num_warps``: by this compiler to PTX, and by Triton (the optional
dependency of the ``bench`` extra, ``pip install 'simtgpu[bench]'``) ahead of time, without
a GPU, through ``triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))``. Both
PTX texts go through the same ptxas (``-arch=sm_90a``, the one Triton uses for sm_90), and
the figures are read from what ptxas reports and from the SASS listing (``cuobjdump``):
static instructions (without the alignment ``NOP`` padding and the final self-branch),
registers, spilled bytes, vector memory instructions (64- and 128-bit loads and stores) and
the sizes of loop bodies (instructions between a backward branch and its target).

``python -m simtgpu.cli.bench --part ptx`` writes the table into docs/performance.md.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from simtgpu.errors import SimtgpuError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "dsl"
ARCH = "sm_90a"


class BenchUnavailable(SimtgpuError):
    """The side-by-side bench cannot run here (Triton or its tools are missing)."""


@dataclass(frozen=True)
class Case:
    """One kernel: where its source is, its Triton signature and its constexprs."""

    label: str
    file: Path
    kernel: str
    signature: dict[str, str]  # run-time parameters: *fp32, *i32, i32, fp32
    constexprs: dict
    num_warps: int = 4
    block: tuple[int, int, int] | None = None  # thread-level kernels (no Triton form)
    aligned_ints: tuple[str, ...] = ()  # sizes and strides a launch at aligned sizes gives
    # as multiples of 16 (Triton's JIT then specialises them; unit strides stay unhinted)


_F, _I, _S = "*fp32", "i32", "fp32"

CASES: tuple[Case, ...] = (
    Case("vector_add", EXAMPLES / "vector_add.py", "add_kernel",
         dict(x_ptr=_F, y_ptr=_F, output_ptr=_F, n_elements=_I), dict(BLOCK_SIZE=1024),
         aligned_ints=("n_elements",)),
    Case("saxpy", EXAMPLES / "saxpy.py", "saxpy_kernel", dict(x_ptr=_F, y_ptr=_F, a=_S, n=_I),
         dict(BLOCK=1024), aligned_ints=("n",)),
    Case("softmax", EXAMPLES / "softmax.py", "softmax_kernel",
         dict(output_ptr=_F, input_ptr=_F, input_row_stride=_I, output_row_stride=_I,
              n_rows=_I, n_cols=_I), dict(BLOCK_SIZE=1024, num_stages=2),
         aligned_ints=("input_row_stride", "output_row_stride", "n_cols")),
    Case("rmsnorm", EXAMPLES / "rmsnorm.py", "rmsnorm_kernel",
         dict(x_ptr=_F, w_ptr=_F, y_ptr=_F, stride=_I, N=_I, eps=_S), dict(BLOCK=1024),
         aligned_ints=("stride", "N")),
    Case("layernorm", EXAMPLES / "layernorm.py", "_layer_norm_fwd_fused",
         dict(X=_F, Y=_F, W=_F, B=_F, Mean=_F, Rstd=_F, stride=_I, N=_I, eps=_S),
         dict(BLOCK_SIZE=1024), aligned_ints=("stride", "N")),
    Case("sum_reduction", EXAMPLES / "sum_reduction.py", "sum_kernel",
         dict(x_ptr=_F, partial_ptr=_F, total_ptr=_F, n=_I), dict(BLOCK=1024),
         aligned_ints=("n",)),
    Case("histogram", EXAMPLES / "histogram.py", "histogram_kernel",
         dict(x_ptr="*i32", hist_ptr="*i32", n=_I), dict(BINS=16, BLOCK=1024),
         aligned_ints=("n",)),
    Case("matmul 64x64x32", EXAMPLES / "matmul.py", "matmul_kernel",
         dict(a_ptr=_F, b_ptr=_F, c_ptr=_F, M=_I, N=_I, K=_I, stride_am=_I, stride_ak=_I,
              stride_bk=_I, stride_bn=_I, stride_cm=_I, stride_cn=_I),
         dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=8),
         aligned_ints=("M", "N", "K", "stride_am", "stride_bk", "stride_cm")),
    Case("transpose", EXAMPLES / "transpose.py", "transpose_kernel",
         dict(src=_F, dst=_F, rows=_I, cols=_I), dict(TILE=32, BLOCK_ROWS=8),
         block=(32, 8, 1)),
)


@dataclass
class Sass:
    """Figures of one compiled kernel, read from ptxas and the SASS listing."""

    instructions: int
    registers: int
    spill_bytes: int
    vector_memory: int
    loops: list[int] = field(default_factory=list)  # instructions per loop body
    async_copies: int = 0  # LDGSTS: global-to-shared copies past the registers (cp.async)


@dataclass
class Row:
    case: Case
    ours: Sass
    triton: Sass | None
    note: str = ""
    triton_aligned: Sass | None = None  # with the hints of a launch at aligned sizes
    ours_aligned: Sass | None = None  # this compiler with the same specialisation


# -- tools -----------------------------------------------------------------------------------
def tools() -> dict[str, str]:
    """ptxas and cuobjdump from Triton's wheel; a clear error when Triton is missing."""
    try:
        import triton
    except ImportError:
        raise BenchUnavailable(
            "the ptx bench needs Triton: pip install 'simtgpu[bench]' (or pip install "
            "triton); it compiles ahead of time, no GPU needed") from None
    bin_dir = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    out = {}
    # Triton assembles sm_90 and newer with the newer of its two ptxas builds
    for tool, names in (("ptxas", ("ptxas-blackwell", "ptxas")), ("cuobjdump", ("cuobjdump",))):
        path = next((bin_dir / n for n in names if (bin_dir / n).exists()), None)
        if path is None:
            raise BenchUnavailable(f"Triton {triton.__version__} ships no {tool} in {bin_dir}")
        out[tool] = str(path)
    return out


# -- reading ptxas and SASS ------------------------------------------------------------------
_SASS_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
_VECTOR = re.compile(r"^(LDG|STG|LDS|STS|LD|ST)\b.*\.(64|128)\b")


def parse_sass(text: str) -> tuple[int, int, list[int]]:
    """(instructions, vector memory instructions, loop-body sizes) of one function's SASS
    listing (``cuobjdump -sass``). Alignment NOPs and the closing ``BRA`` to itself are
    not counted; a loop body is a backward branch and the instructions it jumps over."""
    addrs: list[int] = []
    ops: list[tuple[int, str, str]] = []
    for m in _SASS_LINE.finditer(text):
        addr, opcode, rest = int(m.group(1), 16), m.group(3), m.group(4).strip()
        ops.append((addr, opcode, rest))
    count = vector = 0
    loops = []
    for addr, opcode, rest in ops:
        if opcode == "NOP":
            continue
        target = re.match(r"(?:`?\(?)0x([0-9a-f]+)", rest) if opcode == "BRA" else None
        if target and int(target.group(1), 16) == addr:
            continue  # the trap loop after EXIT
        count += 1
        addrs.append(addr)
        if _VECTOR.match(opcode):
            vector += 1
        if target and int(target.group(1), 16) < addr:
            start = int(target.group(1), 16)
            loops.append(sum(1 for a, o, _ in ops if start <= a <= addr and o != "NOP"))
    return count, vector, loops


def parse_ptxas(stderr: str) -> tuple[int, int]:
    """(registers, spilled bytes: stores plus loads) from ``ptxas -v``."""
    regs = re.search(r"Used (\d+) registers", stderr)
    spills = re.findall(r"(\d+) bytes spill (?:stores|loads)", stderr)
    if regs is None:
        raise SimtgpuError(f"ptxas -v reported no register count:\n{stderr}")
    return int(regs.group(1)), sum(int(s) for s in spills)


def sass_of(ptx: str, tool: dict[str, str], name: str) -> Sass:
    """Assemble ``ptx`` with ptxas and read its figures."""
    regs, spill, listing = assemble(ptx, tool, name)
    n, vec, loops = parse_sass(listing)
    return Sass(n, regs, spill, vec, loops, len(re.findall(r"\bLDGSTS\b", listing)))


def assemble(ptx: str, tool: dict[str, str], name: str, arch: str = ARCH
             ) -> tuple[int, int, str]:
    """(registers, spilled bytes, SASS listing) of ``ptx`` through ptxas and cuobjdump."""
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = Path(tmp) / f"{name}.ptx", Path(tmp) / f"{name}.cubin"
        src.write_text(ptx)
        r = subprocess.run([tool["ptxas"], "-v", f"-arch={arch}", str(src), "-o", str(cubin)],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise SimtgpuError(f"ptxas rejected the PTX of {name}:\n{r.stderr}")
        regs, spill = parse_ptxas(r.stderr)
        d = subprocess.run([tool["cuobjdump"], "-sass", str(cubin)], capture_output=True,
                           text=True, timeout=300)
        if d.returncode != 0:
            raise SimtgpuError(f"cuobjdump failed on {name}:\n{d.stderr}")
    return regs, spill, d.stdout


# -- the two compilers -----------------------------------------------------------------------
def _load(path: Path, triton_imports: bool, tag: str):
    """The module of ``path``; with ``triton_imports`` its two compiler imports are
    Triton's (the port in reverse), written to a temporary file Triton can read."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        if not triton_imports:
            spec = importlib.util.spec_from_file_location(f"_bench_ptx_{tag}", path)
        else:
            text = path.read_text()
            text = re.sub(r"^import simtgpu\.compiler_backend as triton$", "import triton",
                          text, flags=re.M)
            text = re.sub(r"^import simtgpu\.compiler_backend\.language as tl$",
                          "import triton.language as tl", text, flags=re.M)
            tmp = Path(tempfile.mkdtemp(prefix="simtgpu-bench-ptx-")) / f"tt_{tag}.py"
            tmp.write_text(text)
            spec = importlib.util.spec_from_file_location(f"_bench_ptx_tt_{tag}", tmp)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(EXAMPLES))


def ours_compiled(case: Case, aligned: bool = False):
    """This compiler's PTX compile of ``case`` (its ``code``, ``shared_bytes`` ...); with
    ``aligned``, the specialisation a launch at aligned sizes earns (the same hints
    :func:`triton_compiled` gives Triton)."""
    from .compiler import Target, compile_function, parse_type

    mod = _load(case.file, False, case.kernel)
    fn = getattr(mod, case.kernel)
    types = {k: parse_type(v) for k, v in case.signature.items()}
    spec = {k: "a16" if v.startswith("*") else "d16" for k, v in case.signature.items()
            if aligned and (v.startswith("*") or k in case.aligned_ints)}
    return compile_function(fn.fn, types, dict(case.constexprs), Target.ptx("sm_90"),
                            case.num_warps, case.block, specialize=spec)


def ours(case: Case, aligned: bool = False) -> str:
    """This compiler's PTX of ``case`` (see :func:`ours_compiled`)."""
    return ours_compiled(case, aligned).code


def triton_compiled(case: Case, aligned: bool = False):
    """Triton's compile of ``case`` (``asm["ptx"]``, ``metadata``), FP fusion on and IEEE
    dots, as in this compiler; with ``aligned``, the hints its JIT derives from a launch at
    aligned sizes: pointers 16-byte aligned, ``case.aligned_ints`` divisible by 16."""
    os.environ["TRITON_DEFAULT_FP_FUSION"] = "1"
    os.environ["TRITON_F32_DEFAULT"] = "ieee"  # tl.dot in fp32 FMAs (Triton's default: tf32)
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"  # the cache does not key on the two above
    import triton
    from triton.backends.compiler import GPUTarget

    mod = _load(case.file, True, case.kernel)
    fn = getattr(mod, case.kernel)
    sig = dict(case.signature)
    params = list(fn.arg_names)
    cexpr = {k: v for k, v in case.constexprs.items() if k in params}
    for k in cexpr:
        sig[k] = "constexpr"
    sig = {k: sig[k] for k in params}
    attrs = {(i,): [["tt.divisibility", 16]] for i, k in enumerate(params)
             if aligned and (sig[k].startswith("*") or k in case.aligned_ints)}
    src = triton.compiler.ASTSource(fn, sig, cexpr, attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": case.num_warps})


def triton_ptx(case: Case, aligned: bool = False) -> str:
    """Triton's PTX of ``case`` (see :func:`triton_compiled`)."""
    return triton_compiled(case, aligned).asm["ptx"]


def rows(cases: tuple[Case, ...] = CASES) -> list[Row]:
    """Both compilers on every case."""
    tool = tools()
    out = []
    for i, case in enumerate(cases):
        mine = sass_of(ours(case), tool, f"ours{i}")
        if case.block is not None:
            out.append(Row(case, mine, None, "thread-level kernel (shared_array, thread_id): "
                           "no Triton form"))
            continue
        out.append(Row(case, mine, sass_of(triton_ptx(case), tool, f"triton{i}"),
                       triton_aligned=sass_of(triton_ptx(case, True), tool, f"aligned{i}"),
                       ours_aligned=sass_of(ours(case, True), tool, f"ours_aligned{i}")))
    return out


# -- the table -------------------------------------------------------------------------------
def _loops(s: Sass) -> str:
    return ", ".join(str(n) for n in s.loops) or "-"


def render(rs: list[Row], info: dict[str, str], triton_version: str) -> str:
    """The ``compiler-ptx`` section of docs/performance.md."""
    lines = [
        "## PTX side by side with Triton", "",
        "Static figures of the SASS that ptxas (the one in Triton's wheel, `-arch=sm_90a`) "
        "makes of this compiler's PTX and of Triton's, for the same kernel source at the same "
        f"constexprs and `num_warps=4`, compiled ahead of time without a GPU (Triton "
        f"{triton_version}, FP fusion on and `tl.dot` in IEEE fp32 in both). Instructions "
        "exclude alignment NOPs; *vector mem.* counts 64- and 128-bit loads and stores; "
        "*LDGSTS* the global-to-shared copies that bypass the registers (`cp.async`); "
        "*loop bodies* lists the "
        "instructions of each loop (backward branch to its target). In the first table Triton "
        "is given no alignment or divisibility hints (`ASTSource` without `attrs`), so "
        "neither side may assume aligned pointers; the second gives Triton the hints of an "
        "aligned launch. These are static counts, not timings.", "",
        f"Commit {info['commit']}, {info['date']}.", "",
        "| kernel | constexprs | SASS instr. (ours / Triton) | ratio | registers | "
        "spilled bytes | vector mem. | loop bodies | LDGSTS |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    ratios, aligned = [], []
    for r in rs:
        ce = ", ".join(f"{k}={v}" for k, v in r.case.constexprs.items())
        o, t = r.ours, r.triton
        if t is None:
            lines.append(f"| {r.case.label} | {ce} | {o.instructions} / - | - | "
                         f"{o.registers} / - | {o.spill_bytes} / - | {o.vector_memory} / - | "
                         f"{_loops(o)} / - | {o.async_copies} / - |")
            continue
        ratio = o.instructions / t.instructions
        ratios.append(ratio)
        if r.triton_aligned is not None:
            aligned.append((r, r.triton_aligned))
        lines.append(f"| {r.case.label} | {ce} | {o.instructions} / {t.instructions} | "
                     f"{ratio:.2f} | {o.registers} / {t.registers} | {o.spill_bytes} / "
                     f"{t.spill_bytes} | {o.vector_memory} / {t.vector_memory} | "
                     f"{_loops(o)} / {_loops(t)} | {o.async_copies} / {t.async_copies} |")
    notes = [r for r in rs if r.note]
    if ratios:
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        lines += ["", f"Geometric mean of the SASS instruction ratio over {len(ratios)} "
                  f"kernels: **{geo:.2f}** (below 1: fewer instructions than Triton)."]
    for r in notes:
        lines.append(f"{r.case.label}: {r.note}.")
    if aligned:
        lines += ["", "With the hints a launch at aligned sizes earns (pointers 16-byte "
                  "aligned, sizes and row strides divisible by 16; unit strides left "
                  "unhinted), given to both compilers (Triton's `tt.divisibility` attributes; "
                  "this compiler's argument specialisation, docs/compiler.md), both "
                  "vectorise their memory accesses:", "",
                  "| kernel | SASS instr. (ours / Triton aligned) | ratio | registers | "
                  "vector mem. | loop bodies |", "| --- | ---: | ---: | ---: | ---: | --- |"]
        ar = []
        for r, t in aligned:
            o = r.ours_aligned or r.ours
            ar.append(o.instructions / t.instructions)
            lines.append(f"| {r.case.label} | {o.instructions} / {t.instructions} | "
                         f"{ar[-1]:.2f} | {o.registers} / {t.registers} | "
                         f"{o.vector_memory} / {t.vector_memory} | {_loops(o)} / {_loops(t)} |")
        geo = math.exp(sum(math.log(x) for x in ar) / len(ar))
        lines += ["", f"Geometric mean against aligned Triton: **{geo:.2f}**."]
    lines += ["", "Target (issue 19): at most 1.0x Triton's static SASS per kernel with "
              "aligned sizes; fp32 matmul loop bodies within 1.05x. Command: "
              "`python -m simtgpu.cli.bench --part ptx` (library: "
              "`simtgpu.compiler_backend.bench_ptx`; needs `pip install 'simtgpu[bench]'`)."]
    return "\n".join(lines)


def triton_version() -> str:
    import triton

    return triton.__version__


def main() -> int:
    try:
        rs = rows()
    except BenchUnavailable as e:
        print(e.render(), file=sys.stderr)
        return 1
    for r in rs:
        print(r.case.label, r.ours, r.triton)
    return 0


if __name__ == "__main__":
    sys.exit(main())
