"""The layers import downwards only, and no two modules import each other.

The graph is read from the source (every ``import`` that runs, at module level or inside a
function; ``if TYPE_CHECKING:`` blocks are left out because they never run), over the packages
in the repository: folder ``X/`` is ``simtgpu.X`` (``simtgpu_pkg/`` is ``simtgpu`` itself), as
pyproject.toml's package-dir maps them. docs/architecture.md draws the same layers.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# What each part may import (besides itself). Everything not listed is forbidden, so a new
# edge is a decision that this table (and docs/architecture.md) must record.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "isa": {"errors"},
    "arch": {"errors", "isa"},
    "assembler": {"errors", "isa"},
    "sim": {"errors", "isa", "assembler"},
    "rtl": {"errors", "isa", "arch", "sim"},
    "rtlsim": {"errors", "isa", "arch", "assembler", "sim", "rtl"},
    "driver_model": {"errors", "isa", "arch", "assembler", "sim", "rtl", "rtlsim"},
    "compiler_backend": {"errors", "isa", "arch", "assembler", "sim", "driver_model"},
    "verification": {"errors", "isa", "arch", "assembler", "sim", "rtl", "rtlsim",
                     "driver_model", "compiler_backend"},
    "cli": {"errors", "isa", "arch", "assembler", "sim", "rtl", "rtlsim", "driver_model",
            "compiler_backend", "verification"},
}


@functools.cache
def _modules() -> dict[str, Path]:
    """``simtgpu.<part>.<module>`` -> file, for every package folder of the repository."""
    folders = {("simtgpu" if d.name == "simtgpu_pkg" else f"simtgpu.{d.name}"): d
               for d in ROOT.iterdir() if (d / "__init__.py").is_file()}
    return {pkg if f.stem == "__init__" else f"{pkg}.{f.stem}": f
            for pkg, folder in folders.items() for f in sorted(folder.glob("*.py"))}


def _runtime_nodes(tree: ast.AST):
    """Every node except those under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def _imports(name: str, path: Path) -> set[str]:
    """Names a module imports, made absolute (``from .x import y`` gives ``pkg.x`` and
    ``pkg.x.y``: y may be a module or an attribute)."""
    is_pkg = path.stem == "__init__"
    out: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")[: len(name.split(".")) - (0 if is_pkg else 1)]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


@functools.cache
def _graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        targets = set()
        for imp in _imports(name, path):
            while imp and imp not in mods:
                imp = imp.rpartition(".")[0]
            # importing a module always runs its parent packages first: not an edge
            if imp and imp != name and not name.startswith(imp + "."):
                targets.add(imp)
        graph[name] = targets
    return graph


def _part(module: str) -> str:
    """The part a module belongs to; the modules of simtgpu_pkg/ itself (``simtgpu.errors``,
    ``simtgpu.paths``) are the base part, named "errors"."""
    part = module.split(".")[1] if module.count(".") else "errors"
    return "errors" if (ROOT / "simtgpu_pkg" / f"{part}.py").is_file() else part


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_every_part_is_in_the_layer_table_and_installed() -> None:
    parts = {_part(m) for m in _modules()}
    assert parts <= set(ALLOWED), f"add {sorted(parts - set(ALLOWED))} to ALLOWED"
    mapped = (ROOT / "pyproject.toml").read_text()
    missing = [p for p in parts - {"errors"} if f'"simtgpu.{p}" = "{p}"' not in mapped]
    assert not missing, f"pyproject.toml's package-dir does not map {missing}"


def test_layers_import_downwards_only() -> None:
    bad = sorted(f"{m} imports {t}" for m, ts in _graph().items() for t in ts
                 if _part(t) != _part(m) and _part(t) not in ALLOWED[_part(m)])
    assert not bad, "\n".join(bad)


def test_rtl_imports_nothing_above_it() -> None:
    # the rule, stated on its own so that a change to ALLOWED cannot drop it
    above = {"driver_model", "verification", "rtlsim", "compiler_backend", "cli"}
    bad = sorted(f"{m} imports {t}" for m, ts in _graph().items() if _part(m) == "rtl"
                 for t in ts if _part(t) in above)
    assert not bad, "\n".join(bad)


def test_no_import_cycles() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "modules that import each other: " + "; ".join(
        " <-> ".join(c) for c in cycles)


def test_the_checker_sees_edges_and_cycles() -> None:
    # the checker itself: a known edge is found, and a made-up cycle is reported
    assert "simtgpu.isa" in {t for t in _graph()["simtgpu.assembler.assembler"]} | {
        t.rpartition(".")[0] for t in _graph()["simtgpu.assembler.assembler"]}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
