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


class GlobalMemory:
    """``size_bytes`` of zeroed device memory (a multiple of 4, larger than the null guard)."""

    def __init__(self, size_bytes: int):
        if not isinstance(size_bytes, int) or isinstance(size_bytes, bool):
            raise IssError(f"GlobalMemory size must be an integer, not {size_bytes!r}")
        if size_bytes % 4 or size_bytes <= GLOBAL_NULL_GUARD:
            raise IssError(f"GlobalMemory size must be a multiple of 4 larger than the "
                           f"0x{GLOBAL_NULL_GUARD:x}-byte null guard, not {size_bytes}")
        self._bytes = np.zeros(size_bytes, dtype=np.uint8)
        self.words: np.ndarray = self._bytes.view(WORD)
        """Word view of the whole memory (index = address // 4); the simulator's fast path."""

    @property
    def size(self) -> int:
        return int(self._bytes.size)

    def _check(self, what: str, addr: int, nbytes: int) -> None:
        if nbytes < 0:
            raise MemoryAccessError(f"{what}: negative length {nbytes}")
        if addr < GLOBAL_NULL_GUARD or addr + nbytes > self.size:
            raise MemoryAccessError(
                f"{what}: [0x{addr:x}, 0x{addr + nbytes:x}) is outside device memory "
                f"[0x{GLOBAL_NULL_GUARD:x}, 0x{self.size:x})")

    def read(self, addr: int, nbytes: int) -> bytes:
        """Copy ``nbytes`` starting at byte address ``addr``."""
        self._check("read", addr, nbytes)
        return self._bytes[addr:addr + nbytes].tobytes()

    def write(self, addr: int, data: bytes | bytearray | memoryview) -> None:
        """Store ``data`` starting at byte address ``addr``."""
        data = bytes(data)
        self._check("write", addr, len(data))
        self._bytes[addr:addr + len(data)] = np.frombuffer(data, dtype=np.uint8)

    def read_words(self, addr: int, n: int) -> np.ndarray:
        """Copy ``n`` 32-bit words from the 4-aligned address ``addr`` (uint32 array)."""
        if addr % 4:
            raise MemoryAccessError(f"read_words: address 0x{addr:x} is not 4-aligned")
        self._check("read_words", addr, 4 * n)
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
        if addr % 4:
            raise MemoryAccessError(f"write_words: address 0x{addr:x} is not 4-aligned")
        self._check("write_words", addr, 4 * arr.size)
        self.words[addr // 4:addr // 4 + arr.size] = arr
