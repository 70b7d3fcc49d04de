"""Fuzz target: random programs of host-API calls against a model of what must happen.

The model keeps every live buffer's contents. A program is a list of up to 50 calls drawn by
Hypothesis: allocations, copies, frees (also double and foreign ones), launches (vector add,
and a kernel that faults), reads, a close and calls after it. Each call either does what the
model says or raises DriverError (KernelFault for the faulting kernel), never another
exception, and the device's memory accounting matches the buffers the model holds after
every call. A call that needs buffers when there are none (a read, a free, a vector add)
allocates one instead, so every call advances the program; once the device is closed, every
call is a use after close and must be refused (closing again is allowed); a use after close
on an open device is skipped.

The program is interpreted here rather than run as a Hypothesis ``RuleBasedStateMachine``:
the machine spent most of its time choosing rules that satisfy their preconditions, and drew
50 steps for every input. The kernels are assembled once per session, because the contract
under test is the driver's, not the assembler's (which has targets of its own).
"""

from __future__ import annotations

import numpy as np
from fuzzing import fuzz_target
from hypothesis import event, example, given
from hypothesis import strategies as st
from simtgpu.assembler import assemble, assemble_file
from simtgpu.assembler.examples import example_asm
from simtgpu.driver_model import Device, DriverError
from simtgpu.sim import KernelFault

FAULTS = ".kernel bad\n    .param p, ptr\n    li r1, 0\n    stg [r1], r1\n    exit\n.end\n"
VADD_OBJ = assemble_file(example_asm("vector_add"))
FAULTS_OBJ = assemble(FAULTS, "bad.s")
MAX_CALLS = 50

JUNK = st.one_of(st.none(), st.text(max_size=3), st.floats(), st.just([1, [2]]),
                 st.integers(-3, -1), st.just(2 ** 70), st.just((2 ** 32, 2 ** 32)))
DTYPES = st.sampled_from([np.float32, np.int32, np.uint32])
PICK = st.integers(0, 1000)
CALLS = st.one_of(
    st.tuples(st.just("to_device"), st.integers(1, 40), DTYPES, st.integers(0, 2 ** 16)),
    st.tuples(st.just("bad_allocation"), JUNK, st.one_of(DTYPES, st.just("notadtype"))),
    st.tuples(st.just("read_back"), PICK),
    st.tuples(st.just("free"), PICK),
    st.tuples(st.just("use_after_free"), PICK, st.sampled_from(["free", "to_host", "launch"])),
    st.tuples(st.just("free_junk"), JUNK),
    st.tuples(st.just("vector_add"), PICK, PICK),
    st.tuples(st.just("faulting_launch")),
    st.tuples(st.just("close")),
    st.tuples(st.just("use_after_close"),
              st.sampled_from(["empty", "to_device", "free", "launch", "to_host",
                               "synchronize"])),
)
PROGRAMS = st.one_of(st.integers(1, 12), st.integers(1, MAX_CALLS)).flatmap(
    lambda n: st.lists(CALLS, min_size=n, max_size=n))


class DeviceModel:
    """A fresh device and the model of its buffers; :meth:`call` runs one call of a program."""

    def __init__(self) -> None:
        self.dev = Device(config="tiny")
        self.vadd = self.dev.load_module(VADD_OBJ).kernel("vector_add")
        self.bad = self.dev.load_module(FAULTS_OBJ).kernel("bad")
        self.base = self.dev.memory_stats().allocations
        self.live: list[tuple[object, np.ndarray]] = []
        self.freed: list[object] = []
        self.closed = False

    def call(self, kind: str, *args: object) -> bool:
        """Run one call (False if skipped), then check the accounting."""
        if self.closed:
            self.use_after_close(args[0] if kind == "use_after_close" else AFTER_CLOSE[kind])
            return True
        if kind == "use_after_close":
            return False
        getattr(self, kind)(*args)
        if not self.closed:
            assert self.dev.memory_stats().allocations == self.base + len(self.live)
        return True

    def to_device(self, n: int, dtype: type, seed: int) -> None:
        host = (np.random.default_rng(seed).standard_normal(n) * 100).astype(dtype)
        self.live.append((self.dev.to_device(host), host))

    def allocate(self, pick: int) -> None:
        """What a call that needs buffers does when there are none: make one, so that every
        call of a program advances it."""
        self.to_device(1 + pick % 40, np.float32, pick)

    def bad_allocation(self, shape: object, dtype: object) -> None:
        try:
            arr = self.dev.empty(shape, dtype)
        except DriverError:
            return
        # junk that is a valid request after all (say empty(0)): a real, empty buffer
        assert arr.nbytes == 0 or isinstance(shape, int)
        self.live.append((arr, arr.to_host()))

    def read_back(self, pick: int) -> None:
        if not self.live:
            return self.allocate(pick)
        arr, host = self.live[pick % len(self.live)]
        assert np.array_equal(arr.to_host().view(np.uint32), host.view(np.uint32))
        return None

    def free(self, pick: int) -> None:
        if not self.live:
            return self.allocate(pick)
        arr, _ = self.live.pop(pick % len(self.live))
        arr.free()
        self.freed.append(arr)

    def use_after_free(self, pick: int, how: str) -> None:
        if not self.freed:
            return self.free(pick)
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

    def free_junk(self, junk: object) -> None:
        try:
            self.dev.free(junk)
        except DriverError:
            return
        raise AssertionError(f"free({junk!r}) was accepted")

    def vector_add(self, pick_a: int, pick_b: int) -> None:
        floats = [(a, h) for a, h in self.live if h.dtype == np.float32 and h.size]
        if len(floats) < 2:
            return self.allocate(pick_a + pick_b)
        i = pick_a % len(floats)
        j = (i + 1 + pick_b % (len(floats) - 1)) % len(floats)  # any other buffer
        (a, ha), (b, hb) = floats[i], floats[j]
        n = min(ha.size, hb.size)
        out = self.dev.empty(n, np.float32)
        self.dev.launch(self.vadd, -(-n // 8), 8, (a, b, out, n))
        self.live.append((out, (ha[:n] + hb[:n]).astype(np.float32)))

    def faulting_launch(self) -> None:
        try:
            self.dev.launch(self.bad, 1, 4, (0,))
        except KernelFault:
            return
        raise AssertionError("a store to address 0 did not fault")

    def close(self) -> None:
        self.dev.close()
        self.closed = True

    def use_after_close(self, how: str) -> None:
        if how == "close":
            self.dev.close()  # closing twice is allowed
            return
        some = self.live[0][0] if self.live else None
        calls = {"empty": lambda: self.dev.empty(4),
                 "to_device": lambda: self.dev.to_device(np.zeros(4, np.float32)),
                 "free": lambda: self.dev.free(some if some is not None else 0),
                 "launch": lambda: self.dev.launch(self.bad, 1, 4, (0,)),
                 "to_host": lambda: some.to_host() if some is not None
                 else self.dev.synchronize(),
                 "synchronize": self.dev.synchronize}
        try:
            calls[how]()
        except DriverError as e:
            assert "closed" in str(e)
            return
        raise AssertionError(f"{how} on a closed device was accepted")


# what each call becomes once the device is closed
AFTER_CLOSE = {"to_device": "to_device", "bad_allocation": "empty", "read_back": "to_host",
               "free": "free", "use_after_free": "launch", "free_junk": "free",
               "vector_add": "launch", "faulting_launch": "launch", "close": "close"}


def _length_event(n: int) -> str:
    """A bucket of the program length, for ``--hypothesis-show-statistics``."""
    for top in (0, 4, 9, 19, 34):
        if n <= top:
            return f"calls run: up to {top}"
    return f"calls run: 35 to {MAX_CALLS}"


@fuzz_target(200)
@given(program=PROGRAMS)
@example(program=[("to_device", 3, np.float32, 0), ("free", 0), ("to_device", 5, np.float32, 1),
                  ("use_after_free", 0, "to_host"), ("close",), ("use_after_close", "launch")])
def test_driver_api_sequences(program: list[tuple]) -> None:
    model = DeviceModel()
    try:
        ran = sum(model.call(*c) for c in program)
    finally:
        model.dev.close()
    event(_length_event(ran))
