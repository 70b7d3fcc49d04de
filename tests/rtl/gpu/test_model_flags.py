"""The model's CPU flags: ``-march=x86-64-v3`` only where the CPU has every feature of the
level (a model built with it would fault on a CPU without one)."""

from __future__ import annotations

import pytest
from simtgpu.rtlsim.verilator_runner import cpu_cflags

ZEN = "fpu sse sse2 avx avx2 bmi1 bmi2 fma f16c abm movbe xsave avx512f"


@pytest.mark.parametrize("flags,want", [
    (ZEN, "-march=x86-64-v3"),
    (ZEN.replace(" bmi2", ""), ""),       # Intel Pentium/Celeron of that era: no BMI2
    ("fpu sse sse2 sse4_2 popcnt", ""),   # x86-64-v2 only
])
def test_cpu_cflags_from_cpuinfo(tmp_path, flags: str, want: str) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(f"processor\t: 0\nmodel name\t: test\nflags\t\t: {flags}\n\n"
                    f"processor\t: 1\nflags\t\t: {flags}\n")
    assert cpu_cflags(info) == want


def test_cpu_cflags_without_cpuinfo(tmp_path) -> None:
    """No /proc/cpuinfo (macOS, a sandbox): no flag, the portable build."""
    assert cpu_cflags(tmp_path / "absent") == ""

