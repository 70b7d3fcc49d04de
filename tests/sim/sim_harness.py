"""Run small assembly kernels on the ISS for the tests in this folder.

``run`` assembles ``src`` (one ``.kernel`` named ``k``), lays out the named buffers in
device memory after the parameter block, passes their addresses (and any scalars) as the
kernel's parameters in order, launches, and returns the buffers read back.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import numpy as np
from simtgpu.assembler import assemble
from simtgpu.errors import SourceErrors
from simtgpu.sim import GlobalMemory, Iss, LaunchStats

PARAM_ADDR = 0x1000
BUF_BASE = 0x2000

# Prologue shared by most kernels: r1 = global thread index, r2 = r1 * 4.
GID = """
    s2r r1, ctaid.x
    s2r r2, ntid.x
    mul r1, r1, r2
    s2r r2, tid.x
    add r1, r1, r2
    shli r2, r1, 2
"""


@dataclass
class Result:
    out: dict[str, np.ndarray]
    stats: LaunchStats
    mem: GlobalMemory
    trace: list[dict] | None


def run(src: str, *, warp_size: int = 32, grid=(1, 1, 1), block=(32, 1, 1),
        params: list[tuple[str, object]] = (), mem_bytes: int = 1 << 20,
        trace: bool = False, budget: int = 5_000_000, stack_depth: int = 16,
        num_cores: int = 1, kernel: str = "k") -> Result:
    """``params``: (name, value) in parameter order; a value that is an array becomes a
    buffer (its address is passed), an int is passed as itself."""
    try:
        obj = assemble(src)
    except SourceErrors as e:  # show the assembler's messages, not just a count
        raise AssertionError(e.render()) from None
    k = obj.kernel(kernel)
    mem = GlobalMemory(mem_bytes)
    words, addrs, addr = [], {}, BUF_BASE
    for name, value in params:
        if isinstance(value, np.ndarray):
            arr = np.ascontiguousarray(value).reshape(-1).view(np.uint32)
            mem.write_words(addr, arr)
            addrs[name] = (addr, arr.size)
            words.append(addr)
            addr += 4 * arr.size + 64
        else:
            words.append(int(value) & 0xFFFFFFFF)
    if words:
        mem.write_words(PARAM_ADDR, np.array(words, dtype=np.uint32))
    iss = Iss(mem, warp_size=warp_size, instruction_budget=budget, stack_depth=stack_depth,
              num_cores=num_cores)
    stream = io.StringIO() if trace else None
    stats = iss.launch(obj.code, k.entry, grid, block, PARAM_ADDR, 4 * len(words),
                       k.shared_bytes, trace=stream)
    out = {name: mem.read_words(a, n) for name, (a, n) in addrs.items()}
    lines = None
    if trace:
        lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    return Result(out, stats, mem, lines)


def kernel(body: str, params: str = "out", shared: int = 0) -> str:
    """A kernel ``k`` with the given parameter names (all ``ptr`` unless ``name:type``)."""
    lines = [".kernel k"]
    for p in params.split():
        name, _, ty = p.partition(":")
        lines.append(f".param {name}, {ty or 'ptr'}")
    if shared:
        lines.append(f".shared {shared}")
    return "\n".join(lines) + "\n" + body + "\n    exit\n.end\n"


def elementwise(body: str, inputs: dict[str, int]) -> str:
    """A kernel ``k`` in which thread ``i`` loads ``name[i]`` into register ``r<n>`` for each
    ``name: n`` of ``inputs``, runs ``body`` and stores ``r5`` into ``out[i]`` (parameters:
    the inputs in order, then ``out``)."""
    loads = "".join(f"    ldparam r{n}, {name}\n    add r{n}, r{n}, r2\n    ldg r{n}, [r{n}]\n"
                    for name, n in inputs.items())
    src = f"{GID}{loads}    {body}\n    ldparam r6, out\n    add r6, r6, r2\n    stg [r6], r5"
    return kernel(src, " ".join([*inputs, "out"]))
