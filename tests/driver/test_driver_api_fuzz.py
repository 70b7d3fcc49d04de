"""Fuzz target: random sequences of host-API calls against a model of what must happen.

The model keeps every live buffer's contents. Allocations, copies, frees (also double and
foreign ones), launches (vector add, and a kernel that faults), reads and a close are drawn
at random; every call either does what the model says or raises DriverError (KernelFault for
the faulting kernel), never another exception, and the device's memory accounting always
matches the buffers the model holds.
"""

from __future__ import annotations

import numpy as np
import pytest
from fuzzing import fuzz_settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from simtgpu.assembler.examples import example_asm
from simtgpu.driver_model import Device, DriverError
from simtgpu.sim import KernelFault

FAULTS = ".kernel bad\n    .param p, ptr\n    li r1, 0\n    stg [r1], r1\n    exit\n.end\n"
JUNK = st.one_of(st.none(), st.text(max_size=3), st.floats(), st.just([1, [2]]),
                 st.integers(-3, -1), st.just(2 ** 70), st.just((2 ** 32, 2 ** 32)))
DTYPES = st.sampled_from([np.float32, np.int32, np.uint32])


class DeviceModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dev = Device(config="tiny")
        mod = self.dev.load_module(example_asm("vector_add"))
        self.vadd = mod.kernel("vector_add")
        self.bad = self.dev.load_module(FAULTS).kernel("bad")
        self.base = self.dev.memory_stats().allocations
        self.live: list[tuple[object, np.ndarray]] = []
        self.freed: list[object] = []
        self.closed = False

    def teardown(self) -> None:
        self.dev.close()

    @precondition(lambda self: not self.closed)
    @rule(n=st.integers(1, 40), dtype=DTYPES, seed=st.integers(0, 2 ** 16))
    def to_device(self, n, dtype, seed) -> None:
        host = (np.random.default_rng(seed).standard_normal(n) * 100).astype(dtype)
        self.live.append((self.dev.to_device(host), host))

    @precondition(lambda self: not self.closed)
    @rule(shape=JUNK, dtype=st.one_of(DTYPES, st.just("notadtype")))
    def bad_allocation(self, shape, dtype) -> None:
        try:
            arr = self.dev.empty(shape, dtype)
        except DriverError:
            return
        # junk that is a valid request after all (say empty(0)): a real, empty buffer
        assert arr.nbytes == 0 or isinstance(shape, int)
        self.live.append((arr, arr.to_host()))

    @precondition(lambda self: self.live and not self.closed)
    @rule(pick=st.integers(0, 1000))
    def read_back(self, pick) -> None:
        arr, host = self.live[pick % len(self.live)]
        assert np.array_equal(arr.to_host().view(np.uint32), host.view(np.uint32))

    @precondition(lambda self: self.live and not self.closed)
    @rule(pick=st.integers(0, 1000))
    def free(self, pick) -> None:
        arr, _ = self.live.pop(pick % len(self.live))
        arr.free()
        self.freed.append(arr)

    @precondition(lambda self: self.freed and not self.closed)
    @rule(pick=st.integers(0, 1000), how=st.sampled_from(["free", "to_host", "launch"]))
    def use_after_free(self, pick, how) -> None:
        arr = self.freed[pick % len(self.freed)]
        try:
            if how == "free":
                self.dev.free(arr)
            elif how == "to_host":
                arr.to_host()
            else:
                self.dev.launch(self.vadd, 1, 4, (arr, arr, arr, 1))
        except DriverError:
            return
        raise AssertionError(f"{how} of a freed buffer was accepted")

    @precondition(lambda self: not self.closed)
    @rule(junk=JUNK)
    def free_junk(self, junk) -> None:
        try:
            self.dev.free(junk)
        except DriverError:
            return
        raise AssertionError(f"free({junk!r}) was accepted")

    @precondition(lambda self: not self.closed
                  and sum(h.dtype == np.float32 and h.size > 0 for _, h in self.live) >= 2)
    @rule(data=st.data())
    def vector_add(self, data) -> None:
        floats = [(a, h) for a, h in self.live if h.dtype == np.float32 and h.size]
        (a, ha), (b, hb) = data.draw(st.permutations(floats))[:2]
        n = min(ha.size, hb.size)
        out = self.dev.empty(n, np.float32)
        self.dev.launch(self.vadd, -(-n // 8), 8, (a, b, out, n))
        self.live.append((out, (ha[:n] + hb[:n]).astype(np.float32)))

    @precondition(lambda self: not self.closed)
    @rule()
    def faulting_launch(self) -> None:
        try:
            self.dev.launch(self.bad, 1, 4, (0,))
        except KernelFault:
            return
        raise AssertionError("a store to address 0 did not fault")

    @precondition(lambda self: not self.closed)
    @rule()
    def close(self) -> None:
        self.dev.close()
        self.closed = True

    @precondition(lambda self: self.closed)
    @rule(how=st.sampled_from(["empty", "launch", "to_host", "synchronize"]))
    def use_after_close(self, how) -> None:
        calls = {"empty": lambda: self.dev.empty(4),
                 "launch": lambda: self.dev.launch(self.bad, 1, 4, (0,)),
                 "to_host": lambda: self.live[0][0].to_host() if self.live
                 else self.dev.synchronize(),
                 "synchronize": self.dev.synchronize}
        try:
            calls[how]()
        except DriverError as e:
            assert "closed" in str(e)
            return
        raise AssertionError(f"{how} on a closed device was accepted")

    @invariant()
    def accounting_matches_the_model(self) -> None:
        if not self.closed:
            assert self.dev.memory_stats().allocations == self.base + len(self.live)


DeviceModel.TestCase.settings = fuzz_settings(25)
test_driver_api_sequences = DeviceModel.TestCase
test_driver_api_sequences.pytestmark = [pytest.mark.fuzz]
