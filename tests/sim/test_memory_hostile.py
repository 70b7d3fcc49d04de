"""The host side of device memory under bad arguments.

Each case here once escaped as a foreign exception (MemoryError, TypeError), did something
silently wrong (``write(addr, 5)`` stored five zero bytes), or printed nonsense
(``[0x-4, 0x0)``). Now each is the simulator's own :class:`IssError` (or its
:class:`MemoryAccessError`) with a message that names the argument.
"""

from __future__ import annotations

import numpy as np
import pytest
from simtgpu.sim import memory as memory_module
from simtgpu.sim.errors import IssError, MemoryAccessError
from simtgpu.sim.memory import GlobalMemory

BASE = 0x1000  # the first usable address (the null guard's end)


@pytest.fixture
def mem() -> GlobalMemory:
    return GlobalMemory(0x3000)


@pytest.mark.parametrize("size", [1 << 40, (1 << 32) + 4, 1 << 64])
def test_more_memory_than_32_bit_addresses_reach_is_refused(size: int) -> None:
    with pytest.raises(IssError, match=rf"^GlobalMemory size 0x{size:x} is more than the "
                       r"0x100000000 bytes 32-bit addresses reach$"):
        GlobalMemory(size)


def test_a_failed_allocation_is_an_iss_error(monkeypatch) -> None:
    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(memory_module.np, "zeros", no_memory)
    with pytest.raises(IssError, match="the host cannot allocate that much memory"):
        GlobalMemory(1 << 20)


@pytest.mark.parametrize("size", [4096.0 * 2, "8192", None])
def test_size_must_be_an_integer(size) -> None:
    with pytest.raises(IssError, match="GlobalMemory size must be an integer"):
        GlobalMemory(size)


def test_numpy_integers_are_integers(mem: GlobalMemory) -> None:
    assert GlobalMemory(np.int64(0x2000)).size == 0x2000
    mem.write(np.uint32(BASE), b"\x01\x02")
    assert mem.read(np.int64(BASE), np.int32(2)) == b"\x01\x02"


@pytest.mark.parametrize(("data", "words"), [
    ("abc", "data must be bytes, not a str ('abc'); encode it first"),
    (5, "data must be bytes (or a buffer such as a NumPy array), not int"),
    (True, "not bool"),
    (None, "not NoneType"),
    (1.5, "not float"),
    ([1, 300], "must hold byte values 0..255"),
    (["a"], "must hold byte values 0..255"),
])
def test_write_of_something_not_bytes_is_refused(mem: GlobalMemory, data, words) -> None:
    with pytest.raises(IssError) as info:
        mem.write(BASE, data)
    assert str(info.value).startswith("write: ") and words in str(info.value)
    assert mem.read(BASE, 8) == bytes(8)  # nothing was written


def test_write_takes_bytes_buffers_and_byte_lists(mem: GlobalMemory) -> None:
    mem.write(BASE, bytearray(b"\x01\x02"))
    mem.write(BASE + 2, memoryview(b"\x03\x04"))
    mem.write(BASE + 4, [5, 6])
    mem.write(BASE + 6, np.arange(8, dtype=np.uint8)[::4])  # not contiguous: 0, 4
    mem.write(BASE + 8, np.array([0x0A0B0C0D], np.uint32))  # a buffer's raw bytes
    assert mem.read(BASE, 12) == b"\x01\x02\x03\x04\x05\x06\x00\x04\x0d\x0c\x0b\x0a"


@pytest.mark.parametrize(("call", "message"), [
    (lambda m: m.read(-4, 4),
     "read: [-0x4, 0x0) is outside device memory [0x1000, 0x3000)"),
    (lambda m: m.write(-8, b"ab"),
     "write: [-0x8, -0x6) is outside device memory [0x1000, 0x3000)"),
    (lambda m: m.read_words(-8, 1),
     "read_words: [-0x8, -0x4) is outside device memory [0x1000, 0x3000)"),
    (lambda m: m.write_words(-2, np.zeros(1, np.uint32)),
     "write_words: address -0x2 is not 4-aligned"),
    (lambda m: m.read(BASE, -1), "read: negative length -1"),
    (lambda m: m.read_words(BASE, -2), "read_words: negative count -2"),
])
def test_negative_addresses_read_as_numbers(mem: GlobalMemory, call, message) -> None:
    with pytest.raises(MemoryAccessError) as info:
        call(mem)
    assert str(info.value) == message


@pytest.mark.parametrize(("call", "message"), [
    (lambda m: m.read(float(BASE), 4), "read: the address must be an integer, not 4096.0"),
    (lambda m: m.read(BASE, 4.0), "read: the length must be an integer, not 4.0"),
    (lambda m: m.write("0x1000", b"a"), "write: the address must be an integer, not '0x1000'"),
    (lambda m: m.read_words(BASE, 1.5), "read_words: the count must be an integer, not 1.5"),
    (lambda m: m.write_words(None, np.zeros(1, np.uint32)),
     "write_words: the address must be an integer, not None"),
])
def test_non_integer_addresses_and_lengths_are_refused(mem: GlobalMemory, call,
                                                       message) -> None:
    with pytest.raises(IssError) as info:
        call(mem)
    assert str(info.value) == message
