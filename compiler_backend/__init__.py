"""simtgpu.compiler_backend: a Triton-like kernel DSL compiled to this GPU's ISA and to PTX.

Port a Triton kernel by changing its imports::

    import simtgpu.compiler_backend as triton
    import simtgpu.compiler_backend.language as tl

    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m),
                 mask=m)

    add[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)

See docs/compiler.md.
"""

from . import language, runtime
from .autotune import Config, autotune, heuristics
from .compiler import CompiledKernel, Target, compile_function, parse_type
from .jit import JITFunction, LaunchError, cdiv, get_device, jit, next_power_of_2, set_device

__all__ = ["CompiledKernel", "Config", "JITFunction", "LaunchError", "Target", "autotune",
           "cdiv", "compile_function", "get_device", "heuristics", "jit", "language",
           "next_power_of_2", "parse_type", "runtime", "set_device"]
