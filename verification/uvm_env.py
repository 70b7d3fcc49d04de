"""pyuvm environment: constrained-random launches on the RTL GPU, scored against the ISS.

Structure (UVM names)::

    RandomLaunchTest (uvm_test)
      GpuEnv (uvm_env)
        HostAgent (uvm_agent)            MMIO host interface
          uvm_sequencer                  <- RandomLaunchSeq: one LaunchItem per seed
          HostDriver (uvm_driver)        programs the ring and DOORBELL, waits for done,
                                         reads STATUS / FAULT_* / counters
        MemoryAgent (uvm_agent)          memory-port backdoor of the memory model
          MemoryDriver                   loads code and buffers, reads buffers back
        RetireMonitor (uvm_monitor)      retire port of every core, once per cycle
        GpuScoreboard (uvm_component)    ISS golden run + step-and-compare + final memory
        CoverageCollector (uvm_subscriber)  functional coverage (verification/coverage.py)

The host driver publishes one :class:`LaunchResult` per item on its analysis port (with the
retire samples the monitor collected during that launch); the scoreboard and the coverage
collector subscribe. Run by ``tests/rtl/system/test_rtl_uvm.py`` through
``verification.harness.run_uvm`` on the same Verilator build as the other GPU benches; the job
(configuration, seeds) comes from ``SIMTGPU_JOB`` and the verdicts go to
``$SIMTGPU_RUN_DIR/uvm_results.pkl``.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path

import cocotb
import numpy as np
import pyuvm
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge
from pyuvm import (
    ConfigDB,
    uvm_agent,
    uvm_analysis_port,
    uvm_component,
    uvm_driver,
    uvm_env,
    uvm_monitor,
    uvm_sequence,
    uvm_sequence_item,
    uvm_sequencer,
    uvm_subscriber,
    uvm_test,
)
from simtgpu.arch import command_queue as cq
from simtgpu.arch.command_queue import Command, CommandOp, Control, Mmio, Status

from .cocotb_harness import Harness
from .compare import retire_to_trace
from .coverage import CoverageModel
from .launch import PARAM_ADDR, KernelLaunch, run_iss
from .random_programs import random_launch


class LaunchItem(uvm_sequence_item):
    """One kernel launch (a random program and its data)."""

    def __init__(self, name: str, launch: KernelLaunch):
        super().__init__(name)
        self.launch = launch


@dataclass
class LaunchResult:
    launch: KernelLaunch
    retired: list = field(default_factory=list)
    regs: dict = field(default_factory=dict)
    buffers: dict = field(default_factory=dict)
    cycles: int = 0
    timed_out: bool = False


class RandomLaunchSeq(uvm_sequence):
    """The sequence library's random-program sequence: seeds ``first .. first+count-1``."""

    async def body(self):
        job = ConfigDB().get(None, "", "JOB")
        for s in range(job["seed"], job["seed"] + job["count"]):
            item = LaunchItem(f"seed{s}", random_launch(s, job["lanes"], job["warps"]))
            await self.start_item(item)
            await self.finish_item(item)


class MemoryDriver(uvm_component):
    """Memory-port agent: backdoor access to the memory model (one line per cycle)."""

    def connect_phase(self):
        self.h: Harness = ConfigDB().get(self, "", "HARNESS")

    async def load(self, launch: KernelLaunch, previous_end: int) -> None:
        h = self.h
        lb = h.line_bytes
        lo = PARAM_ADDR // lb * lb
        hi = max(previous_end, launch.memory_end())
        image = bytearray(-(-(hi - lo) // lb) * lb)
        pb = launch.param_bytes
        image[PARAM_ADDR - lo:PARAM_ADDR - lo + len(pb)] = pb
        for addr, words in launch.buffers.values():
            data = words.astype("<u4").tobytes()
            image[addr - lo:addr - lo + len(data)] = data
        await h.write_lines(lo, bytes(image))
        await h.load_imem(launch.code)

    async def dump(self, launch: KernelLaunch) -> dict:
        return {name: np.frombuffer(await self.h.read_lines(addr, 4 * len(w)), "<u4").copy()
                for name, (addr, w) in launch.buffers.items()}


class MemoryAgent(uvm_agent):
    def build_phase(self):
        self.driver = MemoryDriver("driver", self)


class RetireMonitor(uvm_monitor):
    """Samples every core's retire port once per cycle while ``recording``."""

    def build_phase(self):
        self.ap = uvm_analysis_port("ap", self)
        self.recording = False
        self.samples: list = []

    def connect_phase(self):
        self.h: Harness = ConfigDB().get(self, "", "HARNESS")

    async def run_phase(self):
        h = self.h
        while True:
            await FallingEdge(h.clk)  # the driver counts the cycles
            if self.recording:
                h.sample_retire(self.samples)


class HostDriver(uvm_driver):
    """Host agent driver: the command queue and MMIO registers, as the driver programs them."""

    def build_phase(self):
        self.ap = uvm_analysis_port("ap", self)

    def connect_phase(self):
        self.h: Harness = ConfigDB().get(self, "", "HARNESS")
        self.job = ConfigDB().get(self, "", "JOB")
        # self.mem (MemoryDriver) and self.monitor (RetireMonitor) are set by GpuEnv

    async def run_phase(self):
        h, d = self.h, self.h.dut
        end = 0
        index = 0
        while True:
            item = await self.seq_item_port.get_next_item()
            ln = item.launch
            await self.mem.load(ln, end)
            end = max(end, ln.memory_end())
            qbase = self.job["queue_base"]
            index += 1
            cmd = Command(CommandOp.LAUNCH, index, ln.entry, ln.grid, ln.block, PARAM_ADDR,
                          len(ln.param_bytes), ln.shared_bytes, 32, 0, len(ln.code))
            ring = bytearray(4 * cq.RECORD_BYTES + h.line_bytes)
            ring[:cq.RECORD_BYTES] = cq.pack(cmd)
            await h.write_lines(qbase, bytes(ring))
            await h.mmio(Mmio.CONTROL, int(Control.RESET_COUNTERS))
            await h.mmio(Mmio.QUEUE_BASE, qbase)
            await h.mmio(Mmio.QUEUE_ENTRIES, 4)
            await h.mmio(Mmio.FENCE_ADDR, qbase + 4 * cq.RECORD_BYTES)
            self.monitor.samples = []
            self.monitor.recording = True
            await h.mmio(Mmio.DOORBELL, 1)
            start, seen_busy, res = h.cycle, False, LaunchResult(ln)
            while True:
                await h.tick()
                seen_busy = seen_busy or bool(int(d.busy.value))
                if int(d.fault.value) or (seen_busy and int(d.done.value)):
                    break
                if h.cycle - start > self.job["max_cycles"]:
                    res.timed_out = True
                    break
            await h.tick(2)
            self.monitor.recording = False
            res.retired = list(self.monitor.samples)
            res.cycles = h.cycle - start
            for reg in (Mmio.STATUS, Mmio.FAULT_CAUSE, Mmio.INSTRUCTIONS,
                        Mmio.THREAD_INSTRUCTIONS, Mmio.CYCLES_LO):
                res.regs[reg.name] = await h.mmio(reg)
            res.buffers = await self.mem.dump(ln)
            if res.regs["STATUS"] & int(Status.FAULT):
                await h.mmio(Mmio.CONTROL, int(Control.CLEAR_FAULT))
            self.ap.write(res)
            self.seq_item_port.item_done()


class HostAgent(uvm_agent):
    def build_phase(self):
        self.seqr = uvm_sequencer("seqr", self)
        self.driver = HostDriver("driver", self)

    def connect_phase(self):
        self.driver.seq_item_port.connect(self.seqr.seq_item_export)


class GpuScoreboard(uvm_subscriber):
    """Golden ISS run of every launch and the comparison (retire trace, memory, counters)."""

    def build_phase(self):
        self.verdicts: list[tuple[int, str | None]] = []

    def write(self, res: LaunchResult):
        from .harness import RtlRun, check_one, rtl_config

        job = ConfigDB().get(None, "", "JOB")
        cfg = rtl_config(job["config"])
        gold = run_iss(res.launch, cfg.lanes, cfg.sim_memory_bytes, cfg.stack_depth, cfg.cores)
        trace = [retire_to_trace(r, cfg.lanes) for r in res.retired]
        regs = {"STATUS": res.regs["STATUS"], "FAULT_CAUSE": res.regs["FAULT_CAUSE"]}
        rtl = RtlRun(trace, res.buffers, regs, res.cycles, res.timed_out, True)
        mm = check_one(cfg, res.launch, gold, rtl)
        if mm is None and gold.fault is None and res.regs["INSTRUCTIONS"] != len(gold.trace):
            mm = (f"seed {res.launch.seed}: INSTRUCTIONS counter {res.regs['INSTRUCTIONS']}, "
                  f"ISS retired {len(gold.trace)}")
        if mm is not None:
            self.logger.error(mm)
        self.verdicts.append((res.launch.seed, None if mm is None else str(mm)))
        cov = ConfigDB().get(None, "", "COVERAGE")
        cov.sample(res.launch, gold.trace, cfg.lanes)


class CoverageCollector(uvm_subscriber):
    """Counts what the monitor saw; the functional coverage itself is sampled from the
    golden trace of each launch by the scoreboard (same content, program order)."""

    def build_phase(self):
        self.launches = 0
        self.retired = 0

    def write(self, res: LaunchResult):
        self.launches += 1
        self.retired += len(res.retired)


class GpuEnv(uvm_env):
    def build_phase(self):
        self.host = HostAgent("host", self)
        self.memory = MemoryAgent("memory", self)
        self.monitor = RetireMonitor("retire_monitor", self)
        self.scoreboard = GpuScoreboard("scoreboard", self)
        self.coverage = CoverageCollector("coverage", self)

    def connect_phase(self):
        self.host.driver.mem = self.memory.driver
        self.host.driver.monitor = self.monitor
        self.host.driver.ap.connect(self.scoreboard.analysis_export)
        self.host.driver.ap.connect(self.coverage.analysis_export)


@pyuvm.test()
class RandomLaunchTest(uvm_test):
    """Random programs on the RTL GPU, scored against the ISS, with coverage."""

    def build_phase(self):
        with open(os.environ["SIMTGPU_JOB"], "rb") as fh:
            job = pickle.load(fh)
        dut = cocotb.top
        self.harness = Harness(dut, {"lanes": job["lanes"], "cores": job["cores"],
                                     "line_words": job["line_words"]})
        ConfigDB().set(None, "*", "HARNESS", self.harness)
        ConfigDB().set(None, "*", "JOB", job)
        ConfigDB().set(None, "*", "COVERAGE", CoverageModel("uvm"))
        self.env = GpuEnv("env", self)

    async def run_phase(self):
        self.raise_objection()
        cocotb.start_soon(Clock(cocotb.top.clk, 10, "ns").start())
        await self.harness.reset()
        await RandomLaunchSeq("random").start(self.env.host.seqr)
        self.drop_objection()

    def report_phase(self):
        cov: CoverageModel = ConfigDB().get(None, "", "COVERAGE")
        sb = self.env.scoreboard
        out = Path(os.environ["SIMTGPU_RUN_DIR"]) / "uvm_results.pkl"
        with open(out, "wb") as fh:
            pickle.dump({"verdicts": sb.verdicts, "coverage": cov.report(),
                         "launches": self.env.coverage.launches,
                         "retired": self.env.coverage.retired}, fh)
        self.logger.info(cov.report("Coverage of this pyuvm run"))
