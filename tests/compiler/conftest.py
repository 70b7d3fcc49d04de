"""Fixtures for the compiler tests: a fresh ISS device as the current device."""

import pytest
from compiler_helpers import current_device


@pytest.fixture()
def iss_device():
    with current_device("iss") as dev:
        yield dev
