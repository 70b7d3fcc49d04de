"""``triton.autotune``, ``triton.Config`` and ``triton.heuristics`` for ``@jit`` kernels.

The autotuner launches a kernel once per candidate :class:`Config` the first time it sees a
value of its ``key`` arguments, keeps the config with the smallest measure and launches
with it; later calls with the same key reuse the choice (``Autotuner.cache``), as Triton
does. The measure is the current device's own (:func:`measure`): dynamic warp-instructions
on the ISS, cycles on the RTL, wall time on the ``cuda`` backend. Benchmark launches write
to the caller's arrays; ``reset_to_zero`` names the arrays to clear before each of them
(and before the real launch), ``restore_value`` the ones to put back after each.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from simtgpu.errors import SimtgpuError

from .jit import _LAUNCH_OPTIONS, JITFunction, KernelInterface, LaunchError, get_device


class Config:
    """One candidate: meta-parameter values (``kwargs``, the kernel's constexprs) and launch
    options. ``num_stages``, ``num_ctas`` and ``maxnreg`` are accepted and have no effect
    here (no software pipelining, one block per program, a fixed register file)."""

    def __init__(self, kwargs: dict[str, Any], num_warps: int | None = None,
                 num_stages: int = 3, num_ctas: int = 1, maxnreg: int | None = None,
                 pre_hook: Callable[[dict], None] | None = None):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict[str, Any]:
        """The meta-parameters and the launch options that are set, as launch keywords."""
        opts = {"num_warps": self.num_warps, "num_stages": self.num_stages,
                "num_ctas": self.num_ctas}
        return {**self.kwargs, **{k: v for k, v in opts.items() if v is not None}}

    def __str__(self) -> str:
        opts = {"num_warps": self.num_warps, "num_ctas": self.num_ctas,
                "num_stages": self.num_stages, "maxnreg": self.maxnreg}
        return ", ".join([f"{k}: {v}" for k, v in self.kwargs.items()]
                         + [f"{k}: {v}" for k, v in opts.items() if v is not None])

    __repr__ = __str__


def measure(device, result) -> float:
    """What autotuning minimises for one launch on ``device``: warp-instructions on the
    ISS, cycles on the RTL, the kernel's seconds on the cuda backend (CUDA events around the
    launch: the launch's copies of device memory in and out are not the kernel's cost)."""
    if result is None:  # an empty grid: nothing ran, every config costs the same
        return 0.0
    backend = device.backend.name
    if backend == "iss":
        return float(result.instructions)
    if backend == "rtl":
        return float(result.cycles)
    return float(result.kernel_s)


MEASURE_UNITS = {"iss": "warp-instructions", "rtl": "cycles", "cuda": "seconds"}


class _Wrapper(KernelInterface):
    """An ``@autotune`` or ``@heuristics`` layer over a ``@jit`` kernel (or another layer)."""

    fn: Any

    @property
    def jit_function(self) -> JITFunction:
        f = self.fn
        while not isinstance(f, JITFunction):
            f = f.fn
        return f

    @property
    def arg_names(self) -> list[str]:
        return self.jit_function.src.params

    def where(self) -> str:
        src = self.jit_function.src
        return f"{src.file}:{src.first_line}"


def _wrappable(fn, what: str) -> None:
    if not isinstance(fn, KernelInterface):
        raise LaunchError(f"{what} decorates a @triton.jit kernel (put it above @triton.jit), "
                          f"not {getattr(fn, '__name__', type(fn).__name__)}")


class Heuristics(_Wrapper):
    """``@triton.heuristics({"NAME": lambda args: ...})``: each value is computed from the
    call's arguments by name (and the values before it) and passed as a keyword."""

    def __init__(self, fn, values: dict[str, Callable[[dict], Any]]):
        _wrappable(fn, "triton.heuristics")
        self.fn = fn
        self.__name__ = fn.__name__
        self.values = dict(values)
        for name, f in self.values.items():
            # a launch option (num_warps) is a valid target too, as in Triton
            if name not in self.arg_names and name not in _LAUNCH_OPTIONS:
                raise LaunchError(f"{self.where()}: triton.heuristics sets '{name}', which is "
                                  f"not a parameter of {self.__name__} or a launch option")
            if not callable(f):
                raise LaunchError(f"{self.where()}: triton.heuristics['{name}'] must be a "
                                  "function of the arguments dict")

    def _run(self, args, kwargs, grid):
        kwargs = dict(kwargs)
        for name, f in self.values.items():
            kwargs[name] = f({**dict(zip(self.arg_names, args, strict=False)), **kwargs})
        return self.fn._run(args, kwargs, grid)


class Autotuner(_Wrapper):
    """``@triton.autotune(configs, key)``: picks the config with the smallest device
    measure per value of ``key``. ``best_config`` is the config of the latest launch,
    ``cache`` maps each key seen to its choice, ``configs_timings`` holds the measures of
    the latest tuning."""

    def __init__(self, fn, configs: list[Config], key: list[str], prune_configs_by=None,
                 reset_to_zero=None, restore_value=None, pre_hook=None, post_hook=None):
        _wrappable(fn, "triton.autotune")
        self.fn = fn
        self.__name__ = fn.__name__
        self.configs = list(configs) or [Config({})]
        for c in self.configs:
            if not isinstance(c, Config):
                raise LaunchError(f"{self.where()}: triton.autotune configs must be "
                                  f"triton.Config objects, not {type(c).__name__}")
        self.keys = self._names(key, "key")
        self.reset_to_zero = self._names(reset_to_zero or [], "reset_to_zero")
        self.restore_value = self._names(restore_value or [], "restore_value")
        self.user_pre_hook = pre_hook
        self.post_hook = post_hook
        self.early_config_prune = self.perf_model = self.top_k = None
        if prune_configs_by:
            unknown = set(prune_configs_by) - {"early_config_prune", "perf_model", "top_k"}
            if unknown:
                raise LaunchError(f"{self.where()}: prune_configs_by takes "
                                  "'early_config_prune', 'perf_model' and 'top_k', not "
                                  f"{sorted(unknown)}")
            self.early_config_prune = prune_configs_by.get("early_config_prune")
            self.perf_model = prune_configs_by.get("perf_model")
            self.top_k = prune_configs_by.get("top_k")
        self.cache: dict[tuple, Config] = {}
        self.best_config: Config | None = None
        self.configs_timings: dict[Config, float] | None = None
        self.config_errors: dict[Config, SimtgpuError] = {}

    def _names(self, names, what: str) -> list[str]:
        if isinstance(names, str):
            names = [names]
        for n in names:
            if n not in self.arg_names:
                raise LaunchError(f"{self.where()}: triton.autotune {what} names '{n}', which "
                                  f"is not a parameter of {self.__name__}")
        return list(names)

    def key_of(self, named: dict) -> tuple:
        """The tuning key of a call: the ``key`` arguments' values (an array's shape and
        dtype), and the dtypes of all array arguments, as Triton keys on them."""
        out: list = []
        for k in self.keys:
            v = named.get(k)
            out.append((tuple(v.shape), str(v.dtype)) if _is_array(v) else v)
        out += [str(v.dtype) for v in named.values() if _is_array(v)]
        return tuple(out)

    def prune_configs(self, named: dict, kwargs: dict) -> list[Config]:
        configs = self.configs
        if self.early_config_prune is not None:
            # Triton passes the launch's keyword arguments too (tutorial 06 reads N_CTX there)
            configs = list(self.early_config_prune(configs, named, **kwargs))
        if self.perf_model is not None and self.top_k is not None:
            k = self.top_k
            if isinstance(k, float) and k <= 1.0:
                k = max(1, int(len(configs) * k))
            est = {c: self.perf_model(**named, **c.all_kwargs()) for c in configs}
            configs = sorted(configs, key=est.__getitem__)[:int(k)]
        if not configs:
            raise LaunchError(f"{self.__name__}: prune_configs_by left no config to run")
        return configs

    def _conflicts(self, kwargs: dict) -> None:
        for c in self.configs:
            both = sorted(set(c.kwargs) & set(kwargs))
            if both:
                raise LaunchError(f"{self.__name__}: {both} are set by the autotuner's "
                                  "configs; do not pass them in the launch")

    def _reset(self, named: dict) -> None:
        for n in self.reset_to_zero:
            _fill(named[n], None)

    def _launch(self, config: Config, args, kwargs, grid):
        named = {**dict(zip(self.arg_names, args, strict=False)), **kwargs}
        full = {**named, **config.all_kwargs()}
        if config.pre_hook is not None:
            config.pre_hook(full)
        return self.fn._run(args, {**kwargs, **config.all_kwargs()}, grid)

    def bench(self, config: Config, args, kwargs, grid, named: dict) -> float:
        """Launch once with ``config`` and return the device's measure (inf for a config
        that cannot compile or launch, as Triton's out-of-resources configs)."""
        saved = {n: _copy(named[n]) for n in self.restore_value}
        self._reset(named)
        if self.user_pre_hook is not None:
            self.user_pre_hook(named)
        dev = get_device()
        try:
            result = self._launch(config, args, kwargs, grid)
            if dev.backend.name == "cuda":  # the first launch compiles: time the better of
                result = min((self._launch(config, args, kwargs, grid) for _ in range(3)),
                             key=lambda r: r.kernel_s)
        except SimtgpuError as e:
            self.config_errors[config] = e
            if self.post_hook is not None:
                self.post_hook(named, e)
            return math.inf
        finally:
            for n, v in saved.items():
                _fill(named[n], v)
        if self.post_hook is not None:
            self.post_hook(named, None)
        return measure(dev, result)

    def _run(self, args, kwargs, grid):
        self._conflicts(kwargs)
        named = {**dict(zip(self.arg_names, args, strict=False)), **kwargs}
        tuned = False
        if len(self.configs) > 1:
            key = self.key_of(named)
            if key not in self.cache:
                configs = self.prune_configs(named, kwargs)
                self.config_errors = {}
                timings = {c: self.bench(c, args, kwargs, grid, named) for c in configs}
                best = min(timings, key=timings.__getitem__)
                if math.isinf(timings[best]):
                    raise self.config_errors[best]
                self.cache[key] = best
                self.configs_timings = timings
                tuned = True
            config = self.cache[key]
        else:
            config = self.configs[0]
        self.best_config = config
        if tuned:
            self._reset(named)
        return self._launch(config, args, kwargs, grid)


def _is_array(v) -> bool:
    """A NumPy array or a DeviceArray (not a NumPy scalar such as ``np.uint32(5)``)."""
    return isinstance(v, np.ndarray) or hasattr(v, "to_host")


def _copy(v):
    return v.to_host() if hasattr(v, "to_host") else np.array(v, copy=True)


def _fill(v, value) -> None:
    """Write ``value`` (zeros when None) into a NumPy array or a DeviceArray in place."""
    if hasattr(v, "copy_from_host"):
        v.copy_from_host(np.zeros(v.shape, v.dtype) if value is None else value)
    elif isinstance(v, np.ndarray):
        v[...] = 0 if value is None else value
    else:
        raise LaunchError(f"reset_to_zero/restore_value name arrays, not "
                          f"{type(v).__name__}")


def autotune(configs: list[Config], key: list[str], prune_configs_by: dict | None = None,
             reset_to_zero: list[str] | None = None, restore_value: list[str] | None = None,
             pre_hook=None, post_hook=None, warmup=None, rep=None, use_cuda_graph=False,
             do_bench=None, cache_results=False):
    """Decorator (above ``@triton.jit``): tune ``configs`` per value of ``key`` by the
    device's measure. ``warmup``/``rep`` are accepted and unused (the ISS and RTL are
    deterministic; the cuda backend times the best of three launches); a custom
    ``do_bench`` and ``use_cuda_graph`` are refused."""
    if do_bench is not None:
        raise LaunchError("triton.autotune: a custom do_bench is not supported; the measure "
                          "is the device's own (instructions on the ISS, cycles on the RTL, "
                          "time on the cuda backend)")
    if use_cuda_graph:
        raise LaunchError("triton.autotune: use_cuda_graph is not supported")

    def decorator(fn) -> Autotuner:
        return Autotuner(fn, configs, key, prune_configs_by, reset_to_zero, restore_value,
                         pre_hook, post_hook)

    return decorator


def heuristics(values: dict[str, Callable[[dict], Any]]):
    """Decorator (above ``@triton.jit``): meta-parameters computed from the arguments,
    e.g. ``{"EVEN_N": lambda args: args["n"] % args["BLOCK"] == 0}``."""
    if not isinstance(values, dict):
        raise LaunchError("triton.heuristics takes a dict of name -> function(args)")

    def decorator(fn) -> Heuristics:
        return Heuristics(fn, values)

    return decorator
