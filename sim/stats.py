"""What a launch did, counted: instructions, divergence, barriers, memory traffic."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LaunchStats:
    """Counters of one launch.

    ``thread_instructions`` sums, over warp-instructions, the lanes that executed (for
    ``bra``: the active lanes, all of which evaluate the branch). Memory counters count lane
    accesses (one per executing lane), not bus transactions; ``param_loads`` counts
    warp reads (every lane of a warp reads the same parameter word).
    """

    warp_instructions: int = 0
    thread_instructions: int = 0
    per_opcode: dict[str, int] = field(default_factory=dict)
    divergence_events: int = 0  # bra that split a warp
    barriers: int = 0  # block-wide barrier completions
    blocks: int = 0
    warps: int = 0
    global_loads: int = 0
    global_stores: int = 0
    shared_loads: int = 0
    shared_stores: int = 0
    atomics: int = 0
    param_loads: int = 0
    max_stack_depth: int = 0
    seconds: float = 0.0  # host wall time of the launch (not deterministic)

    @property
    def thread_instructions_per_second(self) -> float:
        return self.thread_instructions / self.seconds if self.seconds > 0 else 0.0
