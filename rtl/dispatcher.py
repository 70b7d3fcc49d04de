"""Block dispatcher: hands the thread blocks of a launch to the cores.

Blocks go out in linear order (x fastest, then y, then z), each to a core that says it can
take it (``ready``: free warp slots and shared memory). When several cores are ready the
choice rotates, so blocks spread over the cores instead of piling onto core 0. The dispatcher
counts ``block_done`` pulses and pulses ``done`` once every block of the launch has finished.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .params import require_positive
from .signatures import block_dispatch_signature, block_layout

__all__ = ["Dispatcher", "launch_layout"]


def launch_layout() -> data.StructLayout:
    """What a launch tells the dispatcher: every field of a block but its id."""
    fields = dict(block_layout().members)
    del fields["block_id"]
    return data.StructLayout(fields)


class Dispatcher(wiring.Component):
    """Launch-to-blocks dispatcher.

    Parameters
    ----------
    cores:
        Number of cores fed.
    max_resident:
        Most blocks that can be resident at once over all cores (sizes the in-flight counter;
        ``cores * warps`` since a block has at least one warp).

    Members
    -------
    launch: ``In(launch_layout())``
        The launch; sampled on ``start``. ``grid`` must be non-zero in every dimension.
    start: ``In(1)``
        Pulse: begin handing out the blocks of ``launch``.
    abort: ``In(1)``
        Pulse: stop at once (after a fault); the host flushes the cores.
    busy: ``Out(1)``
        Between ``start`` and ``done`` (or ``abort``).
    done: ``Out(1)``
        One-cycle pulse when every block has been handed out and has reported completion.
    cores: ``Out(block_dispatch_signature()).array(cores)``
        One dispatch port per core.
    """

    def __init__(self, cores: int, max_resident: int):
        require_positive(cores=cores)
        self.n = cores
        self.max_resident = max_resident
        super().__init__({
            "launch": In(launch_layout()),
            "start": In(1),
            "abort": In(1),
            "busy": Out(1),
            "done": Out(1),
            "cores": Out(block_dispatch_signature()).array(cores),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        n = self.n
        launch = Signal(launch_layout())
        cur = Signal(block_layout().members["block_id"])
        all_issued = Signal()
        in_flight = Signal(range(self.max_resident + 1))
        running = Signal()
        m.d.comb += self.busy.eq(running)

        offering = Signal()
        m.d.comb += offering.eq(running & ~all_issued)

        # Rotating choice among the ready cores (ready depends on the payload, never on valid).
        ptr = Signal(range(max(n, 2)))  # at least one bit, even for one core
        sel = Signal(range(max(n, 2)))
        any_ready = Signal()
        readies = [self.cores[i].ready for i in range(n)]
        m.d.comb += any_ready.eq(sum(r << i for i, r in enumerate(readies)) != 0)
        with m.Switch(ptr):
            for p in range(n):
                with m.Case(p):
                    for i in reversed([(p + k) % n for k in range(n)]):
                        with m.If(readies[i]):
                            m.d.comb += sel.eq(i)

        for i, port in enumerate(self.cores):
            pl = port.payload
            m.d.comb += [
                pl.entry_pc.eq(launch.entry_pc),
                pl.block_id.eq(cur),
                pl.grid.eq(launch.grid),
                pl.block_dim.eq(launch.block_dim),
                pl.num_threads.eq(launch.num_threads),
                pl.num_warps.eq(launch.num_warps),
                pl.param_addr.eq(launch.param_addr),
                pl.param_size.eq(launch.param_size),
                pl.shared_bytes.eq(launch.shared_bytes),
                port.valid.eq(offering & any_ready & (sel == i)),
            ]

        handoff = Signal()
        m.d.comb += handoff.eq(offering & any_ready)
        finished = Signal(range(n + 1))
        m.d.comb += finished.eq(sum(self.cores[i].block_done for i in range(n)))

        m.d.sync += in_flight.eq(in_flight + handoff - finished)
        with m.If(handoff):
            m.d.sync += ptr.eq(Mux(sel == n - 1, 0, sel + 1))
            last_x = cur.x + 1 == launch.grid.x
            last_y = cur.y + 1 == launch.grid.y
            last_z = cur.z + 1 == launch.grid.z
            with m.If(~last_x):
                m.d.sync += cur.x.eq(cur.x + 1)
            with m.Else():
                m.d.sync += cur.x.eq(0)
                with m.If(~last_y):
                    m.d.sync += cur.y.eq(cur.y + 1)
                with m.Else():
                    m.d.sync += cur.y.eq(0)
                    with m.If(~last_z):
                        m.d.sync += cur.z.eq(cur.z + 1)
                    with m.Else():
                        m.d.sync += all_issued.eq(1)

        with m.If(running & all_issued & (in_flight == 0)):
            m.d.comb += self.done.eq(1)
            m.d.sync += running.eq(0)

        with m.If(self.start):
            m.d.sync += [
                launch.eq(self.launch),
                cur.eq(0),
                all_issued.eq(0),
                in_flight.eq(0),
                running.eq(1),
            ]
        with m.If(self.abort):
            m.d.sync += [running.eq(0), all_issued.eq(1), in_flight.eq(0)]
        return m
