"""The random-program generator against the ISS: programs are valid (never fault, unless a
fault is injected on purpose), are reproducible from their seed, exercise every feature,
and the coverage model sees every opcode. Runs without Verilator."""

from __future__ import annotations

import pytest
from simtgpu.verification.coverage import CoverageModel, fp_class, int_class, mask_class
from simtgpu.verification.launch import run_iss
from simtgpu.verification.random_programs import WILD_EDITS, GenOptions, generate, random_launch

SHAPES = [(4, 2), (8, 4), (32, 8)]


def test_same_seed_same_program():
    a, b = generate(11, 8, 4), generate(11, 8, 4)
    assert a.source == b.source and a.grid == b.grid and a.block == b.block
    assert generate(12, 8, 4).source != a.source


@pytest.mark.parametrize("lanes,warps", SHAPES)
def test_random_programs_never_fault(lanes, warps):
    features = set()
    for seed in range(20):
        launch = random_launch(seed, lanes, warps)
        run = run_iss(launch, lanes, 1 << 20)
        assert run.fault is None, f"seed {seed} ({lanes}x{warps}): {run.fault}"
        assert run.trace, f"seed {seed}: nothing retired"
        features |= set(launch.note.split(","))
    assert {"if", "ifelse", "loop", "bar", "atom", "atoms", "shfl", "vote", "exit", "ldg",
            "stg", "lds", "sts", "sfu", "guard"} <= features


def test_classifiers():
    assert [int_class(v) for v in (0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 5, 0x12345678)] \
        == ["zero", "one", "minus_one", "int_min", "int_max", "small", "large"]
    assert [fp_class(v) for v in (0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 1,
                                  0x3F800000)] == ["+0", "-0", "+inf", "-inf", "nan",
                                                   "denormal", "normal"]
    assert [mask_class(m, 8) for m in (0xFF, 0, 0x10, 0x0F, 0xF0, 0x55, 0x13)] == \
        ["full", "none", "single", "low_half", "high_half", "alternating", "other"]


def test_coverage_of_random_programs_on_the_iss():
    cov = CoverageModel("iss_test")
    for lanes, warps in SHAPES[:2]:
        for seed in range(60):
            launch = random_launch(1000 + seed, lanes, warps)
            cov.sample(launch, run_iss(launch, lanes, 1 << 20).trace, lanes)
    assert cov.percent("opcode") == 100.0, cov.holes("opcode")
    assert cov.percent("hazard_distance") == 100.0, cov.holes("hazard_distance")
    assert cov.percent("divergence_depth") >= 80.0, cov.holes("divergence_depth")
    assert cov.percent("mask") == 100.0, cov.holes("mask")


def test_generator_leaves_out_exactly_what_the_rtl_lacks():
    from simtgpu.rtl.core import ABSENT_INSTRUCTIONS
    from simtgpu.verification.random_programs import NOT_GENERATED

    assert NOT_GENERATED == ABSENT_INSTRUCTIONS


def test_injected_faults_reach_every_cause():
    """``GenOptions(fault=True)``: one thread's faulting code is injected into the program
    its seed gives (the rest unchanged); over a few dozen seeds the ISS raises every fault
    a kernel can raise in one warp, and some programs do not fault (the thread is gone or on
    the other side of a branch)."""
    causes = set()
    unfaulted = 0
    for seed in range(80):
        plain = generate(seed, 4, 2).source.splitlines()
        launch = random_launch(seed, 4, 2, GenOptions(fault=True))
        lines = launch.source.splitlines()
        added = len(lines) - len(plain)
        at = lines.index("       isetp.eq p5, r1, r24") - 1  # after "movi r24, <thread>"
        assert lines[:at] + lines[at + added:] == plain, f"seed {seed}: more than an insertion"
        run = run_iss(launch, 4, 1 << 20)
        if run.fault is None:
            unfaulted += 1
        else:
            causes.add(run.fault.cause.name)
    assert causes >= {"OUT_OF_RANGE", "MISALIGNED", "ILLEGAL_INSTRUCTION", "DIVERGENT_BARRIER",
                      "DIVERGENT_MMA", "STACK_UNDERFLOW"}, causes
    assert 0 < unfaulted < 40


def test_wild_programs_leave_the_rules_in_one_warp():
    """``GenOptions(wild=True)``: control-flow edits outside the generator's rules (a deleted
    or doubled ``ssy``/``sync``, an inverted forward branch, an inserted ``exit``, ``bar`` or
    ``sync``), each program in one block of one warp. On the ISS some still end normally and
    others underflow the stack or reach ``bar`` diverged; a seed gives one program."""
    opts = GenOptions(wild=True)
    opts.max_blocks = 1
    outcomes, edits = set(), set()
    for seed in range(60):
        launch = random_launch(seed, 4, 1, opts)
        assert launch.grid == (1, 1, 1) and launch.block[0] * launch.block[1] <= 4
        assert launch.source != random_launch(seed, 4, 1).source
        edits |= {f for f in launch.note.split(",") if f.startswith("wild_")}
        run = run_iss(launch, 4, 1 << 20, trace=False, instruction_budget=100_000)
        outcomes.add(run.fault.cause.name if run.fault else None)
    assert random_launch(3, 4, 1, opts).source == random_launch(3, 4, 1, opts).source
    assert len(edits) == len(WILD_EDITS), edits
    assert {None, "STACK_UNDERFLOW", "DIVERGENT_BARRIER"} <= outcomes, outcomes
