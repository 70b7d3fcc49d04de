"""``make demo``: a first look at simtgpu in one command.

1. assemble examples/asm/vector_add.s and show the code: address, encoding, instruction;
2. run it through the driver on the golden simulator (ISS) and on the RTL (the Verilator
   model of the GPU, fed through the same command queue), with a ragged problem size so the
   last block has threads past the end;
3. compare each with NumPy and the RTL's memory with the ISS's, exiting 1 on a mismatch;
4. leave a waveform of the RTL run under build/demo/ (FST; simtgpu.paths.cache_dir outside
   a checkout) with a GTKWave save file and a Surfer command file that open the pipeline, and
   print how to open each;
5. leave behind both Verilator models of the configuration: the traced one of ``--waves`` and
   the untraced, profile-guided one that ``simtgpu run --backend rtl`` uses, and name them.

The first RTL run on a machine builds the models (minutes, each stage reported on stderr);
later runs reuse them.
"""

from __future__ import annotations

import argparse
import struct
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from simtgpu.assembler import ObjectFile, assemble_file, disassemble_word
from simtgpu.assembler.examples import EXAMPLES_ASM
from simtgpu.cli.argtypes import int_at_least, seed_type
from simtgpu.errors import SimtgpuError
from simtgpu.paths import cache_dir

ROOT = Path(__file__).resolve().parents[1]
KERNEL = EXAMPLES_ASM / "vector_add.s"

WAVES = cache_dir() / "demo" / "vector_add.fst"

# backend name -> extra step run after that backend's launch (args: device, result).
EXTRA_STEPS: dict[str, Callable[..., None]] = {}


def listing(obj: ObjectFile) -> list[str]:
    """Every code word as ``address  encoding  instruction``, labels on their own lines."""
    labels: dict[int, list[str]] = {}
    for sym in obj.symbols.values():
        if sym.section == "code":
            labels.setdefault(sym.offset, []).append(sym.name)
    for k in obj.kernels.values():
        labels.setdefault(k.entry, [])
        if k.name not in labels[k.entry]:
            labels[k.entry].insert(0, k.name)
    names = {addr: names[0] for addr, names in labels.items() if names}
    out = ["address  encoding  instruction"]
    for i, (word,) in enumerate(struct.iter_unpack("<I", obj.code)):
        pc = 4 * i
        for name in labels.get(pc, ()):
            out.append(f"{name}:")
        text = disassemble_word(word, pc, names)
        out.append(f"  {pc:04x}   {word:08x}  {text}{_param_note(obj, pc, text)}")
    return out


def _param_note(obj: ObjectFile, pc: int, text: str) -> str:
    """Name the parameter an ``ldparam`` reads (the encoding holds only its offset)."""
    if not text.startswith("ldparam"):
        return ""
    offset = int(text.rsplit(",", 1)[1])
    for k in obj.kernels.values():
        if k.entry <= pc < k.end:
            for p in k.params:
                if p.offset == offset:
                    return f"{'':<{max(1, 24 - len(text))}}; {p.name} ({p.type})"
    return ""


def run_on(backend: str, config: str, n: int, block: int, seed: int) -> np.ndarray | None:
    """Launch vector_add on ``backend``; its result when it matches NumPy, else None."""
    from simtgpu.driver_model import Device

    options = {"waves": WAVES} if backend == "rtl" else {}
    if backend == "rtl":
        print("\n(building or reusing the Verilator model of the GPU ...)", flush=True)
    dev = Device(backend=backend, config=config, **options)
    kernel = dev.load_module(KERNEL).kernel("vector_add")
    rng = np.random.default_rng(seed)
    a = rng.uniform(-10, 10, n).astype(np.float32)
    b = rng.uniform(-10, 10, n).astype(np.float32)
    d_a, d_b, d_c = dev.to_device(a), dev.to_device(b), dev.zeros(n, np.float32)
    grid = -(-n // block)
    print(f"\n== run on {backend} (config {config}: {dev.config.cores} cores, "
          f"{dev.config.warps_per_core} warps x {dev.config.lanes} lanes) ==")
    print(f"vector_add n={n}: grid {grid} x block {block} = {grid * block} threads, "
          f"{grid * block - n} past the end")
    res = dev.launch(kernel, grid=grid, block=block, args=(d_a, d_b, d_c, n))
    c = d_c.to_host()
    with np.printoptions(precision=4, suppress=True, linewidth=100):
        print(f"a[:6] = {a[:6]}")
        print(f"b[:6] = {b[:6]}")
        print(f"c[:6] = {c[:6]}")
    print(f"{res.instructions} warp-instructions, {res.thread_instructions} "
          f"thread-instructions in {res.wall_s * 1e3:.1f} ms")
    if backend in EXTRA_STEPS:
        EXTRA_STEPS[backend](dev, res)
    want = a + b
    same = np.array_equal(c.view(np.uint32), want.view(np.uint32))
    label = backend.upper() if backend != "cuda" else "CUDA"
    if same:
        print(f"{label} matches NumPy (all {n} elements bit-exact)")
    else:
        bad = np.flatnonzero(c.view(np.uint32) != want.view(np.uint32))
        print(f"{label} MISMATCH: {bad.size} of {n} elements differ, first at {bad[0]}: "
              f"got {c[bad[0]]}, expected {want[bad[0]]}")
    if backend == "rtl":
        if res.cycles:
            print(f"RTL: {res.cycles} cycles, {res.instructions / res.cycles:.2f} "
                  f"warp-instructions per cycle over {dev.config.cores} cores")
        dev.close()  # the model finishes the waveform file as it exits
        _show_waves()
    return c if same else None


def _show_waves() -> None:
    """Write the viewer layouts next to the waveform and say how to open it."""
    from simtgpu.verification.waves import open_dump, write_gtkw, write_surfer

    dump = open_dump(WAVES)
    gtkw, surfer = write_gtkw(dump), write_surfer(dump)
    w = _shown(WAVES)
    print(f"waveform: {w}  ({WAVES.stat().st_size:,} bytes, {len(dump.vars):,} signals; "
          "docs/waveforms.md)")
    print(f"  GTKWave:  gtkwave {w} {_shown(gtkw)}")
    print(f"  Surfer:   surfer {w} -c {_shown(surfer)}")
    print(f"  pipeline: simtgpu waves pipeline {w} -o {_shown(WAVES.with_suffix('.png'))} "
          f"--konata {_shown(WAVES.with_suffix('.kanata'))}")


def prepare_models(config: str) -> None:
    """Build (or reuse) the untraced, profile-guided model of ``config`` that ``simtgpu run
    --backend rtl`` starts, so that the next command does not build for minutes; name both
    models the demo leaves."""
    from simtgpu.driver_model.backend_rtl import train
    from simtgpu.rtlsim.verilator_runner import build_harness

    print("\n(building or reusing the untraced, profile-guided model that `simtgpu run "
          "--backend rtl` uses ...)", flush=True)
    fast = build_harness(config, trainer=train)
    traced = build_harness(config, trace=True)
    print(f"Verilator models of '{config}' ready for the next commands:\n"
          f"  {_shown(fast)}  (simtgpu run --backend rtl --config {config})\n"
          f"  {_shown(traced)}  (the same with --waves)")


def _shown(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="make demo", description=__doc__.splitlines()[0])
    p.add_argument("--backend", action="append", default=None,
                   help="backend to run on (repeatable; default iss)")
    p.add_argument("--config", default="small", help="GPU configuration (default small)")
    p.add_argument("--size", type=int_at_least(1, "the demo adds at least 1 element"),
                   default=1003, help="elements (default 1003, ragged)")
    p.add_argument("--seed", type=seed_type, default=0)
    args = p.parse_args(argv)
    try:
        obj = assemble_file(KERNEL)
        print(f"== {KERNEL.relative_to(ROOT)}: {len(obj.code) // 4} instructions ==")
        print("\n".join(listing(obj)))
        from simtgpu.driver_model import CONFIGS

        if args.config not in CONFIGS:
            raise SimtgpuError(f"unknown configuration '{args.config}' "
                               f"(known: {', '.join(CONFIGS)})")
        cfg = CONFIGS[args.config]
        block = cfg.max_threads_per_block
        if 3 * 4 * args.size > cfg.memory_bytes:  # a, b and c (the driver checks the rest)
            raise SimtgpuError(f"--size {args.size}: three arrays of {args.size} floats do not "
                               f"fit the {cfg.memory_bytes >> 20} MiB of configuration "
                               f"'{args.config}'")
        results = {b: run_on(b, args.config, args.size, block, args.seed)
                   for b in (args.backend or ["iss", "rtl"])}
        ok = all(r is not None for r in results.values())
        if ok and "iss" in results and "rtl" in results:
            same = np.array_equal(results["iss"].view(np.uint32), results["rtl"].view(np.uint32))
            print("\nRTL memory matches the ISS" if same else "\nRTL memory DIFFERS from the ISS")
            ok = same
        if ok and "rtl" in results:
            prepare_models(args.config)
    except SimtgpuError as e:
        print(e.render(), file=sys.stderr)
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
