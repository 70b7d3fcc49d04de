"""The host API end to end on the ISS backend: memory, modules, launches, misuse."""

from __future__ import annotations

import numpy as np
import pytest
from driver_kernels import COUNT, TABLE, TWO
from simtgpu.arch.command_queue import Mmio
from simtgpu.assembler import assemble
from simtgpu.assembler.examples import example_asm
from simtgpu.driver_model import CONFIGS, Backend, Device, DriverError
from simtgpu.isa import FaultCause
from simtgpu.sim import KernelFault


@pytest.fixture
def dev() -> Device:
    return Device(backend="iss", config="tiny")


def _state(dev: Device) -> tuple:
    """Everything a refused call must leave as it was."""
    return (dev.memory_stats(), dev.imem_stats(), dev._last_fence, dev._tail,
            dev.backend.mmio_read(Mmio.HEAD), dev.backend.mmio_read(Mmio.COMMANDS))


@pytest.mark.parametrize("config,n", [("tiny", 37), ("small", 1000)])
def test_vector_add_matches_numpy(config, n):
    dev = Device(config=config)
    k = dev.load_module(example_asm("vector_add")).kernel("vector_add")
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    a, b, c = dev.to_device(x), dev.to_device(y), dev.zeros(n, np.float32)
    block = CONFIGS[config].max_threads_per_block
    grid = -(-n // block)
    res = dev.launch(k, grid=grid, block=block, args=(a, b, c, n))
    np.testing.assert_array_equal(c.to_host(), x + y)  # one fadd per element: bit exact
    # Every warp issues the predicated fadd once (lanes past n with a false guard).
    assert res.per_opcode["fadd"] == grid * block // CONFIGS[config].lanes
    assert res.thread_instructions > res.instructions > 0
    assert res.counters["commands"] == 1


def test_device_arrays_round_trip_dtypes_and_shapes(dev):
    for arr in (np.arange(12, dtype=np.int32).reshape(3, 4), np.float32([1.5, -2]),
                np.array([1, 2, 3], dtype=">u4"), np.uint8([1, 2, 3])):
        d = dev.to_device(arr)
        back = d.to_host()
        assert back.shape == arr.shape
        np.testing.assert_array_equal(back, arr)
        assert d.nbytes == arr.nbytes and d.ptr % 256 == 0
    z = dev.zeros((2, 3), np.int32)
    np.testing.assert_array_equal(z.to_host(), np.zeros((2, 3), np.int32))
    z.copy_from_host(np.ones(6))
    np.testing.assert_array_equal(z.to_host(), np.ones((2, 3), np.int32))
    with pytest.raises(DriverError, match="6 elements into a buffer of 5"):
        dev.empty(5, np.int32).copy_from_host(np.ones(6))


def test_data_section_is_relocated_and_second_kernel_entry(dev):
    mod = dev.load_module(TABLE)
    assert mod.data_base is not None and mod.data_base % 16 == 0
    out = dev.zeros(8, np.float32)
    dev.launch(mod.kernel("scale_table"), 1, 8, (out, 0.5))
    np.testing.assert_array_equal(out.to_host(), np.arange(1, 9, dtype=np.float32) * 0.5)

    two = dev.load_module(TWO)
    assert two.code_base > mod.code_base  # placed after the first module
    assert two.kernel("second").entry_pc > two.kernel("first").entry_pc
    p = dev.zeros(2, np.int32)
    dev.launch(two.kernel("second"), 1, 1, (p,))
    dev.launch(two.kernel("first"), 1, 1, (p,))
    assert p.to_host().tolist() == [11, 22]


def test_load_module_forms(dev, tmp_path):
    obj = assemble(COUNT)
    sgo = tmp_path / "count.sgo"
    sgo.write_bytes(obj.to_bytes())
    src = tmp_path / "count.s"
    src.write_text(COUNT)
    ctr = dev.zeros(1, np.int32)
    for form in (obj, obj.to_bytes(), str(sgo), src, COUNT):
        dev.launch(dev.load_module(form).kernel("count"), 2, 4, (ctr, 1))
    assert ctr.to_host()[0] == 5 * 8
    with pytest.raises(DriverError, match="expected a .s or .sgo"):
        dev.load_module(str(tmp_path))  # a directory
    (tmp_path / "x.txt").write_text("")
    with pytest.raises(DriverError, match="expected a .s or .sgo"):
        dev.load_module(tmp_path / "x.txt")
    with pytest.raises(DriverError, match="no such file"):
        dev.load_module(tmp_path / "missing.s")


def test_unload_frees_code_and_data(dev):
    before = (dev.memory_stats(), dev.imem_stats())
    mod = dev.load_module(TABLE)
    k = mod.kernel("scale_table")
    assert dev.imem_stats().allocations == 1
    mod.unload()
    assert (dev.memory_stats(), dev.imem_stats()) == before
    with pytest.raises(DriverError, match="unloaded"):
        dev.launch(k, 1, 1, (dev.zeros(1), 1.0))


def test_kernel_not_in_module_lists_kernels(dev):
    mod = dev.load_module(TWO)
    with pytest.raises(DriverError, match=r"no kernel 'third' \(kernels: first, second\)"):
        mod.kernel("third")


def test_param_packing_types_and_ranges(dev):
    k = dev.load_module(COUNT).kernel("count")
    ctr = dev.zeros(1, np.int32)
    dev.launch(k, 1, 1, (ctr.ptr, np.int32(-3)))  # an int address is accepted for ptr
    assert ctr.to_host()[0] == -3
    s0 = _state(dev)
    bad = [
        ((ctr,), "takes 2 argument"),
        ((ctr, 1, 2), "takes 2 argument"),
        ((ctr, 2.5), "'inc' of count\\(counter: ptr, inc: i32\\): expects an integer"),
        ((ctr, 1 << 31), "out of range for i32"),
        ((ctr, True), "expects an integer"),
        ((1.0, 1), "'counter'.*expects a device pointer"),
        ((-1, 1), "pointer does not fit"),
        (("x", 1), "expects a device pointer"),
    ]
    for args, msg in bad:
        with pytest.raises(DriverError, match=msg):
            dev.launch(k, 1, 1, args)
        assert _state(dev) == s0
    other = Device(config="tiny")
    with pytest.raises(DriverError, match="another device"):
        dev.launch(k, 1, 1, (other.zeros(1), 1))
    f = dev.load_module(TABLE).kernel("scale_table")
    s0 = _state(dev)
    with pytest.raises(DriverError, match="out of range for f32"):
        dev.launch(f, 1, 1, (ctr, 1e39))
    with pytest.raises(DriverError, match="expects a real number"):
        dev.launch(f, 1, 1, (ctr, "1"))
    assert _state(dev) == s0


def test_geometry_misuse_changes_nothing(dev):
    k = dev.load_module(COUNT).kernel("count")
    ctr = dev.zeros(1, np.int32)
    s0 = _state(dev)
    cases = [
        (dict(grid=0, block=1), "at least 1"),
        (dict(grid=(1, 0), block=1), "at least 1"),
        (dict(grid=(65536, 1, 1), block=1), "exceeds 65535"),
        (dict(grid=1, block=9), "at most 8"),  # tiny: 2 warps x 4 lanes
        (dict(grid=1, block=(2, 2, 3)), "12 threads"),
        (dict(grid=(1, 1, 1, 1), block=1), "1 to 3 dimensions"),
        (dict(grid=1.5, block=1), "integers"),
        (dict(grid=1, block=1, shared_bytes=4 * 1024 + 4), "exceed the 4096 bytes"),
        (dict(grid=1, block=1, shared_bytes=6), "multiple of 4"),
    ]
    for kw, msg in cases:
        with pytest.raises(DriverError, match=msg):
            dev.launch(k, args=(ctr, 1), **kw)
        assert _state(dev) == s0
    dev.launch(k, grid=(2, 3, 4), block=(2, 2, 2), args=(ctr, 1))
    assert ctr.to_host()[0] == 24 * 8


def test_memory_misuse_changes_nothing(dev):
    a = dev.empty(100, np.float32)
    s0 = _state(dev)
    free = dev.memory_stats().free_bytes
    with pytest.raises(DriverError, match=f"out of device memory: requested {free + 1} bytes"):
        dev.empty(free + 1, np.uint8)
    assert _state(dev) == s0
    with pytest.raises(DriverError, match="not allocated"):
        dev.free(0x80000)
    with pytest.raises(DriverError, match="points inside"):
        dev.free(a.ptr + 4)
    with pytest.raises(DriverError, match="driver owns"):
        dev.free(dev.queue_base)
    assert _state(dev) == s0
    a.free()
    s1 = _state(dev)
    with pytest.raises(DriverError, match="double free"):
        a.free()
    with pytest.raises(DriverError, match="double free"):
        dev.free(a)
    with pytest.raises(DriverError, match="use after free"):
        a.to_host()
    with pytest.raises(DriverError, match="use after free"):
        a.ptr  # noqa: B018
    k = dev.load_module(COUNT).kernel("count")
    s1 = _state(dev)
    with pytest.raises(DriverError, match="use after free"):
        dev.launch(k, 1, 1, (a, 1))
    assert _state(dev) == s1
    b = dev.empty(4)
    dev.free(b.ptr)  # freeing by address marks the buffer freed too
    with pytest.raises(DriverError, match="use after free"):
        b.to_host()
    with pytest.raises(DriverError, match="negative"):
        dev.empty(-1)
    with pytest.raises(DriverError, match="Python objects"):
        dev.to_device(np.array([object()]))


def test_memory_stats_track_allocations(dev):
    s0 = dev.memory_stats()
    assert s0.allocations == 2  # the command ring and the fence word
    bufs = [dev.empty(1000, np.float32) for _ in range(3)]
    s1 = dev.memory_stats()
    assert s1.allocations == 5
    assert s1.allocated_bytes - s0.allocated_bytes == 3 * 4096  # 4000 rounded to 256
    for b in bufs:
        b.free()
    assert dev.memory_stats() == s0
    assert s0.largest_free_block == s0.free_bytes  # everything coalesced


def test_fault_raises_record_and_device_recovers(dev):
    k = dev.load_module(example_asm("vector_add")).kernel("vector_add")
    a = dev.zeros(8)
    with pytest.raises(KernelFault) as e:
        dev.launch(k, 1, 8, (a, a, 0x800, 8))  # c in the null guard
    r = e.value.record
    assert r.cause == FaultCause.OUT_OF_RANGE
    assert r.instruction == "@p0 stg [r8], r9"
    assert r.lane_mask == 0xF and r.warp == 0 and r.block == (0, 0, 0)
    assert "vector_add(" in r.detail and "0x00000800" in r.detail
    assert dev.backend.mmio_read(Mmio.STATUS) == 0  # cleared by the driver
    b = dev.to_device(np.ones(8, np.float32))
    dev.launch(k, 1, 8, (b, b, a, 8))  # the device works again
    np.testing.assert_array_equal(a.to_host(), np.full(8, 2, np.float32))


def test_fault_discards_queued_work(dev):
    count = dev.load_module(COUNT).kernel("count")
    ctr = dev.zeros(1, np.int32)
    dev.launch_async(count, 1, 1, (ctr, 1))
    dev.launch_async(count, 1, 1, (0x10, 1))  # faults
    dev.launch_async(count, 1, 1, (ctr, 100))  # discarded
    with pytest.raises(KernelFault, match="1 command\\(s\\) queued after it were discarded"):
        dev.synchronize()
    assert ctr.to_host()[0] == 1
    s = dev.memory_stats()
    assert s.allocations == 3  # ring, fence, ctr: the parameter blocks were released


def test_watchdog(dev):
    spin = Device(config="tiny", instruction_budget=1000)
    k = spin.load_module("\n.kernel spin\nL: jmp L\n.end\n").kernel("spin")
    with pytest.raises(KernelFault) as e:
        spin.launch(k, 1, 4)
    assert e.value.record.cause == FaultCause.WATCHDOG


def test_queue_wraps_and_fences_advance():
    dev = Device(config="tiny", queue_entries=4)
    k = dev.load_module(COUNT).kernel("count")
    ctr = dev.zeros(1, np.int32)
    fences = [dev.launch_async(k, 1, 2, (ctr, i)) for i in range(1, 12)]
    assert fences == list(range(1, 12))  # more than the ring holds: the driver waited
    dev.synchronize()
    assert ctr.to_host()[0] == 2 * sum(range(1, 12))
    fence_word = int.from_bytes(dev.backend.read(dev.fence_addr, 4), "little")
    assert fence_word == 11
    assert dev.backend.mmio_read(Mmio.HEAD) == 11 % 4 == dev.backend.mmio_read(Mmio.DOORBELL)
    res = dev.launch(k, 1, 2, (ctr, 0))
    assert res.fence == 12 and dev.fence() == 13
    dev.synchronize()
    assert dev.backend.mmio_read(Mmio.COMMANDS) == 13


def test_launch_result_counters(dev):
    k = dev.load_module(COUNT).kernel("count")
    ctr = dev.zeros(1, np.int32)
    res = dev.launch(k, grid=3, block=6, args=(ctr, 1))  # 2 warps per block, 2nd half full
    # 4 instructions per warp, 2 warps x 3 blocks; lanes: 4 + 2 per block.
    assert res.instructions == 4 * 6
    assert res.thread_instructions == 4 * 6 * 3
    assert res.per_opcode == {"ldparam": 12, "atom.add": 6, "exit": 6}
    assert res.counters["instructions"] == res.instructions
    assert "thread-instructions  72" in res.report()


def test_unknown_and_unavailable_backends():
    with pytest.raises(DriverError, match="unknown backend 'gpu'"):
        Device(backend="gpu")
    with pytest.raises(DriverError, match="unknown configuration 'huge'"):
        Device(config="huge")
    with pytest.raises(DriverError, match="queue_entries"):
        Device(config="tiny", queue_entries=3)
    from simtgpu.driver_model.backend_iss import IssBackend

    with pytest.raises(DriverError, match="'small' does not match the backend's 'tiny'"):
        Device(IssBackend(CONFIGS["tiny"]), config="small")


class _MemoryOnlyBackend(Backend):
    """A device without the host interface (as a CUDA backend is): memory only."""

    name = "memonly"
    command_queue = False

    def __init__(self):
        self.config = CONFIGS["tiny"]
        self.mem = bytearray(self.config.memory_bytes)
        self.waits = 0

    def mmio_read(self, offset):
        raise AssertionError("no MMIO on this backend")

    mmio_write = mmio_read

    def read(self, addr, n):
        return bytes(self.mem[addr:addr + n])

    def write(self, addr, data):
        self.mem[addr:addr + len(data)] = data

    def run_until_idle(self):
        self.waits += 1


def test_backend_without_command_queue():
    b = _MemoryOnlyBackend()
    dev = Device(b)
    assert dev.memory_stats().allocations == 0  # no ring, no fence word
    x = dev.to_device(np.arange(5, dtype=np.int32))
    assert x.to_host().tolist() == [0, 1, 2, 3, 4]
    assert b.mem[x.ptr:x.ptr + 4] == bytes(4)
    assert b.waits >= 1
    with pytest.raises(DriverError, match="memonly backend has no command queue"):
        dev.load_module(COUNT)


def test_first_launch_record_as_docs_show_it():
    """docs/command-queue.md walks through this launch word by word."""
    dev = Device(config="full")
    k = dev.load_module(example_asm("vector_add")).kernel("vector_add")
    n = 1000
    a, b = dev.to_device(np.ones(n, np.float32)), dev.to_device(np.ones(n, np.float32))
    c = dev.empty(n, np.float32)
    dev.launch(k, 16, 64, (a, b, c, n))
    assert (dev.queue_base, dev.fence_addr, a.ptr, b.ptr, c.ptr) == (
        0x1000, 0x2000, 0x2100, 0x3100, 0x4100)
    words = np.frombuffer(dev.backend.read(dev.queue_base, 64), "<u4").tolist()
    assert words == [1, 1, 0, 16, 1, 1, 64, 1, 1, 0x5100, 16, 0, 11, 0, 0x4C, 0]
    assert np.frombuffer(dev.backend.read(0x5100, 16), "<u4").tolist() == [
        0x2100, 0x3100, 0x4100, 1000]
    assert dev.backend.read(0x2000, 4) == (1).to_bytes(4, "little")
    assert dev.backend.mmio_read(Mmio.HEAD) == 1


def test_device_refusing_a_record_is_a_driver_error(dev):
    k = dev.load_module(COUNT).kernel("count")
    ctr = dev.zeros(1, np.int32)
    dev.launch_async(k, 1, 1, (ctr, 1))
    raw = bytearray(dev.backend.read(dev.queue_base, 64))
    raw[0] = 7  # corrupt the opcode before the device reads the record
    dev.backend.write(dev.queue_base, bytes(raw))
    with pytest.raises(DriverError, match=r"refused the command for count\(.*unknown command "
                       r"opcode 7"):
        dev.synchronize()
    assert dev.backend.mmio_read(Mmio.STATUS) == 0
    dev.launch(k, 1, 1, (ctr, 1))
    assert ctr.to_host()[0] == 1
