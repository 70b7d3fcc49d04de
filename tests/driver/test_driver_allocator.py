"""The device-memory allocator: random alloc/free sequences against a simple model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from simtgpu.driver_model.allocator import Allocator
from simtgpu.driver_model.errors import DriverError

BASE, SIZE, ALIGN = 0x1000, 64 * 1024, 256

ops = st.lists(
    st.one_of(
        st.tuples(st.just("alloc"), st.integers(0, 9000), st.sampled_from([None, 512, 4096])),
        st.tuples(st.just("free"), st.integers(0, 1000), st.none()),
    ),
    max_size=60,
)


def _snapshot(a: Allocator) -> tuple:
    return (a.free_blocks(), a.live_blocks(), a.stats())


def _check_invariants(a: Allocator, live: dict[int, int]) -> None:
    blocks = sorted(live.items())
    for (s0, n0), (s1, _) in zip(blocks, blocks[1:], strict=False):
        assert s0 + n0 <= s1, "live blocks overlap"
    free = a.free_blocks()
    for (s0, n0), (s1, _) in zip(free, free[1:], strict=False):
        assert s0 + n0 < s1, "free blocks overlap or were not coalesced"
    # Live and free blocks tile the range exactly.
    spans = sorted([(s, s + a.size_of(s)) for s in live] + [(s, s + n) for s, n in free])
    pos = BASE
    for s, e in spans:
        assert s == pos
        pos = e
    assert pos == BASE + SIZE
    st_ = a.stats()
    assert st_.allocated_bytes + st_.free_bytes == SIZE
    assert st_.allocations == len(live)
    assert st_.largest_free_block == max((n for _, n in free), default=0)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_random_sequences_never_overlap_and_coalesce(seq):
    a = Allocator(BASE, SIZE, ALIGN)
    live: dict[int, int] = {}
    for op, arg, align in seq:
        if op == "alloc":
            before = _snapshot(a)
            try:
                p = a.alloc(arg, align)
            except DriverError as e:
                assert "out of device memory" in str(e)
                assert _snapshot(a) == before, "a failed alloc changed the heap"
                continue
            assert p % (align or ALIGN) == 0 and p % ALIGN == 0
            assert a.size_of(p) >= max(arg, 1)
            live[p] = arg
        elif live:
            p = sorted(live)[arg % len(live)]
            a.free(p)
            del live[p]
        _check_invariants(a, live)
    for p in list(live):
        a.free(p)
    assert a.free_blocks() == [(BASE, SIZE)]
    assert a.stats().allocations == 0


def test_out_of_memory_names_sizes_and_changes_nothing():
    a = Allocator(BASE, SIZE, ALIGN)
    p = a.alloc(SIZE // 2)
    a.alloc(1000)
    a.free(p)
    before = _snapshot(a)
    with pytest.raises(DriverError) as e:
        a.alloc(SIZE)
    msg = str(e.value)
    assert f"requested {SIZE} bytes" in msg
    assert f"free {a.stats().free_bytes} bytes" in msg
    assert f"largest free block {SIZE // 2} bytes" in msg
    assert _snapshot(a) == before


def test_double_free_foreign_and_interior_pointers():
    a = Allocator(BASE, SIZE, ALIGN)
    p = a.alloc(1024)
    q = a.alloc(100)
    a.free(p)
    before = _snapshot(a)
    with pytest.raises(DriverError, match="double free"):
        a.free(p)
    with pytest.raises(DriverError, match="points inside"):
        a.free(q + 8)
    with pytest.raises(DriverError, match="not allocated"):
        a.free(0x123400)
    assert _snapshot(a) == before


def test_first_fit_reuses_freed_space_and_rounds_sizes():
    a = Allocator(BASE, SIZE, ALIGN)
    p0 = a.alloc(1)
    p1 = a.alloc(257)
    assert p0 == BASE and a.size_of(p0) == 256
    assert p1 == BASE + 256 and a.size_of(p1) == 512
    a.free(p0)
    assert a.alloc(200) == BASE  # the hole is reused
    assert a.alloc(0) == BASE + 768  # zero bytes still gets a distinct address


def test_larger_alignment_request():
    a = Allocator(BASE, SIZE, ALIGN)
    a.alloc(10)
    p = a.alloc(10, align=4096)
    assert p % 4096 == 0
    with pytest.raises(DriverError, match="power of two"):
        a.alloc(10, align=3000)
