"""Draw docs/tensor-core.png: the mma fragment layout at 8 and 32 lanes, from isa/mma.py.

Run: ``.venv/bin/python scripts/tensor_core_figure.py`` (writes docs/tensor-core.png).
Each cell of A, B and C/D shows the lane that holds it and, after the colon, the register of
the fragment group (A and B: register.half).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from simtgpu.isa.mma import mma_shape  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "docs" / "tensor-core.png"


def _grid(ax, rows: int, cols: int, cells: dict, title: str, lanes: int) -> None:
    cmap = plt.get_cmap("tab20" if lanes > 8 else "tab10")
    for (i, j), (lane, label) in cells.items():
        color = cmap((lane // max(1, lanes // 20)) % cmap.N if lanes > 20 else lane % cmap.N)
        ax.add_patch(plt.Rectangle((j, rows - 1 - i), 1, 1, color=color, alpha=0.55))
        ax.text(j + 0.5, rows - 0.5 - i, f"{lane}:{label}", ha="center", va="center",
                fontsize=5.2 if lanes > 8 else 7)
    ax.set_xlim(0, cols)
    ax.set_ylim(0, rows)
    ax.set_xticks([c + 0.5 for c in range(cols)], [str(c) for c in range(cols)], fontsize=6)
    ax.set_yticks([rows - 0.5 - r for r in range(rows)], [str(r) for r in range(rows)],
                  fontsize=6)
    ax.set_title(title, fontsize=9)
    ax.set_aspect("equal")
    ax.tick_params(length=0)


def main() -> None:
    fig, axes = plt.subplots(2, 3, figsize=(15, 9.5),
                             gridspec_kw={"width_ratios": [16, 8, 8]})
    for row, lanes in enumerate((8, 32)):
        s = mma_shape(lanes)
        a, b, c = {}, {}, {}
        for ln in range(lanes):
            for h in (0, 1):
                for r in range(s.regs_a):
                    a[s.a_pos(r, h, ln)] = (ln, f"{r}.{h}")
                for r in range(s.regs_b):
                    b[s.b_pos(r, h, ln)] = (ln, f"{r}.{h}")
            for r in range(s.regs_c):
                c[s.c_pos(r, ln)] = (ln, str(r))
        _grid(axes[row][0], s.m, s.k, a, f"W={lanes} ({s.name}): A, {s.m}x{s.k}, "
              f"{s.regs_a} registers", lanes)
        _grid(axes[row][1], s.k, s.n, b, f"B, {s.k}x{s.n}, {s.regs_b} registers", lanes)
        _grid(axes[row][2], s.m, s.n, c, f"C and D, {s.m}x{s.n} FP32, {s.regs_c} registers",
              lanes)
    fig.suptitle("mma fragment layout: lane:register[.half] of each element "
                 "(half 0 = bits 15:0); rows down, columns across", fontsize=11)
    fig.tight_layout()
    fig.savefig(OUT, dpi=110)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
