"""Host-API misuse from the hostile-input review: each call below once raised a foreign
exception, succeeded wrongly or ran where it should not; now each is a DriverError that
changes nothing, and the device stays usable."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest
from simtgpu.assembler.examples import EXAMPLES_ASM
from simtgpu.driver_model import Device, DriverError

ASM = EXAMPLES_ASM


@pytest.fixture
def dev():
    with Device(config="tiny") as d:
        yield d


@pytest.mark.parametrize(("call", "message"), [
    (lambda d: d.free("abc"), "free() takes a DeviceArray or an address, not str"),
    (lambda d: d.free(None), "free() takes a DeviceArray or an address, not NoneType"),
    (lambda d: d.empty(2.5), "a shape is an int or a tuple of ints, not 2.5"),
    (lambda d: d.empty("ten"), "a shape is an int or a tuple of ints, not 'ten'"),
    (lambda d: d.empty(2 ** 70), "bytes for shape"),
    (lambda d: d.empty((2 ** 32, 2 ** 32)), "bytes for shape"),
    (lambda d: d.empty(16, "notadtype"), "'notadtype' is not a NumPy dtype"),
    (lambda d: d.empty(4, object), "cannot live in device memory"),
    (lambda d: d.to_device([[1, 2], [3]]), "to_device(): not an array"),
    (lambda d: d.load_module(42), "load_module() takes a path"),
    (lambda d: d.launch(d.load_module(ASM / "vector_add.s").kernel("vector_add"),
                        trace=42), "takes a path or a writable text file, not int"),
])
def test_misuse_is_a_driver_error_and_changes_nothing(dev, call, message) -> None:
    before = dev.memory_stats()
    with pytest.raises(DriverError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call(dev)
    if "load_module" not in message and "trace" not in message:
        assert dev.memory_stats() == before


def test_unknown_backend_option_is_named() -> None:
    with pytest.raises(DriverError, match="no option.* frobnicate .*instruction_budget"):
        Device(frobnicate=1)


def test_closed_device_refuses_everything() -> None:
    dev = Device(config="tiny")
    k = dev.load_module(ASM / "vector_add.s").kernel("vector_add")
    a = dev.zeros(8, np.float32)
    dev.close()
    dev.close()  # twice is fine
    for call in (lambda: dev.launch(k, 1, 8, (a, a, a, 8)), lambda: dev.empty(4),
                 lambda: a.to_host(), lambda: dev.synchronize()):
        with pytest.raises(DriverError, match="the device is closed"):
            call()


def test_dropped_buffer_is_returned_to_the_device(dev) -> None:
    baseline = dev.memory_stats().allocated_bytes
    buf = dev.empty(1 << 16, np.float32)
    assert dev.memory_stats().allocated_bytes > baseline
    del buf
    gc.collect()
    keep = dev.empty(4, np.float32)  # the next allocation returns what was dropped first
    assert dev.memory_stats().allocations == _driver_blocks(dev) + 1
    keep.free()
    assert dev.memory_stats().allocated_bytes == baseline


def _driver_blocks(dev: Device) -> int:
    """The driver's own live allocations (ring and fence) plus module data sections."""
    return 2 + sum(m.data_base is not None for m in dev._modules)


def test_one_device_from_two_threads_gives_right_answers() -> None:
    with Device(config="tiny") as dev:
        k = dev.load_module(ASM / "vector_add.s").kernel("vector_add")
        errors: list[BaseException] = []

        def work(seed: int) -> None:
            rng = np.random.default_rng(seed)
            try:
                for _ in range(6):
                    n = int(rng.integers(1, 64))
                    a, b = rng.standard_normal((2, n)).astype(np.float32)
                    da, db, dc = dev.to_device(a), dev.to_device(b), dev.empty(n, np.float32)
                    dev.launch(k, -(-n // 8), 8, (da, db, dc, n))
                    assert np.array_equal(dc.to_host(), a + b)
                    for x in (da, db, dc):
                        x.free()
            except BaseException as e:  # noqa: BLE001 - reported by the main thread
                errors.append(e)

        threads = [threading.Thread(target=work, args=(s,)) for s in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert dev.memory_stats().allocations == _driver_blocks(dev)


def test_rtl_backend_refuses_iss_only_options_instead_of_ignoring_them() -> None:
    from simtgpu.driver_model.backend_rtl import RtlBackend

    # refused before any model is built
    with pytest.raises(DriverError, match="no instruction budget"):
        Device(backend="rtl", config="tiny", instruction_budget=1000)
    # (a retire trace is not refused: the RTL writes it from its retire ports)
    RtlBackend.set_trace(object.__new__(RtlBackend), None)  # no trace: nothing to do
