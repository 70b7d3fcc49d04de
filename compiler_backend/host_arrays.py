"""NumPy arrays passed to a launch: staged in device memory so that they keep their layout
and their sharing, and written back afterwards.

A kernel addresses an array through the strides its caller passes (Triton's
``x.stride(0)``; here ``x.strides[0] // x.itemsize``), so a view must reach the device with
the same byte layout, not as a contiguous copy: a transposed or sliced array, a row of a
matrix. Arrays that share memory (the same array as input and output of an in-place kernel,
two rows of one matrix) must be one buffer on the device, or the write-back of one copy
undoes the other's. So the arrays of a launch are grouped by overlapping byte ranges, each
group's bytes are copied once, and each array's pointer is its place in its group's buffer.
Each buffer starts at the host span's address modulo 16, so a pointer is 16-byte aligned on
the device exactly when the host array is (the ``a16`` specialisation of compiler.py).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ALIGN = 16  # the alignment a device pointer keeps from its host address (see compiler.py)


def host_address(a: np.ndarray) -> int:
    """The address of element ``a[0, ..., 0]``."""
    return int(a.__array_interface__["data"][0])


def byte_span(a: np.ndarray) -> tuple[int, int]:
    """[lo, hi): the bytes that ``a``'s elements occupy (negative strides included)."""
    start = host_address(a)
    if a.size == 0:
        return start, start
    low = sum(s * (n - 1) for s, n in zip(a.strides, a.shape, strict=True) if s < 0)
    high = sum(s * (n - 1) for s, n in zip(a.strides, a.shape, strict=True) if s > 0)
    return start + low, start + high + a.itemsize


@dataclass
class _Group:
    """Host arrays whose bytes overlap, staged as one device buffer covering [lo, hi)."""

    lo: int
    hi: int
    members: list[np.ndarray] = field(default_factory=list)
    buffer: Any = None  # the DeviceArray (uint8) once staged

    @property
    def pad(self) -> int:
        return self.lo % ALIGN

    def device_address(self, a: np.ndarray) -> int:
        return self.buffer.ptr + self.pad + host_address(a) - self.lo


class StagedArrays:
    """The device side of a launch's NumPy arrays: ``address(a)`` for each, ``write_back()``
    after the launch, ``free()`` in every case."""

    def __init__(self, dev, arrays: list[np.ndarray]):
        self.dev = dev
        self.groups = _group(arrays)
        self._of: dict[int, _Group] = {id(a): g for g in self.groups for a in g.members}
        for g in self.groups:
            g.buffer = dev.empty(g.hi - g.lo + ALIGN, np.uint8)
            staged = np.zeros(g.hi - g.lo + ALIGN, np.uint8)
            staged[g.pad:g.pad + g.hi - g.lo] = _host_bytes(g.lo, g.hi)
            g.buffer.copy_from_host(staged)

    def address(self, a: np.ndarray) -> int:
        return self._of[id(a)].device_address(a)

    def write_back(self) -> None:
        """Copy each writable array's elements back from its group's buffer (read-only
        arrays, such as ``np.broadcast_to`` views, are inputs: nothing to copy)."""
        for g in self.groups:
            back = g.buffer.to_host()
            for a in g.members:
                if a.flags.writeable:
                    a[...] = np.ndarray(a.shape, a.dtype, buffer=back,
                                        offset=g.pad + host_address(a) - g.lo,
                                        strides=a.strides)

    def free(self) -> None:
        for g in self.groups:
            if g.buffer is not None and not g.buffer.freed:
                self.dev.free(g.buffer)


def _group(arrays: list[np.ndarray]) -> list[_Group]:
    """Groups of arrays with overlapping bytes, each with the span of all its members."""
    spans = sorted(((*byte_span(a), i) for i, a in enumerate(arrays)), key=lambda s: s[:2])
    groups: list[_Group] = []
    empty: list[_Group] = []  # an empty array overlaps nothing; it gets a buffer of its own
    for lo, hi, i in spans:
        if hi == lo:
            empty.append(_Group(lo, hi, [arrays[i]]))
        elif groups and lo < groups[-1].hi:
            groups[-1].hi = max(groups[-1].hi, hi)
            groups[-1].members.append(arrays[i])
        else:
            groups.append(_Group(lo, hi, [arrays[i]]))
    return groups + empty


def _host_bytes(lo: int, hi: int) -> np.ndarray:
    """A copy of host memory [lo, hi), which lies within one array's allocation (a group's
    span is covered by its members' spans, and overlapping spans share an allocation)."""
    if hi == lo:
        return np.zeros(0, np.uint8)
    return np.ctypeslib.as_array((ctypes.c_ubyte * (hi - lo)).from_address(lo)).copy()
