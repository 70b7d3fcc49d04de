"""Project-wide pytest options.

Long random RTL regressions are marked ``regress`` and only run when asked for
(``make regress N=... SEED=...`` passes ``-m regress`` and the options below).
"""

import os

import pytest

# The regression builds only tiny's model profile-guided (the path stays tested): small's
# instrumented compile and training cost the regression more CPU than its faster model saves
# there (docs/verification.md). Set SIMTGPU_RTL_PGO to choose otherwise.
os.environ.setdefault("SIMTGPU_RTL_PGO", "tiny")

LONG = os.environ.get("SIMTGPU_LONG", "") not in ("", "0")
"""``SIMTGPU_LONG=1``: tests marked ``long`` (minutes each) join the run."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--regress-n", type=int, default=2000,
                     help="number of random programs in a long regression")
    parser.addoption("--regress-seed", type=int, default=1,
                     help="base seed of a long regression")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "regress: long random regression (make regress)")
    config.addinivalue_line("markers", "slow: slower test, still part of make test")
    config.addinivalue_line("markers", "long: minutes each; runs only with SIMTGPU_LONG=1")
    config.addinivalue_line("markers", "fuzz: a fuzz target (a sample in make test; make fuzz "
                            "runs 100,000 inputs each)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not LONG:  # deselected, not skipped, as the regress runs below
        long_runs = [item for item in items if "long" in item.keywords]
        if long_runs:
            config.hook.pytest_deselected(items=long_runs)
            items[:] = [item for item in items if "long" not in item.keywords]
    if "regress" in (config.getoption("-m") or ""):
        return
    # Deselected, not skipped: a skip is reserved for absent hardware.
    long_runs = [item for item in items if "regress" in item.keywords]
    if long_runs:
        config.hook.pytest_deselected(items=long_runs)
        items[:] = [item for item in items if "regress" not in item.keywords]
