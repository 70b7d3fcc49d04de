"""Kernel arguments written as text, for ``simtgpu run --arg``.

Forms::

    a=f32[1024]:rand        array, initialiser rand (uniform [0, 1); ints: 0..99)
    m=f32[64,32]:arange     2-D array (C order); the kernel gets its address
    k=i32[16]:randint(0,9)  ints in [lo, hi]; also zeros, ones, arange, fill(1.5), rand(lo,hi)
    n=i32:1024              scalar (i32 and u32 take decimal or 0x hex)
    s=f32:2.5               f32 scalar
    p=ptr:0x0               raw device address (for example to provoke a fault)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .errors import DriverError

DTYPES = {"f32": np.float32, "i32": np.int32, "u32": np.uint32}
SCALAR_TYPES = (*DTYPES, "ptr")
INT_RANGES = {"i32": (-(1 << 31), (1 << 31) - 1), "u32": (0, (1 << 32) - 1)}
F32_MAX = float(np.finfo(np.float32).max)
MAX_ARRAY_BYTES = 1 << 32
"""No device memory is larger than the 32-bit address space."""

_ARRAY = re.compile(r"^(\w+)=(\w+)\[([\d,\s]+)\](?::(.*))?$")
_SCALAR = re.compile(r"^(\w+)=(\w+):(.+)$")
_INIT = re.compile(r"^(\w+)(?:\((.*)\))?$")


@dataclass
class ArgSpec:
    """One parsed ``--arg``: an array to create on the device, or a scalar."""

    name: str
    type: str  # f32 | i32 | u32 | ptr
    text: str
    shape: tuple[int, ...] | None = None  # arrays only
    init: str = "zeros"
    init_args: tuple[float, ...] = ()
    value: int | float | None = None  # scalars only

    @property
    def is_array(self) -> bool:
        return self.shape is not None

    def make_array(self, rng: np.random.Generator) -> np.ndarray:
        """The host array this spec describes (arrays only)."""
        assert self.shape is not None
        dt = DTYPES[self.type]
        n = int(np.prod(self.shape))
        is_float = dt is np.float32
        a = self.init_args
        if self.init == "zeros":
            out = np.zeros(n, dt)
        elif self.init == "ones":
            out = np.ones(n, dt)
        elif self.init == "arange":
            out = np.arange(n).astype(dt)
        elif self.init == "fill":
            out = np.full(n, a[0]).astype(dt)
        elif self.init == "rand" and is_float:
            lo, hi = a if a else (0.0, 1.0)
            out = rng.uniform(lo, hi, n).astype(dt)
        else:  # rand for ints, randint
            lo, hi = (int(a[0]), int(a[1])) if a else (0, 99)
            out = rng.integers(lo, hi, n, endpoint=True).astype(dt)
        return out.reshape(self.shape)


_INIT_ARITY = {"zeros": (0,), "ones": (0,), "arange": (0,), "fill": (1,), "rand": (0, 2),
               "randint": (0, 2)}


def parse_arg(text: str) -> ArgSpec:
    """Parse one spec; :class:`DriverError` says what form was expected."""
    text = text.strip()
    m = _ARRAY.match(text)
    if m:
        name, typ, dims, init = m.groups()
        if typ not in DTYPES:
            raise DriverError(f"--arg {text}: array element type must be one of "
                              f"{', '.join(DTYPES)}, not '{typ}'")
        try:
            shape = tuple(int(d) for d in dims.split(","))
        except ValueError:
            raise DriverError(f"--arg {text}: bad shape [{dims}]") from None
        if not shape or any(d < 1 for d in shape):
            raise DriverError(f"--arg {text}: every dimension must be at least 1")
        nbytes = math.prod(shape) * 4
        if nbytes > MAX_ARRAY_BYTES:
            raise DriverError(f"--arg {text}: {nbytes} bytes is more than any device memory "
                              f"(the address space is {MAX_ARRAY_BYTES} bytes)")
        name_, args = _parse_init(text, init or "zeros")
        if name_ == "randint" and typ == "f32" and not args:
            args = (0.0, 99.0)
        _check_init_values(text, typ, name_, args)
        return ArgSpec(name, typ, text, shape=shape, init=name_, init_args=args)
    m = _SCALAR.match(text)
    if m:
        name, typ, value = m.groups()
        if typ not in SCALAR_TYPES:
            raise DriverError(f"--arg {text}: scalar type must be one of "
                              f"{', '.join(SCALAR_TYPES)}, not '{typ}'")
        return ArgSpec(name, typ, text, value=_parse_scalar(text, typ, value.strip()))
    raise DriverError(
        f"--arg {text!r}: expected NAME=TYPE[N]:INIT (array, e.g. a=f32[1024]:rand) or "
        "NAME=TYPE:VALUE (scalar, e.g. n=i32:1024)")


def _parse_init(text: str, init: str) -> tuple[str, tuple[float, ...]]:
    m = _INIT.match(init.strip())
    if not m or m.group(1) not in _INIT_ARITY:
        raise DriverError(f"--arg {text}: unknown initialiser '{init}' (use "
                          f"{', '.join(_INIT_ARITY)})")
    name, inner = m.group(1), m.group(2)
    args: tuple[float, ...] = ()
    if inner is not None and inner.strip():
        try:
            args = tuple(_float(text, x) for x in inner.split(","))
        except ValueError:
            raise DriverError(f"--arg {text}: {name}(...) takes numbers, not '{inner}'") \
                from None
    if len(args) not in _INIT_ARITY[name]:
        want = " or ".join(str(k) for k in _INIT_ARITY[name])
        raise DriverError(f"--arg {text}: {name} takes {want} number(s), not {len(args)}")
    if name in ("rand", "randint") and args and args[0] > args[1]:
        raise DriverError(f"--arg {text}: {name}(lo, hi) needs lo <= hi")
    return name, args


def _check_init_values(text: str, typ: str, init: str, args: tuple[float, ...]) -> None:
    """Refuse initialiser numbers the element type cannot hold (rather than wrap or overflow
    them silently): integers for the integer types and randint, finite bounds for rand."""
    integral = typ in INT_RANGES or init == "randint"
    lo, hi = INT_RANGES.get(typ, (-F32_MAX, F32_MAX))
    for x in args:
        if integral and not (math.isfinite(x) and x == int(x)):
            raise DriverError(f"--arg {text}: {init} needs whole numbers for {typ}, not {x:g}")
        finite_only = init != "fill"  # fill(inf) and fill(nan) are f32 values; bounds are not
        if (finite_only or integral) and not math.isfinite(x):
            raise DriverError(f"--arg {text}: {init} needs finite numbers, not {x:g}")
        if math.isfinite(x) and not lo <= x <= hi:
            shown = (f"{x:.0f} is out of range for {typ} [{lo}, {hi}]" if typ in INT_RANGES
                     else f"{x:g} is out of range for {typ} (largest finite {hi:g})")
            raise DriverError(f"--arg {text}: {shown}")


_NON_FINITE = re.compile(r"^\s*[-+]?(inf|infinity|nan)\s*$", re.I)


def _float(text: str, number: str) -> float:
    """``float(number)``, but a number too large for a double (1e400) is out of range, not
    silently infinite (infinity is written ``inf``, where a value may be infinite)."""
    v = float(number)
    if not math.isfinite(v) and not _NON_FINITE.match(number):
        raise DriverError(f"--arg {text}: {number.strip()} is out of range (too large for "
                          "any float)")
    return v


def _parse_scalar(text: str, typ: str, value: str) -> int | float:
    if typ == "f32":
        try:
            v = _float(text, value)
        except ValueError:
            raise DriverError(f"--arg {text}: '{value}' is not a number") from None
        if math.isfinite(v) and abs(v) > F32_MAX:
            raise DriverError(f"--arg {text}: {v:g} is out of range for f32 (write inf)")
        return v
    try:
        v = int(value, 0)
    except ValueError:
        raise DriverError(f"--arg {text}: '{value}' is not an integer") from None
    lo, hi = INT_RANGES.get(typ, (0, (1 << 32) - 1))
    if not lo <= v <= hi:
        raise DriverError(f"--arg {text}: {v} is out of range for {typ} [{lo}, {hi}]")
    return v


_PRINT = re.compile(r"^(\w+)(?:\[([-\d:,\s]*)\])?$")


def parse_print(text: str) -> tuple[str, tuple[slice | int, ...]]:
    """``c``, ``c[:8]``, ``c[2]``, ``m[0:2, 1:3]`` -> (name, index tuple)."""
    m = _PRINT.match(text.strip())
    if not m:
        raise DriverError(f"--print {text!r}: expected NAME or NAME[slice], e.g. c[:8]")
    name, inner = m.groups()
    if inner is None:
        return name, ()
    index: list[slice | int] = []
    for part in inner.split(","):
        part = part.strip()
        try:
            if ":" in part:
                bits = [int(b) if b.strip() else None for b in part.split(":")]
                if len(bits) > 3 or (len(bits) == 3 and bits[2] == 0):
                    raise ValueError  # a zero step is no slice
                index.append(slice(*bits))
            else:
                index.append(int(part))
        except ValueError:
            raise DriverError(f"--print {text!r}: bad index '{part}'") from None
    return name, tuple(index)
