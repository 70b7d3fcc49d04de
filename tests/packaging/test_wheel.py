"""The distribution as a user gets it: the wheel holds what the tools need and nothing built.

The quick test builds the sdist and, from it, the wheel (``python -m build``, no network) out
of a copy of the source tree, and checks their contents. ``SIMTGPU_LONG=1`` also installs the
wheel into a fresh virtual environment (its dependencies come from the package index) and
runs ``simtgpu run`` there on the ISS and on the RTL (configuration ``tiny``) and the demo,
from a folder outside the checkout, and checks that nothing was written into site-packages.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Names that only a build makes: none may be in a distribution.
BUILD_PRODUCT = re.compile(
    r"(^|/)(build|\.venv|__pycache__|\.pytest_cache|\.hypothesis|sim_build|obj_dir)/"
    r"|\.(pyc|o|a|so|vcd|fst|sgo|ptx|gcda|lock)$|(^|/)Vharness|\.egg-info/")


def _package_folders() -> dict[str, Path]:
    """``simtgpu/<sub>`` in the wheel -> source folder, as pyproject.toml maps them."""
    text = (ROOT / "pyproject.toml").read_text()
    pairs = re.findall(r'"(simtgpu(?:\.[\w.]+)?)" = "([\w/]+)"', text)
    return {name.replace(".", "/"): ROOT / folder for name, folder in pairs}


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    """sdist and wheel built from a clean copy of the sources (no build/, no .venv)."""
    tmp = tmp_path_factory.mktemp("dist")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "__pycache__", ".pytest_cache", ".hypothesis", "*.egg-info",
        ".ruff_cache"))
    res = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir",
                          str(tmp / "out"), str(src)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return {"wheel": next((tmp / "out").glob("*.whl")),
            "sdist": next((tmp / "out").glob("*.tar.gz"))}


def test_wheel_holds_every_module_and_the_package_data(dists) -> None:
    names = set(zipfile.ZipFile(dists["wheel"]).namelist())
    want = set()
    for prefix, folder in _package_folders().items():
        want |= {f"{prefix}/{f.name}" for f in folder.glob("*.py")}
    want |= {"simtgpu/rtlsim/lint_waivers.vlt"}  # every Verilator build reads it
    want |= {f"simtgpu/examples/asm/{f.name}" for f in (ROOT / "examples" / "asm").glob("*.s")}
    assert len(want) > 100
    assert not want - names, f"missing from the wheel: {sorted(want - names)}"
    info = [n for n in names if not n.startswith("simtgpu/")]
    assert all(n.startswith("simtgpu-") and ".dist-info/" in n for n in info), info
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_no_build_products_in_the_distributions(dists) -> None:
    names = list(zipfile.ZipFile(dists["wheel"]).namelist())
    # (an sdist carries its own metadata as PKG-INFO and egg-info: that is not a product)
    names += [n for n in tarfile.open(dists["sdist"]).getnames() if ".egg-info/" not in n]
    bad = [n for n in names if BUILD_PRODUCT.search(n)]
    assert not bad, f"build products in the distributions: {bad[:10]}"


def test_metadata_license_and_extras(dists) -> None:
    wheel = zipfile.ZipFile(dists["wheel"])
    meta = wheel.read(next(n for n in wheel.namelist() if n.endswith("METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in meta
    assert "Author: simtgpu developers" in meta
    licence = wheel.read(next(n for n in wheel.namelist() if n.endswith("licenses/LICENSE")))
    assert b"Apache License" in licence and b"Version 2.0, January 2004" in licence
    extras = set(re.findall(r"^Provides-Extra: (\S+)$", meta, re.M))
    assert {"plot", "verify", "dev", "cuda"} <= extras
    core = re.findall(r"^Requires-Dist: ([A-Za-z0-9_-]+)[^;\n]*$", meta, re.M)
    assert {"numpy", "amaranth", "verilator", "platformdirs"} <= set(core)
    assert "matplotlib" not in core and "cocotb" not in core


@pytest.mark.long  # installs into a fresh venv from the package index
def test_installed_wheel_runs_iss_rtl_and_demo(dists, tmp_path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    res = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                          str(dists["wheel"])], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    site = Path(subprocess.run([str(py), "-c", "import simtgpu, os; print(os.path.dirname("
                                "simtgpu.__file__))"], capture_output=True, text=True,
                               check=True).stdout.strip())
    before = {p for p in site.rglob("*") if "__pycache__" not in p.parts}
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SIMTGPU_", "VIRTUAL_ENV", "PYTHON", "OBJCACHE"))}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    kernel = site / "examples" / "asm" / "vector_add.s"

    def run(*cmd: str) -> str:
        r = subprocess.run(list(cmd), cwd=work, env=env, capture_output=True, text=True)
        assert r.returncode == 0, f"{cmd}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        return r.stdout + r.stderr

    args = ["--kernel", "vector_add", "--grid", "8", "--block", "8", "--arg", "a=f32[64]:rand",
            "--arg", "b=f32[64]:rand", "--arg", "c=f32[64]:zeros", "--arg", "n=i32:64",
            "--print", "c[:4]", "--config", "tiny"]
    iss = run("simtgpu", "run", str(kernel), *args)
    rtl = run("simtgpu", "run", str(kernel), *args, "--backend", "rtl")
    c_line = [ln for ln in iss.splitlines() if ln.startswith("c[:4]")]
    assert c_line and c_line == [ln for ln in rtl.splitlines() if ln.startswith("c[:4]")]
    demo = run(str(py), "-m", "simtgpu.cli.demo", "--config", "tiny", "--size", "37")
    assert "RTL memory matches the ISS" in demo
    models = list((tmp_path / "cache" / "simtgpu" / "verilator").glob("tiny-*/Vharness_run"))
    assert len(models) == 2, models  # the untraced (profile-guided) and the traced model
    after = {p for p in site.rglob("*") if "__pycache__" not in p.parts}
    assert after == before, f"written into site-packages: {sorted(after - before)[:5]}"
