"""Run kernels on one :class:`Core` plus the simulation memory, and the same on the ISS.

Used by the core tests: ``run_rtl`` drives the Amaranth simulator (Python loads instruction
memory and device memory through backdoors, hands the blocks over one at a time in linear
order and collects the retire port), ``run_iss`` runs the golden model on the same image.
"""

from __future__ import annotations

import io
import json
import struct
from dataclasses import dataclass, field

import numpy as np
from amaranth import Elaboratable, Module, Signal
from amaranth.sim import Simulator
from simtgpu.assembler import assemble
from simtgpu.isa import FaultCause
from simtgpu.rtl.configs import RtlConfig, get_rtl_config
from simtgpu.rtl.core import Core
from simtgpu.rtlsim.memory_model import MemoryModel
from simtgpu.sim import GlobalMemory, Iss, KernelFault

PARAM_ADDR = 0x1000
DATA_ADDR = 0x2000


def small_config(name: str = "tiny", **changes) -> RtlConfig:
    """A named configuration with a small device memory (fast to simulate)."""
    changes.setdefault("memory_bytes", 1 << 16)
    changes.setdefault("imem_bytes", 2048)
    changes.setdefault("shared_bytes_per_core", 1024)
    return get_rtl_config(name).with_(**changes)


class CoreBench(Elaboratable):
    """A core whose memory port is wired to the simulation memory model."""

    def __init__(self, cfg: RtlConfig):
        self.cfg = cfg
        self.core = Core(cfg)
        self.mem = MemoryModel(cfg)

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.core = c = self.core
        m.submodules.mem = mm = self.mem
        rq, mq = c.mem.req, mm.bus.req
        m.d.comb += [mq.valid.eq(rq.valid), rq.ready.eq(mq.ready)]
        for name in ("kind", "addr", "wdata", "be", "atom_op", "atom_b", "atom_c", "tag"):
            m.d.comb += getattr(mq.p, name).eq(getattr(rq.p, name))
        # the code range is all the code loaded: from 0 to the high-water mark of
        # instruction-memory writes (one program per bench)
        limit = Signal(32)
        end = (c.imem.addr + 1) << 2
        with m.If(c.imem.we & (end > limit)):
            m.d.sync += limit.eq(end)
        m.d.comb += [c.code_base.eq(0), c.code_end.eq(limit)]
        rs, ms = c.mem.resp, mm.bus.resp
        m.d.comb += [rs.valid.eq(ms.valid), ms.ready.eq(rs.ready), rs.p.rdata.eq(ms.p.rdata),
                     rs.p.tag.eq(ms.p.tag)]
        return m


@dataclass
class Launch:
    """A kernel launch: assembled code, its entry, the grid, the memory image."""

    code: bytes
    entry: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    params: list[int]
    memory: bytes  # image from DATA_ADDR
    shared_bytes: int = 0

    @property
    def param_bytes(self) -> bytes:
        return b"".join(struct.pack("<I", p & 0xFFFF_FFFF) for p in self.params)


def launch_from_asm(src: str, kernel: str, grid, block, params, memory: bytes) -> Launch:
    obj = assemble(src)
    k = obj.kernel(kernel)
    g = tuple(grid) + (1,) * (3 - len(grid))
    b = tuple(block) + (1,) * (3 - len(block))
    return Launch(obj.code, k.entry, g, b, list(params), memory, k.shared_bytes)


@dataclass
class RtlResult:
    memory: bytes
    cycles: int
    retired: list[dict] = field(default_factory=list)  # retire-trace lines (trace-format.md)
    fault: dict | None = None
    perf: dict = field(default_factory=dict)


def run_iss(cfg: RtlConfig, launch: Launch, trace: list | None = None
            ) -> tuple[bytes, object]:
    """The golden result: memory from DATA_ADDR after the launch, or the fault record.
    With ``trace`` (a list), the ISS retire-trace lines are appended to it as dicts."""
    gm = GlobalMemory(cfg.memory_bytes)
    gm.write(PARAM_ADDR, launch.param_bytes)
    gm.write(DATA_ADDR, launch.memory)
    stream = io.StringIO() if trace is not None else None
    try:
        Iss(gm, warp_size=cfg.lanes, stack_depth=cfg.stack_depth).launch(
            launch.code, launch.entry, launch.grid, launch.block, PARAM_ADDR,
            len(launch.param_bytes), launch.shared_bytes, trace=stream)
    except KernelFault as e:
        return b"", e.record
    finally:
        if stream is not None:
            trace += [json.loads(line) for line in stream.getvalue().splitlines()]
    return gm.read(DATA_ADDR, len(launch.memory)), None


def per_warp(lines: list[dict]) -> dict[tuple, list[tuple]]:
    """Retire lines grouped by (block, warp) in order, keeping the fields the RTL reports."""
    out: dict[tuple, list[tuple]] = {}
    for x in lines:
        key = (tuple(x["block"]), x["warp"])
        out.setdefault(key, []).append((x["pc"], x["mask"], x["exec"], x["rd"], x["values"],
                                        x["pd"], x["pvalues"]))
    return out


_SIMULATORS: dict[str, tuple[Simulator, CoreBench, list]] = {}
_KEEP = 4  # simulators kept per test process (each holds a whole core's state)


def _simulator(cfg: RtlConfig) -> tuple[Simulator, CoreBench, list]:
    """The simulator of a core of ``cfg`` with its memory, built once per test process and
    reset (:meth:`Simulator.reset`: every signal, memory and testbench back to its start)
    before each run: building it, the design's elaboration and the simulator's compiled code,
    takes about 10 s for ``tiny``'s core, more than most kernels take to run. Its one
    testbench runs whatever the holder (the list) names."""
    key = repr(cfg)
    if key not in _SIMULATORS:
        if len(_SIMULATORS) >= _KEEP:
            del _SIMULATORS[next(iter(_SIMULATORS))]
        bench = CoreBench(cfg)
        sim = Simulator(bench)
        sim.add_clock(1e-8)
        job: list = []

        async def run_job(ctx):
            await job[0](ctx)

        sim.add_testbench(run_job)
        _SIMULATORS[key] = (sim, bench, job)
    return _SIMULATORS[key]


def run_rtl(cfg: RtlConfig, launch: Launch, max_cycles: int = 20000,
            trace_retire: bool = False, vcd: str | None = None,
            after_fault: int = 0) -> RtlResult:
    """Run ``launch`` on one core. ``after_fault``: cycles to keep recording the retire port
    once the fault is raised (to check that nothing younger of the faulting warp retires)."""
    if vcd:  # a simulator of its own, so the waveform holds this run alone
        bench = CoreBench(cfg)
        sim = Simulator(bench)
        sim.add_clock(1e-8)
    else:
        sim, bench, job = _simulator(cfg)
    core, model = bench.core, bench.mem
    lw = cfg.line_words
    line_bytes = 4 * lw
    image = bytearray(cfg.memory_bytes)
    image[PARAM_ADDR:PARAM_ADDR + len(launch.param_bytes)] = launch.param_bytes
    image[DATA_ADDR:DATA_ADDR + len(launch.memory)] = launch.memory
    words = np.frombuffer(bytes(image), dtype="<u4")
    lines_used = (DATA_ADDR + len(launch.memory) + line_bytes - 1) // line_bytes
    result = RtlResult(memory=b"", cycles=0)
    perf_names = ("issued", "stall_scoreboard", "stall_memory", "stall_barrier",
                  "stall_structural", "stall_idle", "mem_transactions")
    result.perf = {n: 0 for n in perf_names}

    async def bench_proc(ctx):
        for line in range(PARAM_ADDR // line_bytes, lines_used):
            value = 0
            for j in range(lw):
                value |= int(words[line * lw + j]) << (32 * j)
            if value:
                ctx.set(model.mem.data[line], value)
        code = np.frombuffer(launch.code, dtype="<u4")
        for i, w in enumerate(code):
            ctx.set(core.imem.we, 1)
            ctx.set(core.imem.addr, i)
            ctx.set(core.imem.data, int(w))
            await ctx.tick()
        ctx.set(core.imem.we, 0)
        gx, gy, gz = launch.grid
        bx, by, bz = launch.block
        nthreads = bx * by * bz
        cycles = 0
        after = None  # cycles left to record after a fault
        for bid in range(gx * gy * gz):
            p = core.dispatch.payload
            for name, val in (("entry_pc", launch.entry), ("num_threads", nthreads),
                              ("num_warps", -(-nthreads // cfg.lanes)),
                              ("param_addr", PARAM_ADDR), ("param_size",
                                                           len(launch.param_bytes)),
                              ("shared_bytes", launch.shared_bytes)):
                ctx.set(getattr(p, name), val)
            for name, (x, y, z) in (("block_id", (bid % gx, bid // gx % gy, bid // (gx * gy))),
                                    ("grid", launch.grid), ("block_dim", launch.block)):
                ctx.set(getattr(p, name).x, x)
                ctx.set(getattr(p, name).y, y)
                ctx.set(getattr(p, name).z, z)
            ctx.set(core.dispatch.valid, 1)
            while not ctx.get(core.dispatch.ready):
                await ctx.tick()
                cycles += 1
            await ctx.tick()
            cycles += 1
            ctx.set(core.dispatch.valid, 0)
            while True:
                if ctx.get(core.fault.valid) and after is None:
                    result.cycles = cycles
                    after = after_fault
                # the record is final once the core has drained: an older instruction of
                # the faulting warp still in flight may replace it (rtl/fault_recorder.py)
                if after is not None and result.fault is None and ctx.get(core.drained):
                    rec = core.fault.record
                    result.fault = {
                        "cause": FaultCause(ctx.get(rec.cause).value),
                        "warp": ctx.get(rec.warp), "lanes": ctx.get(rec.lane_mask),
                        "pc": ctx.get(rec.pc), "instr": ctx.get(rec.instr),
                        "block": (ctx.get(rec.block.x), ctx.get(rec.block.y),
                                  ctx.get(rec.block.z))}
                if result.fault is not None and after <= 0:
                    return
                if ctx.get(core.dispatch.block_done):
                    break
                if trace_retire and ctx.get(core.retire.valid):
                    rt = core.retire
                    ex = ctx.get(rt.exec)
                    lanes = [l for l in range(cfg.lanes) if ex >> l & 1]
                    rd_ok = ctx.get(rt.rd_valid)
                    pd_ok = ctx.get(rt.pd_valid)
                    result.retired.append({
                        "block": [bid % gx, bid // gx % gy, bid // (gx * gy)],
                        "warp": ctx.get(rt.warp), "pc": ctx.get(rt.pc),
                        "mask": ctx.get(rt.mask), "exec": ex,
                        "rd": ctx.get(rt.rd) if rd_ok else None,
                        "values": [ctx.get(rt.values[l]) for l in lanes] if rd_ok else None,
                        "pd": ctx.get(rt.pd) if pd_ok else None,
                        "pvalues": ctx.get(rt.pvalues) & ex if pd_ok else None})
                for n in perf_names:
                    result.perf[n] += ctx.get(getattr(core.perf, n))
                await ctx.tick()
                cycles += 1
                if after is not None:
                    after -= 1
                    if after <= 0 and result.fault is not None:
                        return
                assert cycles < max_cycles, "kernel did not finish"
        result.cycles = cycles
        # wait for the memory to drain the last writes
        for _ in range(cfg.mem_latency + 4):
            await ctx.tick()
        out = bytearray()
        first = DATA_ADDR // line_bytes
        for line in range(first, lines_used):
            value = ctx.get(model.mem.data[line])
            out += int(value).to_bytes(line_bytes, "little")
        result.memory = bytes(out[:len(launch.memory)])

    if vcd:
        sim.add_testbench(bench_proc)
        with sim.write_vcd(vcd):
            sim.run()
    else:
        if job:  # run before (a new simulator is at its start already)
            sim.reset()
        job[:] = [bench_proc]
        sim.run()
    return result
