"""The table of ``triton.language.__all__`` in docs/compiler.md matches what the ``tl``
namespace exports, every missing name has a reason, and the small standard-library names
(``tl.add``, ``tl.cast``, ``tl.swizzle2d``, ``tl.constexpr_function``) work."""

from __future__ import annotations

import numpy as np
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend import triton_names


def test_docs_table_is_current():
    text = triton_names.docs_path().read_text()
    assert triton_names.current_docs_table(text) == triton_names.render_table(), (
        "docs/compiler.md is out of date: python -m simtgpu.compiler_backend.triton_names "
        "--write")


def test_every_missing_name_has_a_reason_and_present_names_are_real():
    for name, present, _ in triton_names.coverage():
        if present:
            assert hasattr(tl, name), name
        else:
            if name in triton_names.ERROR_ONLY:
                assert name in tl.__all__  # defined, to say why it cannot be used
                continue
            assert name in triton_names.REASONS, f"{name}: give a reason in REASONS"
            assert not hasattr(tl, name) or name not in tl.__all__
    assert len(set(triton_names.TRITON_LANGUAGE_ALL)) == len(triton_names.TRITON_LANGUAGE_ALL)


@tl.constexpr_function
def _half(v):
    return v // 2


@triton.jit
def k_std(out_ptr, GM: tl.constexpr, GN: tl.constexpr, G: tl.constexpr):
    pid = tl.program_id(0)
    i, j = tl.swizzle2d(pid // GN, pid % GN, GM, GN, G)
    tl.store(out_ptr + 2 * pid, i)
    tl.store(out_ptr + 2 * pid + 1, tl.add(j, _half(2)) - 1)
    f = tl.cast(pid, tl.float32) * 0.5
    tl.store(out_ptr + 2 * GM * GN + pid, tl.cast(f, tl.int32))


def swizzle_ref(i, j, size_i, size_j, size_g):
    ij = i * size_j + j
    size_gj = size_g * size_j
    off_i = (ij // size_gj) * size_g
    g = min(size_i - off_i, size_g)
    ij = ij % size_gj
    return off_i + ij % g, ij // g


def test_swizzle2d_add_cast(iss_device):
    gm, gn, g = 5, 3, 2
    out = np.zeros(3 * gm * gn, np.int32)
    k_std[(gm * gn,)](out, GM=gm, GN=gn, G=g)
    for pid in range(gm * gn):
        assert tuple(out[2 * pid:2 * pid + 2]) == swizzle_ref(pid // gn, pid % gn, gm, gn, g)
        assert out[2 * gm * gn + pid] == int(pid * 0.5)
