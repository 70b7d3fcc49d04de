"""A first-fit heap allocator over a device address range, with coalescing free list.

Used for device (global) memory and for instruction memory. Every block starts on the
allocator's alignment and spans a whole number of alignment units, so any free block can
satisfy any request that fits. Misuse (out of memory, double free, a pointer the allocator
never returned) raises :class:`DriverError` and changes nothing.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from .errors import DriverError


@dataclass(frozen=True)
class MemoryStats:
    """Usage of one address range; ``allocations`` counts live blocks."""

    total_bytes: int
    allocated_bytes: int
    free_bytes: int
    largest_free_block: int
    allocations: int


def _round_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


class Allocator:
    """Allocate aligned blocks from ``[base, base + size)``.

    Parameters
    ----------
    base, size:
        The managed range; both must be multiples of ``alignment``.
    alignment:
        Power of two; every returned address is a multiple of it (default 256 bytes, so
        a warp's accesses to the start of a buffer coalesce from a clean boundary).
    what:
        Name of the memory in error messages (``device memory``, ``instruction memory``).
    """

    def __init__(self, base: int, size: int, alignment: int = 256, what: str = "device memory"):
        if alignment <= 0 or alignment & (alignment - 1):
            raise ValueError(f"alignment must be a power of two, not {alignment}")
        if base % alignment or size % alignment or size <= 0:
            raise ValueError(f"base {base:#x} and size {size:#x} must be positive multiples "
                             f"of the alignment {alignment}")
        self.base = base
        self.size = size
        self.alignment = alignment
        self.what = what
        # Free blocks as parallel sorted lists of starts and sizes (never adjacent: coalesced).
        self._free_starts: list[int] = [base]
        self._free_sizes: list[int] = [size]
        self._live: dict[int, int] = {}  # start -> size of live blocks
        self._freed: set[int] = set()  # starts freed since last reuse, to name double frees

    # -- queries ---------------------------------------------------------------------------
    def stats(self) -> MemoryStats:
        free = sum(self._free_sizes)
        return MemoryStats(self.size, self.size - free, free, max(self._free_sizes, default=0),
                           len(self._live))

    def free_blocks(self) -> list[tuple[int, int]]:
        """(start, size) of every free block, in address order."""
        return list(zip(self._free_starts, self._free_sizes, strict=True))

    def live_blocks(self) -> dict[int, int]:
        """start -> size of every live allocation (sizes rounded to the alignment)."""
        return dict(self._live)

    def size_of(self, ptr: int) -> int:
        return self._live[ptr]

    def owns(self, ptr: int) -> bool:
        return ptr in self._live

    # -- alloc / free ----------------------------------------------------------------------
    def alloc(self, nbytes: int, align: int | None = None) -> int:
        """Return the start of a new block of at least ``nbytes`` (0 bytes gets one unit)."""
        if nbytes < 0:
            raise DriverError(f"cannot allocate a negative size ({nbytes} bytes)")
        align = self.alignment if align is None else max(align, self.alignment)
        if align & (align - 1):
            raise DriverError(f"alignment must be a power of two, not {align}")
        need = _round_up(max(nbytes, 1), self.alignment)
        for i, (start, size) in enumerate(zip(self._free_starts, self._free_sizes, strict=True)):
            at = _round_up(start, align)
            if at + need <= start + size:
                self._take(i, at, need)
                self._live[at] = need
                self._freed.discard(at)
                return at
        st = self.stats()
        raise DriverError(
            f"out of {self.what}: requested {nbytes} bytes ({need} after rounding to "
            f"{self.alignment}), free {st.free_bytes} bytes, largest free block "
            f"{st.largest_free_block} bytes")

    def _take(self, i: int, at: int, need: int) -> None:
        start, size = self._free_starts[i], self._free_sizes[i]
        del self._free_starts[i], self._free_sizes[i]
        pieces = [(start, at - start), (at + need, start + size - at - need)]
        for s, n in reversed(pieces):
            if n:
                self._free_starts.insert(i, s)
                self._free_sizes.insert(i, n)
        # Inserted right piece first, so the left piece (if any) ends up before it.

    def free(self, ptr: int) -> None:
        """Return a block; neighbours in the free list merge with it."""
        size = self._live.get(ptr)
        if size is None:
            raise DriverError(self._explain_bad_free(ptr))
        del self._live[ptr]
        self._freed.add(ptr)
        i = bisect.bisect_left(self._free_starts, ptr)
        start, n = ptr, size
        if i < len(self._free_starts) and self._free_starts[i] == ptr + size:  # merge right
            n += self._free_sizes[i]
            del self._free_starts[i], self._free_sizes[i]
        if i > 0 and self._free_starts[i - 1] + self._free_sizes[i - 1] == ptr:  # merge left
            self._free_sizes[i - 1] += n
            return
        self._free_starts.insert(i, start)
        self._free_sizes.insert(i, n)

    def _explain_bad_free(self, ptr: int) -> str:
        if ptr in self._freed:
            return f"double free of {self.what} block {ptr:#x}"
        for start, size in self._live.items():
            if start < ptr < start + size:
                return (f"free of {ptr:#x}, which points inside the {self.what} block at "
                        f"{start:#x} (free the address the allocation returned)")
        return f"free of {ptr:#x}, which was not allocated from this device's {self.what}"
