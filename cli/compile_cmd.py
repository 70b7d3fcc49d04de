"""``simtgpu compile``: compile one DSL kernel from a Python file to this ISA or to PTX.

    simtgpu compile examples/dsl/vector_add.py --kernel add_kernel --target isa \\
        -o build/add.s -D BLOCK_SIZE=64
    simtgpu compile examples/dsl/softmax.py --kernel softmax_kernel --target ptx \\
        -o build/softmax.ptx -D BLOCK_SIZE=128 -D num_stages=2
    simtgpu compile ... --emit ir          # the optimised IR instead of code

Parameter types: a name ending in ``ptr`` is a float32 pointer, anything else an int32;
``--sig NAME=TYPE`` (``*fp32``, ``*fp16``, ``*bf16``, ``*i32``, ``fp32``, ``i32``) says otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any

from simtgpu.errors import SimtgpuError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "compile", help="compile a DSL kernel (Python) to this ISA or PTX",
        description="Compile a @jit kernel from a Python file to assembly (.s), an object "
        "file (.sgo) or PTX.")
    p.add_argument("file", metavar="FILE.py", help="Python file that defines the kernel")
    p.add_argument("--kernel", "-k", required=True, help="name of the @jit function")
    p.add_argument("--target", choices=("isa", "ptx"), default="isa")
    p.add_argument("-o", "--output", help="output file (.s, .sgo or .ptx); default stdout")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                   help="value of a tl.constexpr parameter (repeatable)")
    p.add_argument("--sig", action="append", default=[], metavar="NAME=TYPE",
                   help="type of a run-time parameter: *fp32, *i32, fp32 or i32")
    p.add_argument("--emit", choices=("code", "ir"), default="code",
                   help="write the optimised IR instead of code")
    p.add_argument("--num-warps", type=_power_of_two(1, 32), default=4,
                   help="warps per program, a power of two from 1 to 32 (default 4)")
    p.add_argument("--block", help="block shape X[,Y[,Z]] for thread-level kernels")
    p.add_argument("--warp-size", type=_power_of_two(4, 32), default=None,
                   help="lanes per warp for the isa target (default: the config's)")
    p.add_argument("--config", default="small", help="GPU configuration for the isa target")
    p.add_argument("--arch", default="sm_90", help="PTX target (sm_80 or sm_90)")
    p.add_argument("--no-fp-fusion", dest="fp_fusion", action="store_false",
                   help="keep multiplies and adds separate (no fused multiply-add "
                   "contraction; Triton's enable_fp_fusion=False)")
    p.set_defaults(func=run)


def _power_of_two(lo: int, hi: int):
    """An argparse type: a power of two in [lo, hi] (a usage error otherwise)."""
    def parse(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
        if not (lo <= value <= hi and value & (value - 1) == 0):
            raise argparse.ArgumentTypeError(f"expected a power of two from {lo} to {hi}, "
                                             f"not {value}")
        return value
    return parse


def _value(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for it in items:
        if "=" not in it:
            raise SimtgpuError(f"{what} '{it}': expected NAME=VALUE")
        k, v = it.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def load_kernel(path: str, name: str):
    """Import ``path`` and return its ``@jit`` kernel ``name``."""
    from simtgpu.compiler_backend import JITFunction

    p = Path(path)
    if not p.is_file():
        raise SimtgpuError(f"{path}: no such file")
    spec = importlib.util.spec_from_file_location(f"_simtgpu_kernel_{p.stem}", p)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(p.parent.resolve()))
    try:
        spec.loader.exec_module(module)
    except SimtgpuError:
        raise
    except Exception as e:  # noqa: BLE001 - the user's file failed to import
        raise SimtgpuError(f"{path}: importing it failed: {type(e).__name__}: {e}"
                                  ) from None
    finally:
        sys.path.pop(0)
    k = getattr(module, name, None)
    if not isinstance(k, JITFunction):
        found = [n for n, v in vars(module).items() if isinstance(v, JITFunction)]
        raise SimtgpuError(f"{path}: no @jit kernel named '{name}'"
                                  + (f" (kernels: {', '.join(found)})" if found else ""))
    return k


def run(args: argparse.Namespace) -> int:
    from simtgpu.compiler_backend.compiler import Target, compile_function, parse_type
    from simtgpu.driver_model import get_config

    k = load_kernel(args.file, args.kernel)
    src = k.src
    defines = {n: _value(v) for n, v in _pairs(args.defines, "-D").items()}
    for n in defines:
        if n not in src.params:
            raise SimtgpuError(f"-D {n}: {args.kernel} has no parameter '{n}'")
    sig = _pairs(args.sig, "--sig")
    types = {}
    for pname in src.params:
        if pname in src.constexpr_params or pname in defines:
            continue
        text = sig.pop(pname, "*fp32" if pname.lower().endswith("ptr") else "i32")
        try:
            types[pname] = parse_type(text)
        except ValueError as e:
            raise SimtgpuError(f"--sig {pname}: {e}") from None
    if sig:
        raise SimtgpuError(f"--sig: {args.kernel} has no parameter(s) "
                                  f"{', '.join(sig)}")
    config = None
    if args.target == "ptx":
        target = Target.ptx(args.arch)
    else:
        try:
            config = get_config(args.config)
        except Exception as e:  # noqa: BLE001 - unknown configuration name
            raise SimtgpuError(f"--config: {e}") from None
        lanes = args.warp_size or config.lanes
        if lanes != config.lanes:
            config = None  # another warp size than the configuration's: no limits to check
        target = Target("isa", lanes)
    block = None
    if args.block:
        try:
            dims = [int(x) for x in args.block.split(",")]
        except ValueError:
            dims = []
        if not 1 <= len(dims) <= 3 or min(dims) < 1:
            raise SimtgpuError(f"--block {args.block}: expected X[,Y[,Z]], each at "
                                      "least 1")
        block = tuple(dims + [1] * (3 - len(dims)))
    ck = compile_function(k.fn, types, defines, target, args.num_warps, block,
                          enable_fp_fusion=args.fp_fusion, config=config)
    text = ck.ir_text if args.emit == "ir" else ck.code
    out = args.output
    if out is None:
        sys.stdout.write(text)
        return 0
    if out.endswith(".sgo") and args.emit == "code" and args.target != "isa":
        raise SimtgpuError("-o .sgo needs --target isa")
    if Path(out).is_dir():
        raise SimtgpuError(f"-o {out}: is a directory (name the output file)")
    try:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        if out.endswith(".sgo") and args.emit == "code":
            ck.object_file().write(out)
        else:
            Path(out).write_text(text)
    except OSError as e:
        raise SimtgpuError(f"-o {out}: cannot write: {e.strerror or e}") from None
    size = ""
    if ck.stats.get("registers"):
        spilled = ck.stats.get("spilled", 0)
        local = ck.stats.get("local_bytes", 0)
        size = f", {ck.stats['registers']} registers, {spilled} spilled" + (
            f" to {ck.stats['spill_space']} memory" if spilled else "") + (
            f", {local} bytes per thread: simtgpu run --local-bytes {local}" if local else "")
    print(f"{args.kernel}: {args.target} -> {out} ({ck.compile_ms:.1f} ms{size})",
          file=sys.stderr)
    return 0
