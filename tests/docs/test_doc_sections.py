"""The generated sections of the docs: every BEGIN marker has its END, in order, and the
writer (``simtgpu.cli.bench.write_section``) finds each one where it is, so a rerun replaces
the section in place instead of appending a second copy at the end of the page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from simtgpu.cli.bench import read_section

DOCS = Path(__file__).resolve().parents[2] / "docs"
MARKER = re.compile(r"<!-- (BEGIN|END) SECTION ([a-z0-9-]+)")


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_section_markers_pair_up(page: Path) -> None:
    text = page.read_text()
    open_name = None
    names = []
    for m in MARKER.finditer(text):
        kind, name = m.groups()
        line = text.count("\n", 0, m.start()) + 1
        if kind == "BEGIN":
            assert open_name is None, f"{page.name}:{line}: {name} begins inside {open_name}"
            open_name = name
            names.append(name)
        else:
            assert open_name == name, f"{page.name}:{line}: END {name} closes {open_name}"
            open_name = None
    assert open_name is None, f"{page.name}: section {open_name} never ends"
    assert len(names) == len(set(names)), f"{page.name}: a section appears twice"
    # every marker stands on a line of its own: a BEGIN cut off at its start is not one
    for line_no, line in enumerate(text.splitlines(), 1):
        if "SECTION" in line and "-->" in line and not line.startswith("<!--"):
            if re.search(r"written by", line):
                pytest.fail(f"{page.name}:{line_no}: a section marker lost its start: {line!r}")
    for name in names:
        assert read_section(name, page) is not None, f"{page.name}: {name} is not found"
