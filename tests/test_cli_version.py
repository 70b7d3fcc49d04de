"""``simtgpu --version`` names the installed distribution's version."""

from __future__ import annotations

from importlib.metadata import version

import pytest
from simtgpu.cli.main import main


def test_version_matches_the_installed_distribution(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"simtgpu {version('simtgpu')}"
