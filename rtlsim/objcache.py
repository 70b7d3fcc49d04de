"""A compiler wrapper that compiles Verilator's runtime once per set of flags.

Every Verilator build compiles the runtime it links (``verilated.cpp``, ``verilated_vpi.cpp``,
``verilated_threads.cpp``, ``verilated_dpi.cpp`` ...) into its own folder: about 22 s of
g++ per build, most of each small unit model's build (the regression's twenty unit models
took about 830 s one after another; 252 s through this cache). Verilator's make rules put
``$(OBJCACHE)`` before the compiler; :func:`simtgpu.rtlsim.verilator.verilator_env` sets it
to this script.

An object is reused only when everything that makes it is the same: the compiler's version,
its arguments (the output name aside) and the source after preprocessing, so a header of the
model that a runtime file includes (cocotb's ``verilator.cpp`` includes ``Vtop.h``) is part
of the key. Only sources outside the build folder are cached (the model's own files are new
with every design) and never a profile-instrumented or profile-guided compile, whose object
names its profile's path. Anything else is run unchanged.

Run as a script by make (``OBJCACHE="python objcache.py"``), so it imports nothing of the
project: ``$SIMTGPU_OBJCACHE`` names the cache folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ENV = "SIMTGPU_OBJCACHE"
"""The environment variable that names the cache folder (unset: nothing is cached)."""


def cacheable(args: list[str], cwd: Path) -> Path | None:
    """The object of a compile this wrapper may cache, or None: ``-c -o X.o S.cpp`` of a
    source outside ``cwd`` with no profile options."""
    if "-c" not in args or "-o" not in args or any(a.startswith("-fprofile") for a in args):
        return None
    i = args.index("-o")
    if i + 1 >= len(args):
        return None
    obj = Path(args[i + 1])
    sources = [a for a in args if a.endswith((".cpp", ".cc", ".c")) and not a.startswith("-")]
    if len(sources) != 1 or obj.suffix != ".o":
        return None
    src = (cwd / sources[0]).resolve()
    if src.is_relative_to(cwd.resolve()):
        return None
    return obj


def _key(args: list[str], obj: Path) -> str | None:
    """The cache key of a compile, or None when its preprocessing fails (the compile is then
    run as it is, to report the error)."""
    i = args.index("-o")
    rest = args[:i] + args[i + 2:]  # the output name is not part of what is made
    pre = [a for a in rest if a not in ("-MMD", "-MD", "-c")]
    res = subprocess.run([*pre, "-E"], capture_output=True)
    if res.returncode != 0:
        return None
    version = subprocess.run([args[0], "--version"], capture_output=True).stdout
    h = hashlib.sha256()
    for part in (version, "\0".join(rest).encode(), obj.name.encode(), res.stdout):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:24]


def _copy(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` through a temporary name, so no reader sees half a file."""
    fd, tmp = tempfile.mkstemp(dir=dst.parent, prefix=dst.name + ".")
    os.close(fd)
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def main(args: list[str]) -> int:
    """Compile ``args`` (a compiler command) through the cache; the compiler's exit status."""
    folder = os.environ.get(ENV)
    cwd = Path.cwd()
    found = cacheable(args, cwd) if folder else None
    key = _key(args, found) if found else None
    if key is None:
        return subprocess.run(args).returncode
    obj = cwd / found
    dep = obj.with_suffix(".d")
    cached = Path(folder) / key
    try:
        if (cached / "obj").exists():
            _copy(cached / "obj", obj)
            if (cached / "dep").exists():
                _copy(cached / "dep", dep)
            return 0
    except OSError:
        pass  # an entry that cannot be read: compile instead
    rc = subprocess.run(args).returncode
    if rc == 0:
        try:
            cached.mkdir(parents=True, exist_ok=True)
            if dep.exists():
                _copy(dep, cached / "dep")
            _copy(obj, cached / "obj")  # last: its presence says the entry is whole
        except OSError:
            pass  # a cache that cannot be written costs the next build a compile, no more
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
