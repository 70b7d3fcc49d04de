"""Special-function algorithms (rcp rsqrt sqrt exp2 log2 sin cos) on binary32 bit patterns.

First version: float64 evaluation rounded to float32, with the special cases of PTX
``*.approx.ftz.f32``.  Inputs arrive already flushed (FTZ).
"""

from __future__ import annotations

import numpy as np

SFU_LATENCY = 8
SFU_MAX_ULP: dict[str, float] = {
    "rcp": 1.0, "rsqrt": 1.0, "sqrt": 1.0, "exp2": 1.0, "log2": 1.0, "sin": 1.0, "cos": 1.0,
}

_FN = {
    "rcp": lambda x: 1.0 / x, "rsqrt": lambda x: 1.0 / np.sqrt(x), "sqrt": np.sqrt,
    "exp2": np.exp2, "log2": np.log2, "sin": np.sin, "cos": np.cos,
}


def evaluate(op: str, a: np.ndarray) -> np.ndarray:
    """``op`` applied to flushed uint32 patterns ``a``; NaN -> 0x7fffffff, results flushed."""
    x = a.view(np.float32).astype(np.float64)
    with np.errstate(all="ignore"):
        r = _FN[op](x).astype(np.float32)
    bits = r.view(np.uint32)
    sub = ((bits & 0x7F800000) == 0) & ((bits & 0x007FFFFF) != 0)
    bits = np.where(sub, bits & np.uint32(0x80000000), bits)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, np.uint32(0x7FFFFFFF), bits).astype(np.uint32)
