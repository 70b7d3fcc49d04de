"""Load the example scripts (examples/*.py, examples/dsl/*.py) as modules, for the suites that
run them (a uniquely named module, importable from every test folder)."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_example(folder: Path, name: str) -> ModuleType:
    """``folder/name.py`` under a private module name (several folders hold scripts of the
    same names); its helper module (example_common, dsl_common) is found through sys.path, as
    the script finds it when run."""
    key = f"_example_{folder.name}_{name}"
    if key not in sys.modules:
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
        spec = importlib.util.spec_from_file_location(key, folder / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]
