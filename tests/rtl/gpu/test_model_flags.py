"""The model's CPU flags: ``-march=x86-64-v3`` only where the CPU has every feature of the
level (a model built with it would fault on a CPU without one)."""

from __future__ import annotations

import pytest
from simtgpu.rtl.configs import get_rtl_config
from simtgpu.rtlsim.verilator_runner import RtlSimError, _pgo_wanted, cpu_cflags, pgo_configs

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



@pytest.mark.parametrize("value,want", [
    ("1", None), ("", None), ("0", frozenset()),
    ("tiny", frozenset({"tiny"})), (" tiny, small ", frozenset({"tiny", "small"})),
])
def test_pgo_configs_from_the_environment(value: str, want) -> None:
    assert pgo_configs(value) == want


def test_pgo_configs_refuses_an_unknown_name() -> None:
    with pytest.raises(RtlSimError, match="'huge' is not a configuration"):
        pgo_configs("tiny,huge")


def test_pgo_only_for_the_configurations_allowed(monkeypatch) -> None:
    """A named configuration with a trainer is profile-guided where allowed; a traced or
    hierarchical build (full) never is."""
    def trainer(sim):
        return None

    tiny, small, full = (get_rtl_config(n) for n in ("tiny", "small", "full"))
    monkeypatch.setenv("SIMTGPU_RTL_PGO", "tiny")
    assert _pgo_wanted(tiny, None, trainer) and not _pgo_wanted(small, None, trainer)
    assert not _pgo_wanted(tiny, "fst", trainer) and not _pgo_wanted(tiny, None, None)
    monkeypatch.setenv("SIMTGPU_RTL_PGO", "1")
    assert _pgo_wanted(small, None, trainer) and not _pgo_wanted(full, None, trainer)
    monkeypatch.setenv("SIMTGPU_RTL_PGO", "0")
    assert not _pgo_wanted(tiny, None, trainer)
