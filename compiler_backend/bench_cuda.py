"""This compiler's PTX and Triton's, timed side by side on an NVIDIA GPU.

The kernels of the PTX bench (bench_ptx.CASES: the DSL examples in Triton's syntax) are
compiled by both compilers at the same constexprs and ``num_warps``, as bench_ptx does, and
both entry points are loaded into one CUDA context. Each is launched on the same device
buffers at a size that does not fit the GPU's L2 (a real working set, not a cached one),
its outputs are checked against NumPy, and its kernel time is read with CUDA events: batches
of launches, ours and Triton's in turn, the median batch per launch reported. Two pairs per
kernel: without hints (neither side may assume aligned pointers), and with the hints a JIT
launch at aligned sizes earns (Triton's ``tt.divisibility``, this compiler's argument
specialisation), which is what a user's launch gets.

``python -m simtgpu.cli.bench --part cuda`` writes the table into docs/performance.md. It
needs an NVIDIA GPU (sm_80 or newer), its driver, cuda-python and Triton.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from simtgpu.driver_model.backend_cuda import pack_kernel_params
from simtgpu.driver_model.errors import DriverError

from .bench_ptx import CASES, BenchUnavailable, Case, ours_compiled, triton_compiled

_ENTRY = re.compile(r"\.entry\s+(\w+)\s*\(([^)]*)\)", re.S)
_PARAM = re.compile(r"\.param\s+\.(\w+)")
# a PTX parameter type as a kind of driver_model.backend_cuda.pack_kernel_params (pointers
# are passed as the u64 device addresses they are here)
_PTX_KINDS = {"u64": "u64", "b64": "u64", "s64": "i64", "u32": "u32", "b32": "u32",
              "s32": "i32", "f32": "f32"}


def entry_params(ptx: str) -> tuple[str, list[str]]:
    """The entry point's name and its parameters' PTX types, in order."""
    m = _ENTRY.search(ptx)
    if m is None:
        raise BenchUnavailable("no .entry in the PTX")
    return m.group(1), _PARAM.findall(m.group(2))


@dataclass(frozen=True)
class Workload:
    """A launch of one case at a size past the L2: arguments by name (arrays are device
    buffers, scalars are passed as such), the grid, what to check and the bytes moved."""

    label: str
    grid: tuple[int, int, int]
    make: Callable[[np.random.Generator], dict]
    reference: Callable[[dict], dict[str, np.ndarray]]  # outputs of ONE launch
    bytes_moved: int = 0  # the least a launch must move to and from DRAM
    flops: int = 0  # floating-point operations of a launch (for a compute-bound kernel)
    rtol: float = 1e-5
    atol: float = 1e-5


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


_N = 1 << 24  # 64 MiB per fp32 vector: past any L2 (50 MiB on the H100)
_ROWS, _COLS = 16384, 1024
_MM = 2048


def _norm_ref(a):
    x = a["x_ptr"].astype(np.float64)
    ms = (x * x).mean(axis=1, keepdims=True)
    return {"y_ptr": x / np.sqrt(ms + a["eps"]) * a["w_ptr"]}


def _ln_ref(a):
    x = a["X"].astype(np.float64)
    mean = x.mean(axis=1)
    var = x.var(axis=1)
    rstd = 1 / np.sqrt(var + a["eps"])
    y = (x - mean[:, None]) * rstd[:, None] * a["W"] + a["B"]
    return {"Y": y, "Mean": mean, "Rstd": rstd}


def _softmax_ref(a):
    x = a["input_ptr"].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"output_ptr": e / e.sum(axis=1, keepdims=True)}


WORKLOADS: dict[str, Workload] = {w.label: w for w in (
    Workload("vector_add", (_cdiv(_N, 1024), 1, 1),
             lambda r: dict(x_ptr=_f32(r, _N), y_ptr=_f32(r, _N),
                            output_ptr=np.zeros(_N, np.float32), n_elements=_N),
             lambda a: {"output_ptr": a["x_ptr"] + a["y_ptr"]},
             bytes_moved=12 * _N, flops=_N),
    Workload("saxpy", (_cdiv(_N, 1024), 1, 1),
             lambda r: dict(x_ptr=_f32(r, _N), y_ptr=_f32(r, _N), a=np.float32(1.75), n=_N),
             lambda a: {"y_ptr": a["a"] * a["x_ptr"].astype(np.float64) + a["y_ptr"]},
             bytes_moved=12 * _N, flops=2 * _N),
    Workload("softmax", (_ROWS, 1, 1),
             lambda r: dict(output_ptr=np.zeros((_ROWS, _COLS), np.float32),
                            input_ptr=_f32(r, _ROWS, _COLS), input_row_stride=_COLS,
                            output_row_stride=_COLS, n_rows=_ROWS, n_cols=_COLS),
             _softmax_ref, bytes_moved=8 * _ROWS * _COLS, atol=1e-6, rtol=1e-4),
    Workload("rmsnorm", (_ROWS, 1, 1),
             lambda r: dict(x_ptr=_f32(r, _ROWS, _COLS), w_ptr=_f32(r, _COLS),
                            y_ptr=np.zeros((_ROWS, _COLS), np.float32), stride=_COLS,
                            N=_COLS, eps=np.float32(1e-5)),
             _norm_ref, bytes_moved=8 * _ROWS * _COLS, rtol=1e-4),
    Workload("layernorm", (_ROWS, 1, 1),
             lambda r: dict(X=_f32(r, _ROWS, _COLS), Y=np.zeros((_ROWS, _COLS), np.float32),
                            W=_f32(r, _COLS), B=_f32(r, _COLS),
                            Mean=np.zeros(_ROWS, np.float32), Rstd=np.zeros(_ROWS, np.float32),
                            stride=_COLS, N=_COLS, eps=np.float32(1e-5)),
             _ln_ref, bytes_moved=8 * _ROWS * _COLS, rtol=1e-4, atol=1e-4),
    Workload("sum_reduction", (_cdiv(_N, 1024), 1, 1),
             lambda r: dict(x_ptr=_f32(r, _N), partial_ptr=np.zeros(_N // 1024, np.float32),
                            total_ptr=np.zeros(1, np.float32), n=_N),
             lambda a: {"partial_ptr": a["x_ptr"].astype(np.float64).reshape(-1, 1024)
                        .sum(axis=1), "total_ptr": np.array([a["x_ptr"].sum(dtype=np.float64)])},
             bytes_moved=4 * _N, rtol=1e-4, atol=1e-3),
    Workload("histogram", (_cdiv(_N, 1024), 1, 1),
             lambda r: dict(x_ptr=r.integers(-2, 20, _N).astype(np.int32),
                            hist_ptr=np.zeros(16, np.int32), n=_N),
             lambda a: {"hist_ptr": np.bincount(np.clip(a["x_ptr"], 0, 15), minlength=16)},
             bytes_moved=4 * _N, rtol=0, atol=0),
    Workload("matmul 64x64x32", (_cdiv(_MM, 64) * _cdiv(_MM, 64), 1, 1),
             lambda r: dict(a_ptr=_f32(r, _MM, _MM), b_ptr=_f32(r, _MM, _MM),
                            c_ptr=np.zeros((_MM, _MM), np.float32), M=_MM, N=_MM, K=_MM,
                            stride_am=_MM, stride_ak=1, stride_bk=_MM, stride_bn=1,
                            stride_cm=_MM, stride_cn=1),
             lambda a: {"c_ptr": a["a_ptr"].astype(np.float64) @ a["b_ptr"]},
             bytes_moved=12 * _MM * _MM, flops=2 * _MM ** 3,
             rtol=0.0, atol=4e-3),  # fp32 sums err ~1e-4 here; TF32 products (~0.02) fail
)}


@dataclass
class Timing:
    """One compiled kernel's figures: median microseconds per launch, the output check."""

    us: float
    ok: bool
    detail: str


@dataclass
class Row:
    """One kernel's four timings."""

    case: Case
    work: Workload
    plain: tuple[Timing, Timing]  # (ours, Triton) without hints
    aligned: tuple[Timing, Timing]  # with the hints of an aligned launch


class _Gpu:
    """The CUDA context of the driver's cuda backend, with buffers and events of our own."""

    def __init__(self):
        from simtgpu.arch.config import CONFIGS
        from simtgpu.driver_model.backend_cuda import CudaBackend, _check

        self.backend = CudaBackend(CONFIGS["small"])
        self.cu, self.check = self.backend.cu, _check
        self.buffers: list[int] = []

    def upload(self, array: np.ndarray) -> int:
        buf = self.check(self.cu.cuMemAlloc(max(array.nbytes, 4)), "cuMemAlloc")
        self.buffers.append(buf)
        self.put(int(buf), array)
        return int(buf)

    def put(self, ptr: int, array: np.ndarray) -> None:
        a = np.ascontiguousarray(array)
        self.check(self.cu.cuMemcpyHtoD(ptr, a.ctypes.data, a.nbytes), "cuMemcpyHtoD")

    def get(self, ptr: int, like: np.ndarray) -> np.ndarray:
        out = np.empty_like(like)
        self.check(self.cu.cuMemcpyDtoH(out.ctypes.data, ptr, out.nbytes), "cuMemcpyDtoH")
        return out

    def load(self, ptx: str, shared: int) -> tuple[object, list[str]]:
        name, types = entry_params(ptx)
        fn = self.backend.load_ptx(ptx, name, []).function
        self.backend.allow_shared(fn, shared, name)
        return fn, types

    def launch(self, fn, types: list[str], values: list, grid, block, shared: int,
               times: int = 1) -> float:
        """``times`` launches back to back; the kernel time of all of them, in ms."""
        vals = pack_kernel_params([_PTX_KINDS[t] for t in types], values, 0)
        ptrs = np.array([v.ctypes.data for v in vals], dtype=np.uint64)

        def enqueue() -> None:
            for _ in range(times):
                self.check(self.cu.cuLaunchKernel(fn, *grid, *block, shared, 0,
                                                  ptrs.ctypes.data, 0), "cuLaunchKernel")

        return self.backend.timed_ms(enqueue)

    def close(self) -> None:
        for b in self.buffers:
            self.cu.cuMemFree(b)
        self.backend.close()


def _compile(case: Case, aligned: bool) -> list[tuple[str, int, int]]:
    """(PTX, dynamic shared bytes, global scratch bytes per program) of both compilers."""
    ck = ours_compiled(case, aligned)
    tt = triton_compiled(case, aligned)
    md = tt.metadata
    return [(ck.code, ck.shared_bytes, 0),
            (tt.asm["ptx"], int(md.shared), int(getattr(md, "global_scratch_size", 0)))]


def _values(case: Case, types: list[str], args: dict, ptrs: dict[str, int],
            scratch: int) -> list:
    """Positional parameter values: the signature's run-time arguments in order, then for
    the parameters Triton appends its global scratch buffer and a null profile buffer."""
    out = [ptrs[k] if k in ptrs else args[k] for k in case.signature]
    extra = [scratch] + [0] * len(types)
    return out + extra[:len(types) - len(out)]


def measure(case: Case, gpu: _Gpu, rng: np.random.Generator, batches: int = 7,
            per_batch: int = 10) -> Row:
    """Check and time both compilers' kernels of ``case``, without and with the hints."""
    work = WORKLOADS[case.label]
    args = work.make(rng)
    want = work.reference(args)
    arrays = {k: v for k, v in args.items() if isinstance(v, np.ndarray) and v.ndim}
    ptrs = {k: gpu.upload(v) for k, v in arrays.items()}
    grid, block = work.grid, (32 * case.num_warps, 1, 1)
    programs = grid[0] * grid[1] * grid[2]
    pairs = []
    for aligned in (False, True):
        kernels = []
        for who, (ptx, shared, scratch) in zip(("ours", "Triton's"), _compile(case, aligned),
                                               strict=True):
            fn, types = gpu.load(ptx, shared)
            buf = gpu.upload(np.zeros(scratch * programs, np.uint8)) if scratch else 0
            kernels.append((fn, _values(case, types, args, ptrs, buf), types, shared, who))
        checks = []
        for fn, values, types, shared, who in kernels:
            for k, v in arrays.items():  # fresh inputs and zeroed outputs for the check
                gpu.put(ptrs[k], v)
            try:
                gpu.launch(fn, types, values, grid, block, shared)
            except DriverError as e:
                raise DriverError(f"{case.label}, {who} kernel ({'aligned' if aligned else 'plain'}"
                                  f", grid {grid}, block {block}, {shared} B shared, "
                                  f"parameters {types} = {values}): {e}") from None
            checks.append(_check_outputs(work, want, {k: gpu.get(ptrs[k], arrays[k])
                                                      for k in want}))
        runs: list[list[float]] = [[], []]
        for _ in range(batches):  # ours and Triton's in turn, so drift hits both alike
            for i, (fn, values, types, shared, _) in enumerate(kernels):
                ms = gpu.launch(fn, types, values, grid, block, shared, per_batch)
                runs[i].append(1000 * ms / per_batch)
        pairs.append(tuple(Timing(statistics.median(r), *c)
                           for r, c in zip(runs, checks, strict=True)))
    return Row(case, work, pairs[0], pairs[1])


def _check_outputs(work: Workload, want: dict, got: dict) -> tuple[bool, str]:
    worst, bad = 0.0, 0
    for k, w in want.items():
        g = got[k].astype(np.float64).reshape(np.shape(w))
        err = np.abs(g - w)
        bad += int(np.count_nonzero(~(err <= work.atol + work.rtol * np.abs(w))))
        worst = max(worst, float(err.max()))
    return bad == 0, f"max abs error {worst:.2g}, {bad} outside tolerance"


def rows(cases: tuple[Case, ...] = CASES) -> tuple[list[Row], dict[str, str]]:
    """Both compilers on every tile-level case, and what the GPU is."""
    try:
        import triton  # noqa: F401
    except ImportError:
        raise BenchUnavailable("the cuda bench needs Triton (pip install triton)") from None
    try:
        gpu = _Gpu()
    except DriverError as e:
        raise BenchUnavailable(f"the cuda bench needs an NVIDIA GPU: {e}") from None
    try:
        info = gpu.backend.describe()
        rng = np.random.default_rng(0)
        out = []
        for c in cases:
            if c.block is None and c.label in WORKLOADS:
                out.append(measure(c, gpu, rng))
                print(f"{c.label:<16} plain {out[-1].plain[0].us:9.1f} / "
                      f"{out[-1].plain[1].us:9.1f} us, aligned {out[-1].aligned[0].us:9.1f} / "
                      f"{out[-1].aligned[1].us:9.1f} us (ours / Triton)", flush=True)
    finally:
        gpu.close()
    return out, info


def _cell(t: Timing) -> str:
    return f"{t.us:,.1f}" if t.ok else f"{t.us:,.1f} (wrong: {t.detail})"


def _rate(w: Workload, us: float) -> str:
    """GFLOP/s of a compute-bound kernel, else the DRAM bandwidth of the least bytes a launch
    must move."""
    if w.flops > 4 * w.bytes_moved:
        return f"{w.flops / us / 1e3:,.0f} GFLOP/s"
    return f"{w.bytes_moved / us / 1e3:,.0f} GB/s"


def render(rs: list[Row], info: dict[str, str], triton_version: str) -> str:
    """The ``compiler-cuda`` section of docs/performance.md."""
    lines = [
        "## On an NVIDIA GPU: this compiler's PTX timed against Triton's", "",
        f"Kernel time on {info['gpu']} (driver {info['driver']}, {info['sms']} SMs), measured "
        "with CUDA events: each kernel's PTX from both compilers at the same constexprs and "
        f"`num_warps=4` (Triton {triton_version}, FP fusion on, IEEE fp32 dots), loaded into "
        "one context and launched on the same device buffers; seven batches of ten launches, "
        "ours and Triton's in turn, the median batch per launch. Sizes are past the GPU's L2 "
        f"(vectors of {_N:,} fp32, {_ROWS:,} rows of {_COLS}, matmul {_MM}^3), so the "
        "memory-bound kernels read DRAM. Every kernel's output was checked against NumPy "
        "before timing (a wrong one says so in its cell; the matmul's to 4e-3 absolute, "
        "which fp32 products meet and TF32 ones would not). The last column is the least "
        "bytes a launch must move over our time (GFLOP/s for the matmul). *plain*: no "
        "alignment hints on either side; "
        "*aligned*: the hints a JIT launch at aligned sizes earns on both (what a user's "
        "launch gets).", "",
        f"Commit {info['commit']}, {info['date']}.", "",
        "| kernel | plain: ours µs | Triton µs | ratio | aligned: ours µs | Triton µs | "
        "ratio | ours, aligned |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    ratios = {"plain": [], "aligned": []}
    for r in rs:
        cells = []
        for key, (o, t) in (("plain", r.plain), ("aligned", r.aligned)):
            ratio = o.us / t.us
            ratios[key].append(ratio)
            cells += [_cell(o), _cell(t), f"{ratio:.2f}"]
        lines.append(f"| {r.case.label} | " + " | ".join(cells)
                     + f" | {_rate(r.work, r.aligned[0].us)} |")
    for key, rr in ratios.items():
        if rr:
            geo = statistics.geometric_mean(rr)
            lines.append(f"\nGeometric mean of the time ratio ({key}): **{geo:.2f}** "
                         "(below 1: faster than Triton).")
    lines += ["", "Command: `python -m simtgpu.cli.bench --part cuda` (library: "
              "`simtgpu.compiler_backend.bench_cuda`; needs an NVIDIA GPU, cuda-python and "
              "Triton). The static SASS of the same kernels is in *PTX side by side with "
              "Triton* above."]
    return "\n".join(lines)
