"""Helpers shared by the compiler tests (a uniquely named module, importable from them)."""

import importlib
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "dsl"


def example(name: str):
    """Import examples/dsl/NAME.py (the examples import their 'dsl_common' helper)."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module(name)
