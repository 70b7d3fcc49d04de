"""``@jit`` and Triton-style launches: ``kernel[grid](args..., BLOCK=128)``.

The current device (``set_device``; by default ``Device(backend="iss", config="small")``)
decides the target: the ISA with the device's warp size, or PTX for the ``cuda`` backend.
Compiled kernels are cached per (parameter types, constexpr values, target, threads, and the
argument specialisations of ``compiler.SPECIALIZATIONS``: 16-byte aligned pointers, integers
divisible by 16, integers equal to 1).
NumPy arrays passed to a launch are copied to the device with their layout (views keep
their strides, arrays that share memory share a buffer: host_arrays.py) and written back
afterwards; DeviceArrays are used in place.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np
from simtgpu.errors import SimtgpuError

from .compiler import CompiledKernel, Target, compile_function, specialization, type_of_arg
from .debug_ops import PRINT_BUFFER_WORDS, PRINT_PARAMS, assertion_from_fault, format_prints
from .frontend import KernelSource
from .host_arrays import StagedArrays

_state = threading.local()


class LaunchError(SimtgpuError):
    """A launch that cannot work (wrong arguments, bad grid)."""


def set_device(device) -> None:
    """Make ``device`` (a :class:`simtgpu.driver_model.Device`) the one launches go to."""
    _state.device = device


def get_device():
    dev = getattr(_state, "device", None)
    if dev is None:
        from simtgpu.driver_model import Device

        dev = Device(backend="iss", config="small")
        _state.device = dev
    return dev


def cdiv(x: int, y: int) -> int:
    """Ceiling division for grid sizes (``triton.cdiv``)."""
    return -(-x // y)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (``triton.next_power_of_2``)."""
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


cdiv._simtgpu_host = True  # type: ignore[attr-defined]
next_power_of_2._simtgpu_host = True  # type: ignore[attr-defined]

# the last five are Triton's launch options that change nothing here (register caps,
# checks and launch modes of NVIDIA's driver): accepted so that Triton's launches run as written
_LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "block", "target_device",
                   "enable_fp_fusion", "size_per_thread", "chunk", "maxnreg", "debug",
                   "sanitize_overflow", "launch_cooperative_grid", "launch_pdl")


def device_target(dev) -> Target:
    if dev.backend.name == "cuda":
        return Target.ptx(getattr(dev.backend, "arch", "sm_90"))
    return Target("isa", dev.config.lanes)


class KernelInterface:
    """``kernel[grid](...)``, shared by ``@jit`` kernels and the ``@autotune`` and
    ``@heuristics`` wrappers (autotune.py) around them."""

    __name__: str

    def __call__(self, *args, **kwargs):
        raise LaunchError(f"{self.__name__} is a kernel: launch it as "
                          f"{self.__name__}[grid](...)")

    def __getitem__(self, grid) -> Any:
        # a partial adds no Python frame between the user's call and run()
        return functools.partial(self.run, grid=grid)

    def run(self, *args, grid, **kwargs):
        """Compile (cached) and launch. A compile error, launch error or kernel fault is
        raised here with the compiler's and driver's frames trimmed from its traceback:
        what the user sees is their call, and the error's text names the kernel's place."""
        try:
            return self._run(args, kwargs, grid)
        except SimtgpuError as e:
            raise e.with_traceback(None) from None

    def _run(self, args: tuple, kwargs: dict, grid):
        raise NotImplementedError



def _block_shape(name: str, block) -> tuple[int, int, int]:
    """``block=`` of a launch, CUDA style: an int or up to three positive ints."""
    dims = (block,) if isinstance(block, int) else block
    try:
        dims = tuple(dims)
    except TypeError:
        dims = None
    if (not dims or len(dims) > 3
            or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims)):
        raise LaunchError(f"{name}: block must be a positive int or a tuple of 1 to 3 "
                          f"positive ints, not {block!r}")
    return dims + (1,) * (3 - len(dims))

class JITFunction(KernelInterface):
    """A kernel written in the DSL; index it with a grid to launch it."""

    _simtgpu_jit = True  # how the front end knows a @jit helper without importing this module

    def __init__(self, fn, do_not_specialize=None, debug=None, noinline=None):
        self.fn = fn
        self.do_not_specialize = tuple(do_not_specialize or ())
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self._src: KernelSource | None = None
        self.cache: dict = {}
        self.last_launch = None  # LaunchResult of the most recent launch

    @property
    def src(self) -> KernelSource:
        if self._src is None:
            self._src = KernelSource.from_function(self.fn)
        return self._src

    def bind(self, args: tuple, kwargs: dict) -> tuple[dict, dict, dict]:
        """Split a call into runtime arguments, constexprs and launch options."""
        src = self.src
        # a launch option that is also a parameter's name (tutorial 02's ``num_stages:
        # tl.constexpr``) feeds both, as in Triton
        options = {k: kwargs[k] for k in kwargs if k in _LAUNCH_OPTIONS}
        kwargs = {k: v for k, v in kwargs.items()
                  if k not in _LAUNCH_OPTIONS or k in src.params}
        if len(args) > len(src.params):
            raise LaunchError(f"{self.__name__} takes {len(src.params)} arguments, "
                              f"{len(args)} given")
        bound = dict(zip(src.params, args, strict=False))
        for k, v in kwargs.items():
            if k not in src.params:
                raise LaunchError(f"{self.__name__} has no parameter '{k}'")
            if k in bound:
                raise LaunchError(f"{self.__name__}: '{k}' given twice")
            bound[k] = v
        runtime, cexpr = {}, {}
        for p in src.params:
            if p not in bound:
                if p in src.defaults:
                    bound[p] = src.defaults[p]
                else:
                    raise LaunchError(f"{self.__name__}: missing argument '{p}'")
            v = bound[p]
            if p in src.constexpr_params or v is None:  # None is compile-time, as in Triton
                cexpr[p] = v
            else:
                runtime[p] = v
        return runtime, cexpr, options

    def compile(self, target: Target, arg_types: dict, constexprs: dict, num_warps: int = 4,
                block: tuple[int, int, int] | None = None,
                enable_fp_fusion: bool = True, config=None,
                specialize: dict[str, str] | None = None,
                size_per_thread: int | None = None,
                num_stages: int | None = None, chunk: int | None = None) -> CompiledKernel:
        """The compiled kernel (cached); with ``config`` (a GpuConfig), checked against that
        configuration's limits (:func:`compile_function`)."""
        key = (tuple((k, str(v)) for k, v in arg_types.items()),
               tuple(sorted((k, repr(v)) for k, v in constexprs.items())), target,
               num_warps, block, enable_fp_fusion,
               tuple(sorted((specialize or {}).items())), size_per_thread, config, num_stages,
               chunk)
        hit = self.cache.get(key)
        if hit is None:
            hit = compile_function(self.fn, arg_types, constexprs, target, num_warps, block,
                                   enable_fp_fusion=enable_fp_fusion, config=config,
                                   specialize=specialize, size_per_thread=size_per_thread,
                                   num_stages=num_stages, chunk=chunk)
            self.cache[key] = hit
        return hit

    def warmup(self, *args, grid=None, **kwargs) -> CompiledKernel:
        """Compile for the current device as a launch with these arguments would, without
        launching (Triton's ``kernel.warmup``): the result tells ``n_regs``, ``n_spills``
        and ``metadata.shared``, and launches as ``compiled[grid](*args)``."""
        try:
            ck, _, cexpr = self._prepare(args, kwargs)
        except SimtgpuError as e:
            raise e.with_traceback(None) from None
        ck.bind_launcher(functools.partial(_launch_warm, ck, self,
                                           {k: repr(v) for k, v in cexpr.items()}))
        return ck

    def _run(self, args, kwargs, grid):
        ck, runtime, cexpr = self._prepare(args, kwargs)
        options = {k: kwargs[k] for k in kwargs if k in _LAUNCH_OPTIONS}
        if callable(grid):
            grid = grid({**cexpr, **runtime, **options})
        if isinstance(grid, int):
            grid = (grid,)
        grid = tuple(int(g) for g in grid) + (1,) * (3 - len(tuple(grid)))
        return launch_compiled(get_device(), ck, grid, runtime, self)

    def _prepare(self, args, kwargs) -> tuple[CompiledKernel, dict, dict]:
        """Bind a call and compile it (cached) for the current device."""
        runtime, cexpr, options = self.bind(args, kwargs)
        dev = get_device()
        target = device_target(dev)
        try:
            arg_types = {k: type_of_arg(v) for k, v in runtime.items()}
        except TypeError as e:
            raise LaunchError(f"{self.__name__}: {e}") from None
        default_warps = 4
        if target.kind == "isa":  # small configurations hold fewer warps per block
            default_warps = max(1, min(4, dev.config.max_threads_per_block // target.warp_size))
        num_warps = int(options.get("num_warps", default_warps))
        block = options.get("block")
        if block is not None:
            block = _block_shape(self.__name__, block)
        spt = options.get("size_per_thread")
        if spt not in (None, 1, 2, 4):
            raise LaunchError(f"{self.__name__}: size_per_thread must be 1, 2 or 4, not {spt!r}")
        stages = options.get("num_stages")
        if stages is not None and (not isinstance(stages, int) or stages < 1):
            raise LaunchError(f"{self.__name__}: num_stages must be an integer >= 1, "
                              f"not {stages!r}")
        keep = {self.src.params[i] if isinstance(i, int) else i for i in self.do_not_specialize}
        spec = {k: sp for k, v in runtime.items()
                if (sp := specialization(k, v, keep)) is not None}
        ck = self.compile(target, arg_types, cexpr, num_warps, block,
                          bool(options.get("enable_fp_fusion", True)),
                          dev.config if target.kind == "isa" else None, spec,
                          options.get("size_per_thread"), stages, options.get("chunk"))
        return ck, runtime, cexpr


def _module_for(dev, ck: CompiledKernel):
    cache = getattr(dev, "_simtgpu_jit_modules", None)
    if cache is None:
        cache = {}
        dev._simtgpu_jit_modules = cache
    key = id(ck)
    if key in cache:
        cache[key] = cache.pop(key)  # most recently used last
        return cache[key][1]
    if ck.target.kind == "ptx":
        mod = dev.backend.load_ptx(ck.code, ck.name, ck.params)
    else:
        obj = ck.object_file()
        while True:
            try:
                mod = dev.load_module(obj)
                break
            except SimtgpuError as e:
                # instruction memory is full: unload the least recently used kernels
                if "instruction memory" not in str(e) or not cache:
                    raise
                _, (_, old) = next(iter(cache.items()))
                del cache[next(iter(cache))]
                old.unload()
    cache[key] = (ck, mod)
    return mod


def _s32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >> 31 else x


def _launch_warm(ck: CompiledKernel, owner, cexpr: dict, grid, args, kwargs):
    """Launch a kernel compiled by ``owner.warmup``; constexpr arguments must be the ones
    it was compiled with."""
    runtime, got, _ = owner.bind(args, kwargs)
    for k, v in got.items():
        if repr(v) != cexpr.get(k):
            raise LaunchError(f"kernel '{ck.name}': {k}={v!r}, but it was compiled "
                              f"with {k}={cexpr.get(k)}")
    if isinstance(grid, int):
        grid = (grid,)
    grid = tuple(int(g) for g in grid) + (1,) * (3 - len(tuple(grid)))
    return launch_compiled(get_device(), ck, grid, runtime, owner)


def launch_compiled(dev, ck: CompiledKernel, grid, runtime: dict, owner=None):
    """Launch a compiled kernel with NumPy arrays / DeviceArrays / scalars: the driver's
    LaunchResult, or None for an empty grid (nothing runs)."""
    from simtgpu.driver_model import DeviceArray

    if 0 in grid and min(grid) >= 0:
        return None  # an empty grid launches nothing, as in Triton (cdiv(0, BLOCK) programs)
    mod = _module_for(dev, ck)
    call_args = []
    copies: list[tuple[np.ndarray, Any]] = []  # arrays of a foreign byte order, converted
    print_buf = None
    if ck.prints:  # tl.device_print: one buffer behind both hidden parameters
        print_buf = dev.to_device(np.zeros(PRINT_BUFFER_WORDS, np.int32))
        runtime = {**runtime, PRINT_PARAMS[0]: print_buf, PRINT_PARAMS[1]: print_buf}
    staged = StagedArrays(dev, [a for a in _host_arrays(ck, runtime) if _little(a)])
    for name, kind in ck.params:
        v = runtime[name]
        if isinstance(v, np.ndarray) and _little(v):
            v = staged.address(v)  # its place in its group's buffer (host_arrays.py)
        elif isinstance(v, np.ndarray):
            d = dev.to_device(v)
            copies.append((v, d))
            v = d
        elif isinstance(v, DeviceArray):
            if name not in PRINT_PARAMS:  # (one int32 buffer serves both print pointers)
                ck.check_array(name, v.dtype)
        elif kind == "f32":
            v = float(v)
        elif kind in ("i32", "u32"):
            v = int(v)
        elif kind in ("i64", "u64"):
            v = int(v)
            if not -(1 << 63) <= v < (1 << 64):
                raise LaunchError(f"'{name}': {v} does not fit in 64 bits")
            if ck.target.kind == "isa":  # two parameter words, the low word first
                w = v & ((1 << 64) - 1)
                call_args += [_s32(w), _s32(w >> 32)]
                continue
        call_args.append(v)
    if ck.target.kind == "ptx":
        result = dev.backend.launch_ptx(mod, grid, ck.block, call_args, ck.shared_bytes)
    else:
        try:
            result = dev.launch(mod.kernel(ck.name), grid=grid, block=ck.block,
                                args=tuple(call_args),
                                local_bytes=int(ck.stats.get("local_bytes", 0)))
        except SimtgpuError as fault:
            failed = assertion_from_fault(fault, ck.asserts, ck.target.warp_size)
            if failed is None:
                raise
            staged.free()
            for d in [d for _, d in copies] + ([print_buf] if print_buf is not None else []):
                dev.free(d)
            raise failed from None
    staged.write_back()
    staged.free()
    for host, d in copies:
        if host.flags.writeable:
            host[...] = d.to_host().reshape(host.shape)
        dev.free(d)
    if print_buf is not None:
        for line in format_prints(print_buf.to_host(), ck.prints):
            print(line)
        dev.free(print_buf)
    if owner is not None:
        owner.last_launch = result
    return result


def _host_arrays(ck: CompiledKernel, runtime: dict) -> list[np.ndarray]:
    """The launch's NumPy arrays, each checked against its pointer parameter."""
    arrays = []
    for name, kind in ck.params:
        v = runtime[name]
        if isinstance(v, np.ndarray):
            if kind != "ptr":
                raise LaunchError(f"'{name}' is not a pointer parameter")
            ck.check_array(name, v.dtype)
            arrays.append(v)
    return arrays


def _little(a: np.ndarray) -> bool:
    """Whether ``a``'s bytes are the device's (little-endian) as they stand."""
    return a.dtype.str[0] != ">"


def jit(fn=None, **options):
    """Decorator: turn a Python function written in the kernel language into a kernel."""
    if fn is None:
        return lambda f: JITFunction(f, **options)
    return JITFunction(fn, **options)
