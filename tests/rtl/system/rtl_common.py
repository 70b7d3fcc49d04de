"""Shared pieces of the RTL suites: the configurations every suite runs on, and a cache so
each configuration's directed launches run in one simulator process per pytest worker."""

from __future__ import annotations

import os

CONFIGS = tuple(os.environ.get("SIMTGPU_RTL_CONFIGS", "tiny,small").split(","))
"""RTL configurations of the suites (``SIMTGPU_RTL_CONFIGS=tiny`` for a quicker run)."""

RANDOM_PER_CONFIG = int(os.environ.get("SIMTGPU_RANDOM_PROGRAMS", "100"))
"""Random programs per configuration in ``make test`` (at least 200 over two configs)."""

RANDOM_SEED = int(os.environ.get("SIMTGPU_SEED", "1"))
