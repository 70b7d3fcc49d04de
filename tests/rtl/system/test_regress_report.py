"""``make regress`` reporting: progress lines, the summary, and a reproduction command that
really reruns the failing program.

A failure is injected by content, not by seed: the patched check flags whichever program has
the code of random program TARGET. The printed ``reproduce:`` command is then parsed and run;
it must regenerate that same program (and so fail again, alone). Nothing here needs the RTL.
"""

from __future__ import annotations

import shlex

import pytest
from simtgpu.verification import regress
from simtgpu.verification.harness import reproduce_command, rtl_config
from simtgpu.verification.launch import run_iss as real_run_iss
from simtgpu.verification.random_programs import random_launch

SEED, COUNT, TARGET = 500, 12, 507


def _target_code(config: str) -> bytes:
    cfg = rtl_config(config)
    return random_launch(TARGET, cfg.lanes, cfg.warps).code


def _argv(command: str) -> list[str]:
    """The regress arguments of a printed command (environment and interpreter dropped)."""
    words = shlex.split(command)
    return words[words.index("simtgpu.verification.regress") + 1:]


@pytest.fixture
def inject_iss_fault(monkeypatch):
    code = _target_code("tiny")
    seen: list[int] = []

    def run_iss(launch, *args, **kwargs):
        run = real_run_iss(launch, *args, **kwargs)
        seen.append(launch.seed)
        if launch.code == code:
            run.fault = "injected fault"
        return run

    monkeypatch.setattr(regress, "run_iss", run_iss)
    return seen


def test_progress_summary_and_reproduction_of_an_injected_failure(inject_iss_fault, capsys):
    rc = regress.main(["--iss-only", "--config", "tiny", "--seed", str(SEED), "--count",
                       str(COUNT), "--batch", "5"])
    out, err = capsys.readouterr()
    assert rc == 1
    progress = [ln for ln in err.splitlines() if ln.startswith("regress tiny (ISS only): ")]
    assert [ln.split(": ")[1].split(" programs")[0] for ln in progress] == ["5/12", "10/12",
                                                                           "12/12"]
    assert "0 mismatches" in progress[0] and "1 mismatch," in progress[-1]
    assert "programs/s" in progress[-1]
    assert "total: 12 programs, 1 failures" in out
    fails = [ln for ln in out.splitlines() if ln.startswith("FAIL [tiny] ")]
    assert len(fails) == 1 and f"seed {TARGET}:" in fails[0]
    command = next(ln.split("reproduce: ", 1)[1] for ln in out.splitlines()
                   if "reproduce: " in ln)
    assert command == regress.iss_reproduce_command("tiny", TARGET)

    inject_iss_fault.clear()
    assert regress.main(_argv(command)) == 1  # the same program, alone, fails again
    out = capsys.readouterr().out
    assert inject_iss_fault == [TARGET]
    assert "total: 1 programs, 1 failures" in out and f"seed {TARGET}:" in out


def test_a_clean_run_passes(capsys):
    assert regress.main(["--iss-only", "--config", "tiny", "--seed", "3", "--count", "4"]) == 0
    out, err = capsys.readouterr()
    assert out.rstrip().endswith("PASS") and "4/4 programs, 0 mismatches" in err


def test_rtl_reproduce_command_regenerates_the_program(monkeypatch, capsys):
    """The RTL path's command (verification.harness.reproduce_command) names the seed and
    configuration that regenerate exactly the failing program."""
    captured = []
    monkeypatch.setattr(regress, "run_iss", lambda ln, *a, **k: captured.append(ln)
                        or real_run_iss(ln, *a, **k))
    for config in ("tiny", "small"):
        cfg = rtl_config(config)
        failing = random_launch(TARGET, cfg.lanes, cfg.warps)
        args = _argv(reproduce_command(cfg, failing))
        assert "--iss-only" not in args
        captured.clear()
        assert regress.main([*args, "--iss-only"]) == 0
        capsys.readouterr()
        assert [ln.code for ln in captured] == [failing.code]
        assert [ln.buffers.keys() for ln in captured] == [failing.buffers.keys()]


def test_rtl_reproduce_command_keeps_the_run_settings():
    """A failure of a run with faults injected, wild edits, a memory setting or the caches
    switched names them in its command, so the command regenerates the same program and
    runs it the same way."""
    from simtgpu.verification.random_programs import GenOptions

    cfg = rtl_config("tiny")
    plain = reproduce_command(cfg, random_launch(TARGET, cfg.lanes, cfg.warps))
    assert plain.endswith(f"--seed {TARGET} --count 1")
    opts = GenOptions(fault=True, wild=True)
    edited = random_launch(TARGET, cfg.lanes, 1, opts)
    slow = cfg.with_(memory=cfg.gpu.with_memory("realistic").memory).with_caches(False, False)
    args = _argv(reproduce_command(slow, edited))
    assert args[args.index("--memory") + 1] == "realistic"
    assert args[args.index("--l1") + 1] == "off" and args[args.index("--l2") + 1] == "off"
    assert "--faults" in args and "--wild" in args


@pytest.mark.parametrize("fault", [False, True])
def test_an_independent_programs_reproduce_command_regenerates_it(monkeypatch, capsys, fault):
    """A failing program of the independent generator (indep_programs.py) names it in its
    command (``--generator indep``, with ``--faults`` for a faulting one), which regenerates
    exactly that program through the regression."""
    from simtgpu.verification.indep_programs import indep_launch

    captured = []
    monkeypatch.setattr(regress, "run_iss", lambda ln, *a, **k: captured.append(ln)
                        or real_run_iss(ln, *a, **k))
    cfg = rtl_config("tiny")
    failing = indep_launch(TARGET, cfg.lanes, cfg.warps, cfg.cores, fault, cfg.shared_bytes)
    args = _argv(reproduce_command(cfg, failing))
    assert args[args.index("--generator") + 1] == "indep"
    assert ("--faults" in args) == fault
    regress.main([*args, "--iss-only"])  # (a faulting program fails the ISS-only check)
    capsys.readouterr()
    assert [ln.code for ln in captured] == [failing.code]
    assert [ln.grid for ln in captured] == [failing.grid]


def test_the_indep_generator_takes_no_wild_edits():
    with pytest.raises(SystemExit):
        regress.main(["--generator", "indep", "--wild", "--config", "tiny", "--count", "1"])
