"""Device (global) memory: a little-endian, byte-addressed array shared by every launch.

The host side (driver, tests) reads and writes bytes or words; kernels reach it through the
simulator's load, store and atomic instructions, which fault instead of raising.
Addresses below :data:`simtgpu.isa.GLOBAL_NULL_GUARD` are the null guard and are out of
range for the host too, so a null pointer is caught on either side.
"""

from __future__ import annotations

import numpy as np
from simtgpu.isa import GLOBAL_NULL_GUARD

from .errors import IssError, MemoryAccessError

WORD = np.dtype("<u4")
MAX_SIZE = 1 << 32
"""Largest device memory: every byte a 32-bit address names."""


def _integer(what: str, value: object) -> int:
    """``value`` as a Python int (NumPy integers included); :class:`IssError` naming ``what``
    for anything else (a float, a string, a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise IssError(f"{what} must be an integer, not {value!r}")
    return int(value)


def _as_bytes(data: object) -> bytes:
    """What :meth:`GlobalMemory.write` stores for ``data``; :class:`IssError` for a str or an
    int (``bytes(5)`` would be five zero bytes) and anything else that is not bytes."""
    if isinstance(data, str):
        raise IssError(f"write: data must be bytes, not a str ({data[:20]!r}); encode it first")
    if not isinstance(data, (list, tuple)):
        try:
            return memoryview(data).tobytes()
        except TypeError:
            raise IssError("write: data must be bytes (or a buffer such as a NumPy array), "
                           f"not {type(data).__name__}") from None
    try:
        return bytes(data)
    except (TypeError, ValueError) as e:
        raise IssError(f"write: a {type(data).__name__} of data must hold byte values "
                       f"0..255 ({e})") from None


def _hex(value: int) -> str:
    """``0x1f``, and ``-0x4`` for a negative value (not ``0x-4``)."""
    return f"-0x{-value:x}" if value < 0 else f"0x{value:x}"


class GlobalMemory:
    """``size_bytes`` of zeroed device memory (a multiple of 4, larger than the null guard)."""

    def __init__(self, size_bytes: int):
        size_bytes = _integer("GlobalMemory size", size_bytes)
        if size_bytes % 4 or size_bytes <= GLOBAL_NULL_GUARD:
            raise IssError(f"GlobalMemory size must be a multiple of 4 larger than the "
                           f"0x{GLOBAL_NULL_GUARD:x}-byte null guard, not {size_bytes}")
        if size_bytes > MAX_SIZE:
            raise IssError(f"GlobalMemory size {_hex(size_bytes)} is more than the "
                           f"{_hex(MAX_SIZE)} bytes 32-bit addresses reach")
        try:
            self._bytes = np.zeros(size_bytes, dtype=np.uint8)
        except MemoryError:
            raise IssError(f"GlobalMemory size {_hex(size_bytes)}: the host cannot allocate "
                           "that much memory") from None
        self.words: np.ndarray = self._bytes.view(WORD)
        """Word view of the whole memory (index = address // 4); the simulator's fast path."""

    @property
    def size(self) -> int:
        return int(self._bytes.size)

    def _check(self, what: str, addr: object, nbytes: int, align: int = 1) -> int:
        """``addr`` as an int once it is an integer naming ``nbytes`` of usable device memory
        (and a multiple of ``align``): :class:`IssError` for a non-integer,
        :class:`MemoryAccessError` for a place outside memory."""
        addr = _integer(f"{what}: the address", addr)
        if nbytes < 0:
            raise MemoryAccessError(f"{what}: negative length {nbytes}")
        if addr % align:
            raise MemoryAccessError(f"{what}: address {_hex(addr)} is not {align}-aligned")
        if addr < GLOBAL_NULL_GUARD or addr + nbytes > self.size:
            raise MemoryAccessError(
                f"{what}: [{_hex(addr)}, {_hex(addr + nbytes)}) is outside device memory "
                f"[0x{GLOBAL_NULL_GUARD:x}, 0x{self.size:x})")
        return addr

    def read(self, addr: int, nbytes: int) -> bytes:
        """Copy ``nbytes`` starting at byte address ``addr``."""
        nbytes = _integer("read: the length", nbytes)
        addr = self._check("read", addr, nbytes)
        return self._bytes[addr:addr + nbytes].tobytes()

    def write(self, addr: int, data: bytes | bytearray | memoryview) -> None:
        """Store ``data`` starting at byte address ``addr``: bytes, any object with the
        buffer protocol (a NumPy array: its raw bytes), or a list or tuple of byte values."""
        blob = _as_bytes(data)
        addr = self._check("write", addr, len(blob))
        self._bytes[addr:addr + len(blob)] = np.frombuffer(blob, dtype=np.uint8)

    def read_words(self, addr: int, n: int) -> np.ndarray:
        """Copy ``n`` 32-bit words from the 4-aligned address ``addr`` (uint32 array)."""
        n = _integer("read_words: the count", n)
        if n < 0:
            raise MemoryAccessError(f"read_words: negative count {n}")
        addr = self._check("read_words", addr, 4 * n, align=4)
        return self.words[addr // 4:addr // 4 + n].astype(np.uint32)

    def write_words(self, addr: int, values: np.ndarray) -> None:
        """Store an array of words: 4-byte items (uint32, int32, float32) as their bit
        patterns, other integer arrays modulo 2**32."""
        arr = np.ascontiguousarray(values)
        if arr.dtype.itemsize != 4:
            if arr.dtype.kind not in "iub":
                raise IssError(f"write_words stores 32-bit words; convert the {arr.dtype} "
                               "array first (float32 for floats)")
            arr = arr.astype(np.int64).astype(np.uint32)
        arr = arr.reshape(-1).view(np.uint32)
        addr = self._check("write_words", addr, 4 * arr.size, align=4)
        self.words[addr // 4:addr // 4 + arr.size] = arr
