"""Fan-out splitting: copies of a cell that drives too many loads, each driving some of them.

nextpnr-ecp5 places and routes the netlist yosys maps and never buffers or copies a cell. A
net from one LUT to 1,778 flip-flop enables (the core's stall into its stage registers) is
one net spread over much of the device, and its longest branches take 8 to 10 ns on their
own (docs/performance.md, "Timing loop"). Synthesis tools for FPGAs copy such a driver
(a "maximum fan-out"); this is that step for the open flow: a LUT4 or flip-flop whose output
has more than ``max_fanout`` loads is copied, each copy computing the same function from the
same inputs (a flip-flop copy: the same data, enable, reset and clock), and the loads are
shared out among the original and its copies, ``max_fanout`` at most each. The placer then
puts each copy by its own loads. The netlist's function is unchanged: every copy is the same
cell on the same nets.

Loads are grouped by their cell names in order, so that the bits of one register (whose
names differ only in the index) share a copy: a grouping by name rather than by place,
which nextpnr does not know before it places. Loads that must stay with the driver (a wide
LUT's multiplexer, which the packer puts in the driver's slice; a carry cell) and the
design's own output ports stay on the original.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["COPYABLE", "FanoutSplit", "split_fanout"]

COPYABLE = {"LUT4": "Z", "TRELLIS_FF": "Q"}
"""The cell types the step copies and their output port."""

# loads that keep the original: a wide LUT's multiplexers (packed in their LUTs' slice) and,
# to leave the carry chains' placement (one piece each) as it was, the carry cells
_STAY = {"PFUMX", "L6MUX21", "CCU2C"}
_NUMBER = re.compile(r"(\d+)")


@dataclass
class FanoutSplit:
    """One net split: its name, driver's type, loads, and the copies added."""

    net: str
    cell_type: str
    loads: int
    copies: int


def _natural(name: str) -> list:
    return [int(p) if p.isdigit() else p for p in _NUMBER.split(name)]


def _top(netlist: dict) -> dict:
    modules = netlist["modules"]
    tops = [m for m in modules.values() if int(m.get("attributes", {}).get("top", 0) or 0)]
    if len(tops) != 1 and len(modules) != 1:
        raise ValueError("fan-out split: the netlist needs one top module (a flattened one)")
    return tops[0] if tops else next(iter(modules.values()))


def split_fanout(netlist: dict, max_fanout: int) -> list[FanoutSplit]:
    """Split, in ``netlist`` (yosys' JSON of a flattened ECP5 design, changed in place),
    every net driven by a :data:`COPYABLE` cell with more than ``max_fanout`` cell loads;
    returns what was split, largest first."""
    if max_fanout < 2:
        raise ValueError(f"max_fanout must be at least 2, not {max_fanout}")
    top = _top(netlist)
    cells, netnames = top["cells"], top["netnames"]
    driver: dict[int, tuple[str, str]] = {}
    loads: dict[int, list[tuple[str, str, int]]] = {}
    next_bit = 2
    for name, cell in cells.items():
        for port, bits in cell["connections"].items():
            out = cell["port_directions"].get(port) == "output"
            for i, bit in enumerate(bits):
                if not isinstance(bit, int):
                    continue
                next_bit = max(next_bit, bit + 1)
                if out:
                    driver[bit] = (name, port)
                else:
                    loads.setdefault(bit, []).append((name, port, i))
    for port in top.get("ports", {}).values():
        next_bit = max([next_bit, *(b + 1 for b in port["bits"] if isinstance(b, int))])
    net_name = {}
    for name, net in sorted(netnames.items(), key=lambda kv: (kv[1].get("hide_name", 0),
                                                                len(kv[0]))):
        for bit in net["bits"]:
            if isinstance(bit, int):
                net_name.setdefault(bit, name)

    splits = []
    for bit, users in loads.items():
        drv = driver.get(bit)
        if drv is None:
            continue
        cname, cport = drv
        ctype = cells[cname]["type"]
        if COPYABLE.get(ctype) != cport:
            continue
        movable = sorted((u for u in users if cells[u[0]]["type"] not in _STAY),
                         key=lambda u: (_natural(u[0]), u[1], u[2]))
        if len(users) <= max_fanout or _is_clock(users):
            continue
        # the original keeps the loads that cannot move and the first group's rest
        first = max(0, max_fanout - (len(users) - len(movable)))
        groups = [movable[i:i + max_fanout] for i in range(first, len(movable), max_fanout)]
        base = net_name.get(bit, f"{cname}.{cport}")
        for k, group in enumerate(groups, start=1):
            copy = dict(cells[cname])
            copy["connections"] = dict(copy["connections"])
            copy["connections"][cport] = [next_bit]
            copy["attributes"] = dict(copy.get("attributes", {}))
            cells[f"{cname}$fanout{k}"] = copy
            netnames[f"{base}$fanout{k}"] = {"hide_name": 0, "bits": [next_bit],
                                            "attributes": {}}
            for uname, uport, i in group:
                conn = list(cells[uname]["connections"][uport])
                conn[i] = next_bit
                cells[uname]["connections"][uport] = conn
            next_bit += 1
        if groups:
            splits.append(FanoutSplit(base, ctype, len(users), len(groups)))
    splits.sort(key=lambda s: -s.loads)
    return splits


def _is_clock(users: list[tuple[str, str, int]]) -> bool:
    """A net that clocks anything is the clock network's, not a fan-out to split."""
    return any(port in ("CLK", "WCK", "CLKA", "CLKB") for _, port, _ in users)
