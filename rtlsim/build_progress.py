"""Progress of a Verilator model build, on stderr: one line per stage with its elapsed time.

A model build runs for minutes (Verilog export, verilate, C++ compile, and for the
profile-guided models a training run and a second compile); the user should see which stage
is running, how long each took, and where its log is. On a terminal the running stage's line
counts up its seconds in place; in a log file (not a terminal) each stage is one line written
when it ends, so CI logs get no progress spam::

    rtl model small: building (profile-guided: 5 stages); log build/verilator/small-....log
    rtl model small: [1/5] Verilog export              11.2 s
    rtl model small: [2/5] verilate                     6.0 s
    ...
    rtl model small: ready after 4 min 41 s: build/verilator/small-<hash>/Vharness_run
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["BuildProgress", "format_seconds"]


def format_seconds(s: float) -> str:
    """``12.3 s`` below a minute, ``4 min 41 s`` above."""
    return f"{s:.1f} s" if s < 60 else f"{int(s // 60)} min {int(s % 60)} s"


class BuildProgress:
    """Reports the stages of one model build.

    Parameters
    ----------
    name:
        What is built (``rtl model small``), the prefix of every line.
    stages:
        How many stages the build will have (for the ``[i/n]`` counter).
    stream:
        Where to write (default ``sys.stderr``); live updates only when it is a terminal.
    """

    def __init__(self, name: str, stages: int, stream: TextIO | None = None):
        self.name, self.stages, self.done = name, stages, 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.monotonic()

    def say(self, text: str) -> None:
        print(f"{self.name}: {text}", file=self.stream, flush=True)

    @contextmanager
    def stage(self, what: str) -> Iterator[None]:
        """Time the body as the next stage; its line says FAILED when the body raises."""
        self.done += 1
        label = f"[{self.done}/{self.stages}] {what:<28}"
        start = time.monotonic()
        stop = threading.Event()
        ticker = None
        if self.tty:
            def tick() -> None:
                while not stop.wait(1.0):
                    self.stream.write(f"\r{self.name}: {label} "
                                      f"{format_seconds(time.monotonic() - start)} ...")
                    self.stream.flush()
            self.stream.write(f"{self.name}: {label} ...")
            self.stream.flush()
            ticker = threading.Thread(target=tick, daemon=True)
            ticker.start()
        ok = False
        try:
            yield
            ok = True
        finally:
            stop.set()
            if ticker is not None:
                ticker.join()
            took = format_seconds(time.monotonic() - start)
            line = f"{self.name}: {label} {took:>10}" + ("" if ok else "  FAILED")
            if self.tty:
                self.stream.write(f"\r{line}\x1b[K\n")
                self.stream.flush()
            else:
                print(line, file=self.stream, flush=True)

    def finish(self, text: str) -> None:
        self.say(f"ready after {format_seconds(time.monotonic() - self.t0)}: {text}")
