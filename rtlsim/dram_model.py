"""Cycle-by-cycle reference of the DRAM model's timing (rtlsim/memory_model.py).

Written from the contract in docs/memory-system.md, not from the RTL, so that the unit tests
(tests/rtl/gpu/test_memory_model.py) can hold the RTL to it cycle by cycle: for a given
request stream and ``resp.ready`` pattern, in which cycle each request is accepted and in
which its response is valid. It models timing only; what a request reads or writes is the
reference memory's business (``tests/rtl/gpu/rtlgpu_helpers.RefMemory``).

The contract, per clock cycle ``t`` (values seen between two edges):

* ``req.ready`` is high when fewer than ``max_inflight`` requests are held (accepted, response
  not yet taken) and the request accepted in cycle ``t - 1`` is not an atomic (an atomic's
  read-modify-write takes the cycle after its acceptance).
* The channel: a request accepted in cycle ``t`` starts its transfer at
  ``s = max(t, end of the previous transfer)`` and occupies the channel until
  ``s + cycles_per_line``; its response is due at ``s + latency``.
* A request's response can be valid no sooner than cycle ``t + 2`` (array read, then queue)
  and only once every earlier response was taken (responses are in request order).

``atom.fadd`` holds its stage while the FP adder works and is not modelled here.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from simtgpu.arch.config import MemoryConfig

__all__ = ["DramTiming"]


@dataclass
class _Held:
    due: int      # cycle from which the response may be valid
    atomic: bool


class DramTiming:
    """Timing of the DRAM model's port, advanced one clock cycle at a time.

    Parameters
    ----------
    latency, cycles_per_line, max_inflight:
        The model's timing registers (:meth:`from_config` derives them from a setting).

    Use: each cycle, read :meth:`req_ready` and :meth:`resp_valid`, then call :meth:`clock`
    with what fired in that cycle.
    """

    def __init__(self, latency: int, cycles_per_line: int, max_inflight: int):
        if latency < 1 or cycles_per_line < 1 or max_inflight < 1:
            raise ValueError("latency, cycles_per_line and max_inflight must be at least 1")
        self.latency = latency
        self.cpl = cycles_per_line
        self.limit = max_inflight
        self.t = 0
        self.channel_free = 0           # first cycle the channel can start a transfer
        self.held: deque[_Held] = deque()
        self.last_atomic = False        # the request accepted in the previous cycle

    @classmethod
    def from_config(cls, memory: MemoryConfig, line_bytes: int) -> DramTiming:
        return cls(memory.latency, memory.cycles_per_line(line_bytes), memory.inflight_limit)

    def req_ready(self) -> bool:
        return len(self.held) < self.limit and not self.last_atomic

    def resp_valid(self) -> bool:
        return bool(self.held) and self.t >= self.held[0].due

    def clock(self, req_fire: bool, atomic: bool = False, resp_fire: bool = False) -> None:
        """End cycle ``t``: ``req_fire`` a request (an atomic if ``atomic``) was accepted,
        ``resp_fire`` the head response was taken."""
        if req_fire and not self.req_ready():
            raise AssertionError(f"cycle {self.t}: request accepted while not ready")
        if resp_fire:
            if not self.resp_valid():
                raise AssertionError(f"cycle {self.t}: response taken while not valid")
            self.held.popleft()
        if req_fire:
            start = max(self.t, self.channel_free)
            self.channel_free = start + self.cpl
            self.held.append(_Held(max(start + self.latency, self.t + 2), atomic))
        self.last_atomic = req_fire and atomic
        self.t += 1

    def stream(self, n: int) -> list[int]:
        """Response cycles of ``n`` requests offered back to back from cycle 0 with the
        responses always taken (the closed form the unit tests also check)."""
        out = []
        pending = n
        accepted: list[int] = []
        while len(out) < n:
            fire = pending > 0 and self.req_ready()
            taken = self.resp_valid()
            if taken:
                out.append(self.t)
            if fire:
                accepted.append(self.t)
                pending -= 1
            self.clock(fire, False, taken)
        return out
