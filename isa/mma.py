"""The shape of ``mma`` and its register-fragment layout, as a function of the warp width.

``mma.f16 / mma.bf16 d, a, b, c`` computes ``D = A x B + C`` for one warp: A is m x k and
B is k x n (fp16 or bf16, two per register, the lower column or row index in the low half),
C and D are m x n FP32. The layout generalises PTX ``mma.m16n8k16`` (.f16/.bf16 inputs, .f32
accumulators) so that every lane holds whole registers at every warp width W:

* lanes form groups of ``T`` threads: ``g = lane // T`` (the group), ``t = lane % T``;
  ``T`` is the smallest power of two with ``2 T^2 >= W``, and ``G = W / T`` groups;
* m = 2G, n = 2T, k = 4T (W = 32: T = 4, m16n8k16 exactly as PTX; W = 8: m8n4k8;
  W = 4: m4n4k8);
* A: 4 registers; register r, half h holds ``A[g + G*(r % 2), 2t + h + 2T*(r // 2)]``;
* B: ``4 T^2 / W`` registers (2 or 4); register r, half h holds
  ``B[2t + h + 2T*(r % 2), g + G*(r // 2)]``;
* C, D: 4 registers; register r holds ``C[g + G*(r // 2), 2t + r % 2]``.

Each operand names the first register of its group; groups start at a multiple of 4
(``Operand.align``). docs/tensor-core.md draws these layouts.
"""

from __future__ import annotations

from dataclasses import dataclass


class MmaShapeError(ValueError):
    """No mma shape is defined for this warp width."""


@dataclass(frozen=True)
class MmaShape:
    """The mma tile and fragment sizes at warp width ``lanes``."""

    lanes: int
    t: int  # threads per group
    groups: int
    m: int
    n: int
    k: int
    regs_a: int
    regs_b: int
    regs_c: int

    @property
    def macs(self) -> int:
        """Multiply-accumulates one ``mma`` performs."""
        return self.m * self.n * self.k

    def regs(self, frag: str) -> int:
        """Registers in the group of fragment ``a``, ``b``, ``c`` or ``d``."""
        return {"a": self.regs_a, "b": self.regs_b, "c": self.regs_c, "d": self.regs_c}[frag]

    @property
    def name(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    def a_pos(self, reg: int, half: int, lane: int) -> tuple[int, int]:
        """(row, column) of A held in ``half`` of fragment register ``reg`` of ``lane``."""
        g, t = divmod(lane, self.t)
        return g + self.groups * (reg % 2), 2 * t + half + 2 * self.t * (reg // 2)

    def b_pos(self, reg: int, half: int, lane: int) -> tuple[int, int]:
        """(row, column) of B held in ``half`` of fragment register ``reg`` of ``lane``."""
        g, t = divmod(lane, self.t)
        return 2 * t + half + 2 * self.t * (reg % 2), g + self.groups * (reg // 2)

    def c_pos(self, reg: int, lane: int) -> tuple[int, int]:
        """(row, column) of C (and D) held in fragment register ``reg`` of ``lane``."""
        g, t = divmod(lane, self.t)
        return g + self.groups * (reg // 2), 2 * t + reg % 2


def mma_shape(lanes: int) -> MmaShape:
    """The ``mma`` shape at warp width ``lanes`` (a power of two, 2 or more)."""
    if lanes < 2 or lanes & (lanes - 1):
        raise MmaShapeError(f"mma needs a warp width that is a power of two >= 2, not {lanes}")
    t = 1
    while 2 * t * t < lanes:
        t *= 2
    groups = lanes // t
    m, n, k = 2 * groups, 2 * t, 4 * t
    return MmaShape(lanes=lanes, t=t, groups=groups, m=m, n=n, k=k, regs_a=m * k // (2 * lanes),
                    regs_b=k * n // (2 * lanes), regs_c=m * n // lanes)


def _check() -> None:
    for lanes in (2, 4, 8, 16, 32, 64):
        s = mma_shape(lanes)
        assert s.regs_a == 4 and s.regs_c == 4 and s.regs_b in (2, 4), s
        for regs, pos, size in ((s.regs_a, s.a_pos, s.m * s.k), (s.regs_b, s.b_pos, s.k * s.n)):
            cells = {pos(r, h, ln) for r in range(regs) for h in (0, 1) for ln in range(lanes)}
            assert len(cells) == size, s  # every element exactly once
        assert len({s.c_pos(r, ln) for r in range(4) for ln in range(lanes)}) == s.m * s.n
    assert mma_shape(32).name == "m16n8k16"


_check()
