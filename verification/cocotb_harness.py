"""cocotb test module: run kernel launches on the RTL simulation harness (rtlsim/harness.py).

For each launch of the job file (``SIMTGPU_JOB``, written by
:mod:`simtgpu.verification.harness`) the bench

1. loads instruction memory and device memory through the backdoor ports (one word / one
   line per cycle, no bus traffic),
2. programs the host interface exactly as the driver does: ``QUEUE_BASE``,
   ``QUEUE_ENTRIES``, ``FENCE_ADDR``, a LAUNCH record in the ring, ``DOORBELL``,
3. records every retire-port sample of every core while the kernel runs (a monitor that
   samples once per cycle on the falling edge), until ``done``, or after a fault until the
   GPU has drained what was in flight,
4. reads STATUS, the FAULT_* registers and the performance counters over MMIO, and the
   buffers back through the memory backdoor.

Results are pickled to ``$SIMTGPU_RUN_DIR/results.pkl``. Inputs are driven and outputs
sampled on the falling clock edge; an MMIO handshake checks ``ready`` after the inputs
settle (``ReadOnly``), so it completes on the following rising edge.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly
from simtgpu.arch import command_queue as cq
from simtgpu.arch.command_queue import Command, CommandOp, Control, Mmio, Status

FIELDS = ("block", "warp", "pc", "mask", "exec", "rd_valid", "rd", "values", "pd_valid", "pd",
          "pvalues")


class Harness:
    """Drivers for the harness ports (all called at a falling edge)."""

    def __init__(self, dut, job: dict):
        self.dut = dut
        self.clk = dut.clk
        self.lanes = job["lanes"]
        self.cores = job["cores"]
        self.line_words = job["line_words"]
        self.line_bytes = 4 * self.line_words
        self.memory_timing = job.get("memory_timing")
        self.cycle = 0
        self.retire = []
        for i in range(self.cores):
            self.retire.append({f: getattr(dut, f"retire__{i}__{f}") for f in
                                ("valid",) + FIELDS})

    async def tick(self, n: int = 1) -> None:
        for _ in range(n):
            await FallingEdge(self.clk)
            self.cycle += 1

    async def reset(self) -> None:
        d = self.dut
        for name in ("mmio__we", "mmio__re", "mem_bd__we", "imem_bd__we", "mem_timing__we"):
            getattr(d, name).value = 0
        d.rst.value = 1
        await self.tick(4)
        d.rst.value = 0
        await self.tick(2)
        if self.memory_timing is not None:  # the DRAM model's setting (docs/memory-system.md)
            lat, cpl, inflight = self.memory_timing
            d.mem_timing__latency.value = lat
            d.mem_timing__cycles_per_line.value = cpl
            d.mem_timing__max_inflight.value = inflight
            d.mem_timing__we.value = 1
            await self.tick()
            d.mem_timing__we.value = 0

    async def mmio(self, addr: int, wdata: int | None = None, limit: int = 10_000) -> int:
        d = self.dut
        d.mmio__addr.value = int(addr)
        d.mmio__wdata.value = 0 if wdata is None else wdata & 0xFFFF_FFFF
        d.mmio__we.value = int(wdata is not None)
        d.mmio__re.value = int(wdata is None)
        for _ in range(limit):
            await ReadOnly()
            ready = int(d.mmio__ready.value)
            rdata = int(d.mmio__rdata.value)
            await self.tick()
            if ready:
                d.mmio__we.value = 0
                d.mmio__re.value = 0
                return rdata
        raise AssertionError(f"MMIO access to {addr:#x} never completed")

    async def write_lines(self, base: int, data: bytes) -> None:
        """Backdoor-write ``data`` at byte address ``base`` (line-aligned, whole lines)."""
        d = self.dut
        lb = self.line_bytes
        assert base % lb == 0
        data = data + bytes(-len(data) % lb)
        for i in range(0, len(data), lb):
            d.mem_bd__addr.value = (base + i) // lb
            d.mem_bd__wdata.value = int.from_bytes(data[i:i + lb], "little")
            d.mem_bd__we.value = 1
            await self.tick()
        d.mem_bd__we.value = 0

    async def read_lines(self, base: int, nbytes: int) -> bytes:
        d = self.dut
        lb = self.line_bytes
        first, last = base // lb, (base + nbytes + lb - 1) // lb
        out = bytearray()
        d.mem_bd__we.value = 0
        for line in range(first, last):
            d.mem_bd__addr.value = line
            await self.tick()  # rdata holds the line one cycle after its address
            out += int(d.mem_bd__rdata.value).to_bytes(lb, "little")
        off = base - first * lb
        return bytes(out[off:off + nbytes])

    async def load_imem(self, code: bytes) -> None:
        d = self.dut
        for i in range(0, len(code), 4):
            d.imem_bd__addr.value = i // 4
            d.imem_bd__data.value = int.from_bytes(code[i:i + 4], "little")
            d.imem_bd__we.value = 1
            await self.tick()
        d.imem_bd__we.value = 0

    def sample_retire(self, out: list) -> None:
        for core, port in enumerate(self.retire):
            if int(port["valid"].value):
                block = int(port["block"].value)
                values = int(port["values"].value)
                out.append((
                    block & 0xFFFF, block >> 16 & 0xFFFF, block >> 32 & 0xFFFF,
                    int(port["warp"].value), int(port["pc"].value), int(port["mask"].value),
                    int(port["exec"].value), int(port["rd_valid"].value),
                    int(port["rd"].value),
                    *[(values >> (32 * lane)) & 0xFFFF_FFFF for lane in range(self.lanes)],
                    int(port["pd_valid"].value), int(port["pd"].value),
                    int(port["pvalues"].value), core, self.cycle))


async def run_launch(h: Harness, job: dict, launch: dict, previous_end: int) -> dict:
    d = h.dut
    lb = h.line_bytes
    # Device memory: zero what earlier launches used, then the parameter block and buffers.
    lo = launch["param_addr"] // lb * lb
    hi = max(previous_end, launch["memory_end"])
    image = bytearray(-(-(hi - lo) // lb) * lb)
    pb = launch["param_bytes"]
    image[launch["param_addr"] - lo:launch["param_addr"] - lo + len(pb)] = pb
    for addr, data in launch["buffers"].values():
        image[addr - lo:addr - lo + len(data)] = data
    await h.write_lines(lo, bytes(image))
    # Ring and fence word at the top of memory (whole lines, zeroed).
    entries = 4
    qbase = job["queue_base"]
    fence_addr = qbase + entries * cq.RECORD_BYTES
    fence = launch["index"] + 1
    cmd = Command(CommandOp.LAUNCH, fence, launch["entry"], launch["grid"], launch["block"],
                  launch["param_addr"], len(pb), launch["shared_bytes"], 32, 0,
                  len(launch["code"]))
    ring = bytearray(entries * cq.RECORD_BYTES + lb)
    ring[0:cq.RECORD_BYTES] = cq.pack(cmd)
    await h.write_lines(qbase, bytes(ring))
    await h.load_imem(launch["code"])
    await h.mmio(Mmio.CONTROL, int(Control.RESET_COUNTERS))
    await h.mmio(Mmio.QUEUE_BASE, qbase)
    await h.mmio(Mmio.QUEUE_ENTRIES, entries)
    await h.mmio(Mmio.FENCE_ADDR, fence_addr)
    await h.mmio(Mmio.DOORBELL, 1)
    retired: list = []
    start = h.cycle
    limit = launch["max_cycles"]
    seen_busy = False
    timed_out = False
    while True:
        await h.tick()
        h.sample_retire(retired)
        busy = int(d.busy.value)
        seen_busy = seen_busy or bool(busy)
        if int(d.fault.value):
            # the cores finish what is in flight before they are flushed: the older
            # instructions of the faulting warp (loads among them) retire then, as on the ISS
            while not int(d.drained.value) and h.cycle - start <= limit:
                await h.tick()
                h.sample_retire(retired)
            break
        if seen_busy and int(d.done.value):
            break
        if h.cycle - start > limit:
            timed_out = True
            break
    cycles = h.cycle - start
    await h.tick(2)
    h.sample_retire(retired)
    regs = {}
    for reg in (Mmio.STATUS, Mmio.HEAD, Mmio.FAULT_CAUSE, Mmio.FAULT_PC, Mmio.FAULT_CORE,
                Mmio.FAULT_WARP, Mmio.FAULT_LANES, Mmio.FAULT_BLOCK_X, Mmio.FAULT_BLOCK_Y,
                Mmio.FAULT_BLOCK_Z, Mmio.FAULT_INSTR, *cq.PERF_COUNTERS):
        regs[reg.name] = await h.mmio(reg)
    fence_word = int.from_bytes(await h.read_lines(fence_addr, 4), "little")
    buffers = {}
    for name, (addr, data) in launch["buffers"].items():
        buffers[name] = await h.read_lines(addr, len(data))
    if regs["STATUS"] & int(Status.FAULT):
        await h.mmio(Mmio.CONTROL, int(Control.CLEAR_FAULT))
    return {"retired": retired, "regs": regs, "buffers": buffers, "cycles": cycles,
            "timed_out": timed_out, "fence": fence_word, "expected_fence": fence}


@cocotb.test()
async def run_launches(dut) -> None:
    """Every launch of the job, one after another, on one reset of the design."""
    with open(os.environ["SIMTGPU_JOB"], "rb") as fh:
        job = pickle.load(fh)
    cocotb.start_soon(Clock(dut.clk, 10, "ns").start())
    h = Harness(dut, job)
    await h.reset()
    results = []
    end = 0
    for launch in job["launches"]:
        results.append(await run_launch(h, job, launch, end))
        end = max(end, launch["memory_end"])
    out = Path(os.environ["SIMTGPU_RUN_DIR"]) / "results.pkl"
    with open(out, "wb") as fh:
        pickle.dump(results, fh)
