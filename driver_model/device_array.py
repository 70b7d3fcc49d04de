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

    def _check_live(self, what: str) -> None:
        if self.freed:
            raise DriverError(f"use after free: {what} of a freed {self!r} "
                              f"(freed buffer at {self._ptr:#x})")

    def to_host(self) -> np.ndarray:
        """Copy the buffer back into a new NumPy array."""
        self._check_live("to_host()")
        with self.device._lock:  # no other thread's launch between the wait and the read
            self.device.synchronize()
            raw = self.device.backend.read(self._ptr, self.nbytes)
        return np.frombuffer(raw, dtype=self.dtype).reshape(self.shape).copy()

    def copy_from_host(self, array: np.ndarray) -> None:
        """Overwrite the buffer with ``array`` (same number of elements; cast to our dtype)."""
        self._check_live("copy_from_host()")
        src = np.ascontiguousarray(array, dtype=self.dtype)
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
