"""Host interface and GPU top with stand-in cores (Amaranth simulator): the register map,
doorbell -> records fetched from memory -> blocks run -> fence written -> HEAD advances,
ring wrap-around, fault latching and clearing, malformed records, the cycle watchdog and
the performance counters."""

from __future__ import annotations

import struct
from dataclasses import replace

import pytest
from rtlgpu_helpers import RefMemory, run_sim
from simtgpu.arch.command_queue import (
    CORE_COUNTERS_STRIDE,
    DEVICE_ID,
    FIELD,
    MAX_COUNTER_CORES,
    MAX_COUNTERS,
    PERF_COUNTERS,
    VERSION,
    Command,
    CommandOp,
    Control,
    CoreCounter,
    Mmio,
    RecordError,
    Status,
    core_counter_offset,
    launch_problem,
    pack,
    unpack,
)
from simtgpu.isa.abi import FaultCause
from simtgpu.rtl.configs import get_rtl_config
from simtgpu.rtlsim.harness import SimHarness
from standin_core import FAULT_INSTR, FAULT_MAGIC, HANG_MAGIC, STUCK_MAGIC, StandinCore

QUEUE = 0x1000
FENCE = 0x1400
PARAMS = 0x1800
DST = 0x2000
ENTRY = 0x40
IMEM_K = 0x100
THREADS_4 = 4 << 16  # the stand-in core's written value holds the block's thread count


def _harness(name: str = "tiny", **params) -> SimHarness:
    cfg = get_rtl_config(name, sim_memory_bytes=16384, **params)
    return SimHarness(cfg, core_factory=StandinCore)


class Host:
    """The driver's side of the MMIO bus and backdoor memory, for one testbench."""

    def __init__(self, ctx, h: SimHarness):
        self.ctx, self.h = ctx, h
        self.lw = h.cfg.line_words

    async def write(self, addr: int, value: int) -> None:
        await self._access(addr, self.h.mmio.we, value)

    async def read(self, addr: int) -> int:
        return await self._access(addr, self.h.mmio.re)

    async def _access(self, addr: int, strobe, wdata: int | None = None) -> int:
        """Hold ``strobe`` (we or re) until the bus is ready; the read data of that cycle."""
        ctx, bus = self.ctx, self.h.mmio
        ctx.set(bus.addr, addr)
        if wdata is not None:
            ctx.set(bus.wdata, wdata)
        ctx.set(strobe, 1)
        while True:
            *_, ready, rdata = await ctx.tick().sample(bus.ready, bus.rdata)
            if ready:
                break
        ctx.set(strobe, 0)
        return rdata

    def poke(self, addr: int, words: list[int]) -> None:
        mem = self.h.memory.mem
        for k, w in enumerate(words):
            a = addr // 4 + k
            line, i = divmod(a, self.lw)
            old = self.ctx.get(mem.data[line])
            self.ctx.set(mem.data[line], old & ~(0xFFFFFFFF << 32 * i) | (w << 32 * i))

    def peek(self, addr: int, n: int = 1) -> list[int]:
        mem = self.h.memory.mem
        out = []
        for k in range(n):
            line, i = divmod(addr // 4 + k, self.lw)
            out.append(self.ctx.get(mem.data[line]) >> 32 * i & 0xFFFFFFFF)
        return out

    def put_record(self, index: int, cmd: Command) -> None:
        self.poke(QUEUE + 64 * index, list(struct.unpack("<16I", pack(cmd))))

    async def wait_done(self, limit: int = 5000) -> int:
        for n in range(limit):
            if self.ctx.get(self.h.done):
                return n
            await self.ctx.tick()
        raise AssertionError("harness never reported done")

    async def setup(self, entries: int = 4) -> None:
        await self.write(Mmio.QUEUE_BASE, QUEUE)
        await self.write(Mmio.QUEUE_ENTRIES, entries)
        await self.write(Mmio.FENCE_ADDR, FENCE)
        await self.write(Mmio.IMEM_ADDR, ENTRY)
        await self.write(Mmio.IMEM_DATA, IMEM_K)

    async def launch_one(self, value: int, grid: tuple[int, int, int], fence: int = 1) -> None:
        """Parameters (DST, ``value``) at PARAMS, one launch record, the doorbell rung."""
        self.poke(PARAMS, [DST, value])
        self.put_record(0, _launch(fence, grid))
        await self.write(Mmio.DOORBELL, 1)


def _launch(fence: int, grid=(3, 2, 1), block=(4, 1, 1), params=PARAMS) -> Command:
    return Command(CommandOp.LAUNCH, fence, ENTRY, grid, block, params, 8, 0, 8, ENTRY,
                   ENTRY + 4)


def _run(h: SimHarness, body) -> None:
    async def tb(ctx):
        await body(Host(ctx, h))
    run_sim(h, tb)


def test_register_map() -> None:
    h = _harness()
    cfg = h.cfg
    seen = {}

    async def body(host: Host):
        for reg in (Mmio.ID, Mmio.VERSION, Mmio.CAP_CORES, Mmio.CAP_WARPS, Mmio.CAP_LANES,
                    Mmio.CAP_SHARED_BYTES, Mmio.CAP_MEM_BYTES, Mmio.CAP_IMEM_BYTES,
                    Mmio.CAP_STACK_DEPTH, Mmio.STATUS, Mmio.HEAD, Mmio.CONTROL):
            seen[reg] = await host.read(reg)
        seen["unmapped"] = await host.read(0xFC)
        await host.write(Mmio.QUEUE_BASE, 0x1040)
        await host.write(Mmio.QUEUE_ENTRIES, 8)
        await host.write(Mmio.QUEUE_ENTRIES, 3 * 4096)  # out of range: ignored
        await host.write(Mmio.FENCE_ADDR, 0x1404)
        await host.write(Mmio.DOORBELL, 9)  # past the ring: ignored
        seen["rw"] = [await host.read(r) for r in (Mmio.QUEUE_BASE, Mmio.QUEUE_ENTRIES,
                                                   Mmio.FENCE_ADDR, Mmio.DOORBELL)]
        # IMEM_DATA: each access moves IMEM_ADDR on by 4; read back what was written.
        await host.write(Mmio.IMEM_ADDR, 0x20)
        for w in (0xA1, 0xB2, 0xC3):
            await host.write(Mmio.IMEM_DATA, w)
        seen["imem_addr"] = await host.read(Mmio.IMEM_ADDR)
        await host.write(Mmio.IMEM_ADDR, 0x20)
        seen["imem"] = [await host.read(Mmio.IMEM_DATA) for _ in range(3)]
        seen["imem_addr2"] = await host.read(Mmio.IMEM_ADDR)

    _run(h, body)
    assert seen[Mmio.ID] == DEVICE_ID
    assert seen[Mmio.VERSION] == VERSION
    assert seen[Mmio.CAP_CORES] == cfg.cores
    assert seen[Mmio.CAP_WARPS] == cfg.warps
    assert seen[Mmio.CAP_LANES] == cfg.lanes
    assert seen[Mmio.CAP_SHARED_BYTES] == cfg.shared_bytes
    assert seen[Mmio.CAP_MEM_BYTES] == cfg.memory_bytes
    assert seen[Mmio.CAP_IMEM_BYTES] == cfg.gpu.imem_bytes
    assert seen[Mmio.CAP_STACK_DEPTH] == cfg.stack_depth
    assert seen[Mmio.STATUS] == 0 and seen[Mmio.HEAD] == 0 and seen[Mmio.CONTROL] == 0
    assert seen["unmapped"] == 0
    assert seen["rw"] == [0x1040, 8, 0x1404, 0]
    assert seen["imem_addr"] == 0x2C
    assert seen["imem"] == [0xA1, 0xB2, 0xC3]
    assert seen["imem_addr2"] == 0x2C


@pytest.mark.parametrize("name", ["tiny", "small"])
def test_launch_through_queue_writes_results_and_fence(name: str) -> None:
    h = _harness(name)
    grid = (3, 2, 1)
    nblocks = 6
    out = {}

    async def body(host: Host):
        await host.write(Mmio.CONTROL, Control.RESET_COUNTERS)
        await host.setup()
        await host.launch_one(1000, grid, fence=0xF00D)
        out["busy"] = await host.read(Mmio.STATUS)
        out["cycles"] = await host.wait_done()
        out["status"] = await host.read(Mmio.STATUS)
        out["head"] = await host.read(Mmio.HEAD)
        out["fence"] = host.peek(FENCE)[0]
        out["dst"] = host.peek(DST, nblocks + 1)
        out["counters"] = {r: await host.read(r) for r in PERF_COUNTERS}
        out["per_core"] = [{c: await host.read(core_counter_offset(i, c)) for c in CoreCounter}
                           for i in range(h.cfg.cores)]
        # the map's holes read 0: past a window's last counter, a core the build lacks
        out["holes"] = [await host.read(core_counter_offset(0, max(CoreCounter)) + 4),
                        await host.read(core_counter_offset(h.cfg.cores, CoreCounter(0))),
                        await host.read(core_counter_offset(MAX_COUNTER_CORES - 1,
                                                            max(CoreCounter)))]

    _run(h, body)
    assert out["busy"] == Status.BUSY
    assert out["status"] == 0
    assert out["head"] == 1
    assert out["fence"] == 0xF00D
    assert out["dst"] == [1000 + i + IMEM_K + THREADS_4 for i in range(nblocks)] + [0]
    c = out["counters"]
    assert c[Mmio.INSTRUCTIONS] == nblocks
    assert c[Mmio.THREAD_INSTRUCTIONS] == nblocks * h.cfg.lanes
    assert c[Mmio.MEM_TRANSACTIONS] == 2 * nblocks
    assert c[Mmio.COMMANDS] == 1
    assert c[Mmio.STALL_IDLE] == 0
    assert 10 < c[Mmio.CYCLES_LO] <= out["cycles"] + 10 and c[Mmio.CYCLES_HI] == 0
    # per-core windows: each core's counters are its blocks' (one instruction on every lane,
    # two memory transactions per block) and they add up to the GPU-wide registers
    per_core = out["per_core"]
    for counter in CoreCounter:
        total = max if counter.total in MAX_COUNTERS else sum
        assert total(pc[counter] for pc in per_core) == c[counter.total], counter
    for pc in per_core:
        n = pc[CoreCounter.INSTRUCTIONS]
        assert pc[CoreCounter.THREAD_INSTRUCTIONS] == n * h.cfg.lanes
        assert pc[CoreCounter.MEM_TRANSACTIONS] == 2 * n
    assert all(pc[CoreCounter.INSTRUCTIONS] > 0 for pc in per_core)  # every core ran a block
    assert out["holes"] == [0, 0, 0]
    assert CORE_COUNTERS_STRIDE > max(CoreCounter) + 4  # the first hole is in the window


def test_ring_wraps_and_nop_fence_commands() -> None:
    h = _harness("small")
    out = {}

    async def body(host: Host):
        await host.setup(entries=4)
        # NOP, LAUNCH, FENCE from ring slot 0, then three more that wrap past the end of the
        # 4-entry ring (slots 3, 0, 1)
        for key, slot, fence, grid, dst, value in (("first", 0, 1, (2, 1, 1), DST, 7),
                                                   ("second", 3, 4, (1, 1, 3), DST + 0x100, 50)):
            host.poke(PARAMS, [dst, value])
            host.put_record(slot, Command(CommandOp.NOP, fence))
            host.put_record((slot + 1) % 4, _launch(fence + 1, grid))
            host.put_record((slot + 2) % 4, Command(CommandOp.FENCE, fence + 2))
            await host.write(Mmio.DOORBELL, (slot + 3) % 4)
            await host.wait_done()
            out[key] = (await host.read(Mmio.HEAD), host.peek(FENCE)[0])
        out["dst"] = host.peek(DST, 2) + host.peek(DST + 0x100, 3)
        out["commands"] = await host.read(Mmio.COMMANDS)
        out["status"] = await host.read(Mmio.STATUS)

    _run(h, body)
    assert out["first"] == (3, 3)
    assert out["second"] == (2, 6)
    assert out["dst"] == [v + IMEM_K + THREADS_4 for v in (7, 8, 50, 51, 52)]
    assert out["commands"] == 6
    assert out["status"] == 0


def test_queue_pointer_writes_and_status_right_after_the_doorbell() -> None:
    """The ring's writes at their bounds: a doorbell at QUEUE_ENTRIES is ignored and one
    below it runs; STATUS read as the next access after the doorbell shows BUSY (the writes
    take effect a cycle after the bus's); QUEUE_ENTRIES (in range) and QUEUE_BASE set HEAD
    and TAIL to 0, and QUEUE_ENTRIES outside 2..4096 changes nothing."""
    h = _harness()
    out = {}

    async def body(host: Host):
        await host.setup(entries=4)
        for slot, fence in ((0, 1), (1, 2), (2, 3)):
            host.put_record(slot, Command(CommandOp.NOP, fence))
        await host.write(Mmio.DOORBELL, 4)  # == QUEUE_ENTRIES: ignored
        out["ignored"] = (await host.read(Mmio.DOORBELL), await host.read(Mmio.STATUS))
        await host.write(Mmio.DOORBELL, 3)
        out["busy_next"] = await host.read(Mmio.STATUS)
        await host.wait_done()
        out["ran"] = (await host.read(Mmio.HEAD), await host.read(Mmio.DOORBELL),
                      host.peek(FENCE)[0], await host.read(Mmio.STATUS))
        await host.write(Mmio.QUEUE_ENTRIES, 1)  # out of range: ignored, pointers kept
        out["bad_entries"] = [await host.read(r) for r in (Mmio.QUEUE_ENTRIES, Mmio.HEAD,
                                                           Mmio.DOORBELL)]
        await host.write(Mmio.QUEUE_ENTRIES, 2)  # the smallest ring: pointers to 0
        out["entries"] = [await host.read(r) for r in (Mmio.QUEUE_ENTRIES, Mmio.HEAD,
                                                       Mmio.DOORBELL)]
        await host.write(Mmio.DOORBELL, 1)
        await host.wait_done()
        out["small_ring"] = (await host.read(Mmio.HEAD), host.peek(FENCE)[0])
        await host.write(Mmio.QUEUE_BASE, QUEUE + 0x40)  # pointers to 0, base moved
        out["base"] = [await host.read(r) for r in (Mmio.QUEUE_BASE, Mmio.HEAD,
                                                    Mmio.DOORBELL, Mmio.STATUS)]

    _run(h, body)
    assert out["ignored"] == (0, 0)
    assert out["busy_next"] == int(Status.BUSY)
    assert out["ran"] == (3, 3, 3, 0)
    assert out["bad_entries"] == [4, 3, 3]
    assert out["entries"] == [2, 0, 0]
    assert out["small_ring"] == (1, 1)  # slot 0 again: the NOP with fence 1
    assert out["base"] == [QUEUE + 0x40, 0, 0, 0]


def test_core_fault_is_latched_and_cleared() -> None:
    h = _harness("small")
    out = {}

    async def body(host: Host):
        await host.setup()
        host.poke(PARAMS, [DST, FAULT_MAGIC])
        host.poke(FENCE, [0x5555])
        host.put_record(0, _launch(0xAAAA, (1, 2, 1)))
        host.put_record(1, _launch(0xBBBB, (1, 1, 1)))
        await host.write(Mmio.DOORBELL, 2)
        await host.wait_done()
        out["status"] = await host.read(Mmio.STATUS)
        out["fault"] = {r: await host.read(r) for r in (
            Mmio.FAULT_CAUSE, Mmio.FAULT_PC, Mmio.FAULT_CORE, Mmio.FAULT_WARP,
            Mmio.FAULT_LANES, Mmio.FAULT_BLOCK_X, Mmio.FAULT_BLOCK_Y, Mmio.FAULT_BLOCK_Z,
            Mmio.FAULT_INSTR)}
        out["head"] = await host.read(Mmio.HEAD)
        out["fence"] = host.peek(FENCE)[0]
        await host.write(Mmio.CONTROL, Control.CLEAR_FAULT)
        out["after_clear"] = (await host.read(Mmio.STATUS), await host.read(Mmio.HEAD),
                              await host.read(Mmio.FAULT_CAUSE))
        # The cores were flushed: a good launch runs afterwards.
        host.poke(PARAMS, [DST, 9])
        host.put_record(2, _launch(0xCCCC, (2, 1, 1)))
        await host.write(Mmio.DOORBELL, 3)
        await host.wait_done()
        out["next"] = (await host.read(Mmio.STATUS), host.peek(FENCE)[0], host.peek(DST, 2))

    _run(h, body)
    assert out["status"] == Status.FAULT
    f = out["fault"]
    assert f[Mmio.FAULT_CAUSE] == FaultCause.OUT_OF_RANGE
    assert f[Mmio.FAULT_PC] == ENTRY
    assert f[Mmio.FAULT_CORE] in (0, 1)
    assert f[Mmio.FAULT_WARP] == 1
    assert f[Mmio.FAULT_LANES] == 0b101
    assert f[Mmio.FAULT_BLOCK_X] == 0 and f[Mmio.FAULT_BLOCK_Z] == 0
    assert f[Mmio.FAULT_BLOCK_Y] in (0, 1)
    assert f[Mmio.FAULT_INSTR] == FAULT_INSTR
    assert out["head"] == 0
    assert out["fence"] == 0x5555
    assert out["after_clear"] == (0, 2, 0)
    assert out["next"] == (0, 0xCCCC, [9 + IMEM_K + THREADS_4, 10 + IMEM_K + THREADS_4])


def _words(cmd: Command, **raw: int) -> list[int]:
    """The record of ``cmd`` with words overridden by index (``w0=7``): records that no
    Command can hold."""
    words = list(struct.unpack("<16I", pack(cmd)))
    for name, value in raw.items():
        words[int(name[1:])] = value
    return words


_OK = _launch(1, (1, 1, 1))
# Each of launch_problem's rules (and unpack's) broken once, plus records that meet every
# limit exactly. tiny: 2 warps x 4 lanes = 8 threads, 4 KiB shared memory; the code limit
# is ENTRY + 4 (Host.setup writes one instruction word at ENTRY).
_DIRECTED = [
    ("valid", _words(_OK), False),
    ("limits_met", _words(replace(_OK, block=(2, 4, 1), param_size=0xFFFC,
                                  shared_bytes=4096)), False),
    ("nop_ignores_launch_words", _words(Command(CommandOp.NOP, 1, ENTRY + 2, (0, 1 << 16, 1),
                                                (99, 0, 1), 2, 7, 1 << 20)), False),
    ("opcode", _words(_OK, w0=3), True),
    ("reserved", _words(Command(CommandOp.NOP, 1), w15=1 << 31), True),
    ("grid_zero", _words(replace(_OK, grid=(1, 0, 1))), True),
    ("grid_width", _words(replace(_OK, grid=(1 << 16, 1, 1))), True),
    ("block_zero", _words(replace(_OK, block=(4, 1, 0))), True),
    ("block_width", _words(replace(_OK, block=(1, 1 << 16, 1))), True),
    ("threads", _words(replace(_OK, block=(3, 3, 1))), True),
    # the rule is x*y > M // z: z both dividing and not dividing M, met and broken
    ("threads_z", _words(replace(_OK, block=(1, 3, 3))), True),
    ("threads_xz", _words(replace(_OK, block=(5, 1, 2))), True),
    ("threads_z_met", _words(replace(_OK, block=(1, 1, 8))), False),
    ("threads_cube_met", _words(replace(_OK, block=(2, 2, 2))), False),
    ("threads_z_floor_met", _words(replace(_OK, block=(2, 1, 3))), False),
    ("entry_align", _words(replace(_OK, entry_pc=ENTRY + 2)), True),
    ("entry_past_code", _words(replace(_OK, entry_pc=ENTRY + 4)), True),
    ("entry_below_code", _words(replace(_OK, entry_pc=ENTRY - 4)), True),
    ("code_end_past_loaded", _words(replace(_OK, code_end=ENTRY + 8)), True),
    ("code_end_zero", _words(replace(_OK, code_base=0, entry_pc=0, code_end=0)), True),
    ("code_base_align", _words(replace(_OK, code_base=ENTRY - 2)), True),
    ("code_from_zero", _words(replace(_OK, code_base=0)), False),
    ("param_addr_align", _words(replace(_OK, param_addr=PARAMS + 2)), True),
    ("param_size_align", _words(replace(_OK, param_size=6)), True),
    ("param_size_width", _words(replace(_OK, param_size=0x10000)), True),
    ("shared", _words(replace(_OK, shared_bytes=4100)), True),
]


def _refused_by_contract(words: list[int], cfg, code_limit: int) -> bool:
    try:
        cmd = unpack(struct.pack("<16I", *words))
    except RecordError:
        return True
    return launch_problem(cmd, cfg, code_limit) is not None


@pytest.mark.parametrize("line_words", [0, 16])
def test_rtl_refuses_exactly_what_launch_problem_refuses(line_words: int) -> None:
    """Directed records through the host interface, one simulation: each is refused
    (BAD_COMMAND, FAULT_PC = its address, fence not written) exactly when ``unpack`` or
    ``launch_problem`` refuses it, and the expectation written by hand agrees with both.
    With 16-word lines a record arrives in one read and DECODE follows at once, so a rule
    read a cycle early sees the previous record's words (with ``tiny``'s four reads, the
    block's words are written three reads before)."""
    h = _harness("tiny", line_words=line_words)
    out = {}

    async def body(host: Host):
        await host.setup()
        for fence, (name, words, _) in enumerate(_DIRECTED, start=0x100):
            await host.write(Mmio.QUEUE_BASE, QUEUE)  # HEAD = TAIL = 0
            host.poke(PARAMS, [DST, 5])
            host.poke(FENCE, [0])
            host.poke(QUEUE, [words[0], fence, *words[2:]])
            await host.write(Mmio.DOORBELL, 1)
            await host.wait_done()
            status = await host.read(Mmio.STATUS)
            out[name] = (status, await host.read(Mmio.FAULT_PC), host.peek(FENCE)[0] == fence)
            out[name + "/dst"] = host.peek(DST)[0]
            host.poke(DST, [0])
            if status & Status.FAULT:
                await host.write(Mmio.CONTROL, Control.CLEAR_FAULT)

    _run(h, body)
    for name, words, refused in _DIRECTED:
        assert _refused_by_contract(words, h.cfg.gpu, ENTRY + 4) == refused, name
        want = (Status.FAULT | Status.BAD_COMMAND, QUEUE, False) if refused else (0, 0, True)
        assert out[name] == want, name
        # the launches that ran wrote, through the stand-in core, the thread count the
        # host gave the dispatcher: the product of the block's dimensions
        if words[0] == CommandOp.LAUNCH and not refused:
            b = FIELD["block"].word
            x, y, z = words[b:b + 3]
            assert out[name + "/dst"] == 5 + IMEM_K + (x * y * z << 16), name


def test_watchdog_stops_a_hung_kernel() -> None:
    h = _harness("tiny", watchdog_cycles=300)
    out = {}

    async def body(host: Host):
        await host.setup()
        await host.launch_one(HANG_MAGIC, (1, 1, 1))
        out["cycles"] = await host.wait_done(limit=2000)
        out["status"] = await host.read(Mmio.STATUS)
        out["cause"] = await host.read(Mmio.FAULT_CAUSE)

    _run(h, body)
    assert out["status"] == Status.FAULT
    assert out["cause"] == FaultCause.WATCHDOG
    assert 300 <= out["cycles"] < 400


def test_clear_during_drain_and_a_core_that_never_drains() -> None:
    """CLEAR_FAULT written while the faulting core is still being waited on takes effect at
    once (STATUS shows BUSY until the flush); a record queued right after it still runs; a
    core that never drains is flushed after ``drain_timeout_cycles``."""
    h = _harness("tiny", drain_timeout_cycles=200)
    out = {}

    async def body(host: Host):
        await host.setup()
        await host.launch_one(STUCK_MAGIC, (1, 1, 1))
        await host.wait_done()
        out["fault"] = (await host.read(Mmio.STATUS), await host.read(Mmio.FAULT_CAUSE))
        await host.write(Mmio.CONTROL, Control.CLEAR_FAULT)
        out["cleared"] = (await host.read(Mmio.STATUS), await host.read(Mmio.HEAD))
        host.poke(PARAMS + 64, [DST, 3])
        host.put_record(1, _launch(0x1D, (1, 1, 1), params=PARAMS + 64))
        await host.write(Mmio.DOORBELL, 2)
        out["cycles"] = await host.wait_done()
        out["end"] = (await host.read(Mmio.STATUS), host.peek(FENCE)[0], host.peek(DST)[0])

    _run(h, body)
    assert out["fault"] == (Status.FAULT, FaultCause.OUT_OF_RANGE)
    assert out["cleared"] == (Status.BUSY, 1)
    assert out["cycles"] >= 150  # waited for the drain timeout first
    assert out["end"] == (0, 0x1D, 3 + IMEM_K + THREADS_4)


def test_code_limit_is_the_high_water_mark_of_imem_writes() -> None:
    """``code_limit`` is one past the highest instruction-memory byte ever written, through
    IMEM_ADDR/IMEM_DATA or the backdoor; lower writes and IMEM_DATA reads leave it alone."""
    from simtgpu.rtl.host_interface import HostInterface

    cfg = get_rtl_config("tiny", sim_memory_bytes=16384)
    dut = HostInterface(cfg)
    seen = []

    async def tb(ctx):
        h = Host(ctx, dut)  # only the MMIO bus of ``dut`` is used
        seen.append(ctx.get(dut.code_limit))
        await h.write(Mmio.IMEM_ADDR, 0x20)
        for w in (1, 2, 3):
            await h.write(Mmio.IMEM_DATA, w)
        seen.append(ctx.get(dut.code_limit))  # 0x20 + 3 words
        await h.write(Mmio.IMEM_ADDR, 0x4)
        await h.write(Mmio.IMEM_DATA, 7)
        seen.append(ctx.get(dut.code_limit))  # a lower write: unchanged
        await h.write(Mmio.IMEM_ADDR, 0x100)
        await h.read(Mmio.IMEM_DATA)
        seen.append(ctx.get(dut.code_limit))  # a read: unchanged
        ctx.set(dut.imem_bd.we, 1)
        ctx.set(dut.imem_bd.addr, 0x50)
        ctx.set(dut.imem_bd.data, 9)
        await ctx.tick()
        ctx.set(dut.imem_bd.we, 0)
        await ctx.tick()
        seen.append(ctx.get(dut.code_limit))  # backdoor word 0x50 -> byte 0x144

    run_sim(dut, tb)
    assert seen == [0, 0x2C, 0x2C, 0x2C, 0x144]


def _host_alone(trace_body, **params) -> None:
    """The host interface alone, its memory answered by the testbench (read requests, a
    cycle later, from one launch record in the queue) and its bus by ``Host``; the queue set
    up and the doorbell rung, ``trace_body(ctx, dut)`` runs from the cycle of
    ``disp_start``."""
    from simtgpu.rtl.host_interface import HostInterface

    cfg = get_rtl_config("tiny", sim_memory_bytes=16384, **params)
    dut = HostInterface(cfg)
    mem = RefMemory(cfg.sim_memory_bytes, cfg.line_words)
    mem.words[QUEUE // 4:QUEUE // 4 + 16] = struct.unpack("<16I", pack(_launch(1, (1, 1, 1))))

    async def memory(ctx):
        req, resp = dut.mem.req, dut.mem.resp
        ctx.set(req.ready, 1)
        while True:
            *_, valid, addr, tag = await ctx.tick().sample(req.valid, req.payload.addr,
                                                          req.payload.tag)
            ctx.set(resp.valid, valid)
            if valid:  # only the record's reads: nothing else is asked for before a flush
                ctx.set(resp.payload.rdata, mem.line(addr))
                ctx.set(resp.payload.tag, tag)

    async def tb(ctx):
        h = Host(ctx, dut)  # only the MMIO bus of ``dut`` is used
        await h.setup()
        await h.write(Mmio.DOORBELL, 1)
        for _ in range(100):
            if ctx.get(dut.disp_start):
                break
            await ctx.tick()
        else:
            raise AssertionError("the launch never started")
        await trace_body(ctx, dut)

    run_sim(dut, tb, processes=[memory])


def test_halt_waits_for_the_cores_to_have_seen_it() -> None:
    """In HALT (after a core's fault) the host flushes only once the cores are drained *and*
    have seen the halt (``halted``): before that, a core that was drained could still have
    started an instruction. Drained without halted holds the host in HALT; halted too
    flushes it a cycle later."""
    trace = []

    async def body(ctx, dut):
        await ctx.tick()
        fault = dut.core_fault[0]
        ctx.set(fault.valid, 1)
        ctx.set(fault.record.cause, FaultCause.OUT_OF_RANGE)
        await ctx.tick()
        ctx.set(fault.valid, 0)
        ctx.set(dut.drained, 1)  # drained, but the halt not yet seen
        for _ in range(6):
            trace.append((ctx.get(dut.core_halt), ctx.get(dut.core_flush)))
            await ctx.tick()
        ctx.set(dut.halted, 1)
        for _ in range(3):
            await ctx.tick()
            trace.append((ctx.get(dut.core_halt), ctx.get(dut.core_flush)))

    _host_alone(body)
    # halting and not flushed while only drained; FLUSH the cycle after halted rises, then
    # FAULTED (neither halting nor flushing)
    assert trace == [(1, 0)] * 6 + [(1, 1), (0, 0), (0, 0)]


@pytest.mark.parametrize("limit", [1, 2, 37])
def test_watchdog_and_drain_timeout_to_the_cycle(limit: int) -> None:
    """A launch that never finishes is halted ``watchdog_cycles`` cycles into RUN (RUN's
    cycles counted from 0: the halt shows in the cycle after the one that reaches the
    limit), and cores that never drain are flushed ``drain_timeout_cycles`` cycles into
    HALT, each to the cycle (hand-counted from the state machine: START, then RUN)."""
    seen = {}

    async def body(ctx, dut):
        for n in range(1, 3 * limit + 10):  # disp_start is START's cycle; RUN's first is 1
            await ctx.tick()
            if ctx.get(dut.core_halt) and "halt" not in seen:
                seen["halt"] = n
            if ctx.get(dut.core_flush):
                seen["flush"] = n
                break
        seen["cause"] = await Host(ctx, dut).read(Mmio.FAULT_CAUSE)

    _host_alone(body, watchdog_cycles=limit, drain_timeout_cycles=limit + 1)
    # RUN's cycle k (k = 0 at n = 1) sees watchdog = k: it leaves at k = limit, so HALT's
    # first cycle is n = limit + 2; HALT's cycle j leaves at j = limit + 1 (the drain
    # timeout) and FLUSH follows
    assert seen == {"halt": limit + 2, "flush": 2 * limit + 4, "cause": FaultCause.WATCHDOG}
