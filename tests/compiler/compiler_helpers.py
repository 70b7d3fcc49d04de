"""Helpers shared by the compiler tests (a uniquely named module, importable from them)."""

import importlib.util
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "dsl"


def example(name: str):
    """Load examples/dsl/NAME.py under a private module name (other suites load scripts of
    the same names from examples/); its helper dsl_common is found through sys.path."""
    key = f"_dsl_example_{name}"
    if key not in sys.modules:
        if str(EXAMPLES) not in sys.path:
            sys.path.insert(0, str(EXAMPLES))
        spec = importlib.util.spec_from_file_location(key, EXAMPLES / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]
