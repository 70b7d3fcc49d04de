"""Run a function over items in forked children, a few at a time: the Verilog export's modules
are converted side by side, each as soon as it is elaborated (rtlsim/verilog_export.py).

The items are elaborated Amaranth fragments, which cannot be pickled, so the children must
inherit them: each child is a bare ``os.fork`` of this process that computes one item, writes
the pickled result to a file and leaves with ``os._exit``, touching no stream, lock or exit
handler it inherited (a ``multiprocessing`` worker flushes stdout on exit, which can hang on a
lock that another thread of the parent held at the moment of the fork): what it prints goes
through stream objects of its own on the same descriptors. Results must pickle.
Where ``fork`` does not exist, or ``jobs`` is 1, the items run here, one after another, when
the results are asked for.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Hashable
from typing import Any

from simtgpu.errors import SimtgpuError

__all__ = ["ChildFailed", "ForkPool", "JobsError", "default_jobs"]


class ChildFailed(RuntimeError):
    """A child died without a result, or raised an exception that does not pickle."""


class JobsError(SimtgpuError, ValueError):
    """``SIMTGPU_EXPORT_JOBS`` is not a whole number of at least 1."""


def default_jobs() -> int:
    """The processors this process may run on (``SIMTGPU_EXPORT_JOBS`` overrides; 1: none
    forked)."""
    env = os.environ.get("SIMTGPU_EXPORT_JOBS", "").strip()
    if env:
        try:
            jobs = int(env)
        except ValueError:
            raise JobsError(f"SIMTGPU_EXPORT_JOBS must be a whole number, not {env!r}") from None
        if jobs < 1:
            raise JobsError(f"SIMTGPU_EXPORT_JOBS must be at least 1, not {jobs}")
        return jobs
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class ForkPool:
    """``fn`` over the items :meth:`submit` gives it, in up to ``limit`` children at once; a
    free child slot takes the largest item waiting (``size``), so the longest starts early.
    Use as a context manager: leaving it kills children still running."""

    def __init__(self, fn: Callable[[Any], Any], jobs: int):
        self.fn = fn
        self.forking = jobs > 1 and hasattr(os, "fork")
        self.limit = jobs
        """Children at once; may change while the pool runs."""
        self._waiting: list[tuple[int, int, Hashable, Any]] = []  # (-size, order, key, item)
        self._running: dict[int, tuple[Hashable, str]] = {}  # pid: (key, result file)
        self._results: dict[Hashable, Any] = {}
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._submitted = 0

    def __enter__(self) -> ForkPool:
        if self.forking:
            self._tmp = tempfile.TemporaryDirectory(prefix="simtgpu-fork-")
        return self

    def __exit__(self, *exc) -> None:
        for pid in self._running:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        self._running.clear()
        if self._tmp is not None:
            self._tmp.cleanup()

    def submit(self, key: Hashable, item: Any, size: int = 0) -> None:
        """Queue ``fn(item)``, its result to be found under ``key``; start what the free
        slots allow, and take the results of children that are done (raising a failure
        among them here)."""
        self._waiting.append((-size, self._submitted, key, item))
        self._submitted += 1
        if self.forking:
            while self._reap(block=False):
                pass
            self._fill()

    def results(self) -> dict[Hashable, Any]:
        """Every submitted item's result, by key, once all are done. An exception ``fn``
        raised (in a child or here) is raised here, or by the :meth:`submit` that first
        saw it."""
        if not self.forking:
            for _, _, key, item in sorted(self._waiting, key=lambda w: w[1]):
                self._results[key] = self.fn(item)
            self._waiting.clear()
        while self._waiting or self._running:
            self._fill()
            self._reap(block=True)
        return self._results

    def _fill(self) -> None:
        self._waiting.sort(key=lambda w: w[:2])
        while self._waiting and len(self._running) < max(1, self.limit):
            _, number, key, item = self._waiting.pop(0)
            path = os.path.join(self._tmp.name, f"{number}.pickle")
            self._running[_fork(self.fn, item, path)] = (key, path)

    def _reap(self, block: bool) -> bool:
        """Take the result of one finished child (waiting for one if ``block``); False when
        none is done. Waits by pid: another part of this process may have children of its
        own to wait for."""
        while self._running:
            for pid in self._running:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
            else:
                if not block:
                    return False
                time.sleep(0.02)
                continue
            key, path = self._running.pop(pid)
            try:
                with open(path, "rb") as f:
                    ok, value = pickle.load(f)
            except (OSError, EOFError, pickle.UnpicklingError):
                raise ChildFailed(f"{key!r}: its child ended without a result "
                                  f"(wait status {status})") from None
            if not ok:
                raise value
            self._results[key] = value
            return True
        return False


def _fork(fn: Callable[[Any], Any], item: Any, path: str) -> int:
    with warnings.catch_warnings():
        # Python 3.12+ warns when a process with threads forks: the child here runs no other
        # thread's code and takes none of their locks
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        # fresh stream objects on the same descriptors: the inherited ones' locks may have
        # been held by another thread at the fork (a warning printed here would then hang)
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        try:
            outcome = (True, fn(item))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
            outcome = (False, exc)
        try:
            data = pickle.dumps(outcome)
        except Exception:  # noqa: BLE001 - the result or exception does not pickle
            text = ("".join(traceback.format_exception(outcome[1])) if not outcome[0]
                    else f"{type(outcome[1]).__name__}: {outcome[1]!r:.200}")
            data = pickle.dumps((False, ChildFailed(
                f"a child's {'result' if outcome[0] else 'exception'} does not pickle\n"
                f"{text}")))
        with open(path, "wb") as f:
            f.write(data)
        code = 0
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
