"""Device buffers: a typed view of an allocation in device memory."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np

from .errors import DriverError

if TYPE_CHECKING:
    from .device import Device


class DeviceArray:
    """An n-dimensional array in device memory (C order, little-endian).

    Created by :meth:`Device.to_device`, :meth:`Device.empty` and :meth:`Device.zeros`.
    ``ptr`` is the global byte address a kernel receives for a ``ptr`` parameter. After
    :meth:`free` every use raises :class:`DriverError`.
    """

    def __init__(self, device: Device, ptr: int, shape: tuple[int, ...], dtype: np.dtype):
        self.device = device
        self._ptr = ptr
        self.shape = shape
        self.dtype = np.dtype(dtype).newbyteorder("<")  # device memory is little-endian
        self.freed = False
        self._finalizer: weakref.finalize | None = None  # set by the device that allocates it

    @property
    def ptr(self) -> int:
        self._check_live("ptr")
        return self._ptr

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0] if self.shape else 1

    def __repr__(self) -> str:
        state = "freed" if self.freed else f"ptr={self._ptr:#x}"
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype.name}, {state})"

    def _check_live(self, what: str, copy: bool = False) -> None:
        if copy and self.device._closed:  # (say which call, not the driver's inner one)
            raise DriverError(f"{what} of {self!r}: the device is closed")
        if self.freed:
            raise DriverError(f"use after free: {what} of a freed {self!r} "
                              f"(freed buffer at {self._ptr:#x})")

    def to_host(self) -> np.ndarray:
        """Copy the buffer back into a new NumPy array."""
        self._check_live("to_host()", copy=True)
        with self.device._lock:  # no other thread's launch between the wait and the read
            self.device.synchronize()
            raw = self.device.backend.read(self._ptr, self.nbytes)
        return np.frombuffer(raw, dtype=self.dtype).reshape(self.shape).copy()

    def copy_from_host(self, array: np.ndarray) -> None:
        """Overwrite the buffer with ``array`` (same number of elements; cast to our dtype).
        A value the buffer's dtype cannot hold (1.5 or 2**40 into int32, -1 into uint32,
        1e39 into float32, text, complex numbers) raises :class:`DriverError` and writes
        nothing."""
        self._check_live("copy_from_host()", copy=True)
        src = host_values(array, self.dtype, f"copy_from_host() into {self!r}")
        if src.size != self.size:
            raise DriverError(f"copy_from_host: {src.size} elements into a buffer of "
                              f"{self.size} ({self!r})")
        with self.device._lock:
            self.device.synchronize()
            self.device.backend.write(self._ptr, src.tobytes())

    def free(self) -> None:
        """Return the memory to the device; a second free raises :class:`DriverError`."""
        if self.freed:
            raise DriverError(f"double free of {self!r} (buffer at {self._ptr:#x})")
        self.device.free(self)


def host_values(array: object, dtype: np.dtype, what: str) -> np.ndarray:
    """``array`` as a C-ordered NumPy array of ``dtype``; :class:`DriverError` (naming
    ``what``) for anything that is not an array of numbers, or whose values ``dtype`` cannot
    hold: a fraction, NaN or an out-of-range number for an integer dtype, a finite number
    that would become infinite in a narrower float, a complex number for a real dtype."""
    if isinstance(array, DeviceArray):
        raise DriverError(f"{what}: the source is a DeviceArray (device memory); copy it "
                          "to the host with to_host() first")
    try:
        src = np.asarray(array)
    except (TypeError, ValueError) as e:
        raise DriverError(f"{what}: not an array of numbers: {e}") from None
    dt = np.dtype(dtype)
    numeric = "biuf" + ("c" if dt.kind == "c" else "")
    if dt.kind not in "biufc":  # raw or structured buffers: NumPy's own conversion rules
        try:
            return np.ascontiguousarray(src, dtype=dt)
        except (TypeError, ValueError) as e:
            raise DriverError(f"{what}: cannot convert {src.dtype} values to {dt}: {e}") \
                from None
    if src.dtype.kind not in numeric:
        raise DriverError(f"{what}: {src.dtype} values are not numbers a buffer of {dt} "
                          "can hold")
    with np.errstate(all="ignore"):
        out = np.ascontiguousarray(src, dtype=dt)
    if src.size and src.dtype != dt:
        if dt.kind in "biu":
            if src.dtype.kind in "fc":
                lost = ~np.isfinite(src) | (out != src)
            else:  # integer to integer: compare exactly (NumPy compares mixed signs right)
                lost = out != src
        elif src.dtype.kind in "fc" and dt.kind in "fc":
            lost = np.isfinite(src) & ~np.isfinite(out)
        else:
            lost = np.zeros(src.shape, bool)
        if np.any(lost):
            bad = src.reshape(-1)[int(np.flatnonzero(lost.reshape(-1))[0])]
            raise DriverError(f"{what}: {bad} cannot be stored exactly as {dt} (convert "
                              "the values first, e.g. with np.round or .astype)")
    return out
