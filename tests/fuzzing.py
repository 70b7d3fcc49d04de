"""Budgets for the fuzz targets (Hypothesis), shared by every suite that has one.

``make test`` runs each target on a sample (the ``examples`` a test asks for); ``make fuzz``
sets ``SIMTGPU_FUZZ_EXAMPLES`` (100,000 by default) and runs only the tests marked ``fuzz``,
with a 5 s deadline per input, so that a hang is a failure and not a slow run. Hypothesis
prints the seed and a ``@reproduce_failure`` blob for any failing input; ``make fuzz SEED=N``
repeats a run.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

FUZZ_EXAMPLES = int(os.environ.get("SIMTGPU_FUZZ_EXAMPLES", "0") or 0)
HANG_MS = 5000


def fuzz_settings(examples: int) -> settings:
    """Settings of a fuzz target that runs ``examples`` inputs in ``make test``."""
    if FUZZ_EXAMPLES:
        return settings(max_examples=FUZZ_EXAMPLES, deadline=HANG_MS, database=None,
                        suppress_health_check=list(HealthCheck))
    return settings(max_examples=examples, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


def fuzz_target(examples: int):
    """Decorator: mark a Hypothesis test as a fuzz target with its ``make test`` sample size
    (apply it above ``@given``)."""
    def wrap(test):
        return pytest.mark.fuzz(fuzz_settings(examples)(test))
    return wrap
