"""The pyuvm environment (verification/uvm_env.py): host and memory agents, retire monitor,
ISS scoreboard and coverage, on random programs on the RTL GPU."""

from __future__ import annotations

from simtgpu.verification.harness import run_uvm


def test_uvm_random_launches():
    res = run_uvm("tiny", seed=5001, count=12, run_name="uvm_tiny")
    assert res["launches"] == 12
    assert res["retired"] > 0
    bad = [f"seed {s}: {v}" for s, v in res["verdicts"] if v is not None]
    assert len(res["verdicts"]) == 12
    assert not bad, "\n".join(bad)
    assert "| opcode |" in res["coverage"]
