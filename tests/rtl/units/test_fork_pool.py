"""The forked pool that converts the Verilog export's modules side by side
(rtlsim/fork_pool.py): results come back by key whatever the order the children finish in, a
child's exception is raised in the parent, a child that dies without a result is reported, and
with one job nothing is forked."""

import io
import os
import sys
import threading
import time

import pytest
from simtgpu.rtlsim.fork_pool import ChildFailed, ForkPool, JobsError, default_jobs


def _square_slowly(item: tuple[int, float]) -> tuple[int, int]:
    n, delay = item
    time.sleep(delay)
    return n * n, os.getpid()


def test_results_by_key_with_children_finishing_out_of_order():
    # the first item takes longest: the others finish before it
    items = [(n, 0.3 if n == 0 else 0.0) for n in range(6)]
    with ForkPool(_square_slowly, 2) as pool:
        for n, item in enumerate(items):
            pool.submit(f"k{n}", item)
        got = pool.results()
    assert {k: v[0] for k, v in got.items()} == {f"k{n}": n * n for n in range(6)}
    assert os.getpid() not in {pid for _, pid in got.values()}


def test_one_job_runs_here_in_submission_order():
    order = []

    def record(item: int) -> int:
        order.append(item)
        return os.getpid()

    with ForkPool(record, 1) as pool:
        for n in (3, 1, 2):
            pool.submit(n, n, size=n)  # sizes matter only to the order children start in
        got = pool.results()
    assert order == [3, 1, 2] and set(got.values()) == {os.getpid()}


def test_the_largest_waiting_item_starts_first():
    def when(item: str) -> float:
        return time.monotonic()

    with ForkPool(when, 2) as pool:
        pool.limit = 1  # one child at a time, so the start order is the order of the times
        for name, size in (("small", 1), ("large", 50), ("middle", 10)):
            pool.submit(name, name, size=size)
        got = pool.results()
    started = sorted(got, key=got.get)
    # "small" was alone when it was submitted, so it started at once; then the largest first
    assert started == ["small", "large", "middle"]


def _fail(item: int) -> int:
    if item == 2:
        raise ValueError(f"item {item} is bad")
    return item


def _run(fn, items, jobs: int = 2) -> dict:
    # a failure is raised where the pool first sees it: in a later submit or in results
    with ForkPool(fn, jobs) as pool:
        for key, item in items:
            pool.submit(key, item)
        return pool.results()


def test_a_childs_exception_is_raised_in_the_parent():
    with pytest.raises(ValueError, match="item 2 is bad"):
        _run(_fail, [(n, n) for n in range(4)])


def _die(item: int) -> int:
    if item == 1:
        os._exit(3)
    return item


def test_a_child_that_dies_without_a_result_is_reported():
    with pytest.raises(ChildFailed, match="'item1': its child ended without a result"):
        _run(_die, [(f"item{n}", n) for n in range(3)])


def _unpicklable(item: int):
    return lambda: item


def test_a_result_that_does_not_pickle_is_reported():
    with pytest.raises(ChildFailed, match="result does not pickle\nfunction: <function"):
        _run(_unpicklable, [(0, 0), (1, 1)])


def test_the_jobs_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("SIMTGPU_EXPORT_JOBS", "3")
    assert default_jobs() == 3
    for bad in ("two", "0"):
        monkeypatch.setenv("SIMTGPU_EXPORT_JOBS", bad)
        with pytest.raises(JobsError, match="SIMTGPU_EXPORT_JOBS must"):
            default_jobs()
    monkeypatch.delenv("SIMTGPU_EXPORT_JOBS")
    assert default_jobs() >= 1


def _print(item: int) -> int:
    print(f"out {item}")
    print(f"err {item}", file=sys.stderr)
    return item


class _HeldStream(io.StringIO):
    """A stream whose lock is held, as another thread in the middle of a write holds it."""

    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()
        self.lock.acquire()

    def write(self, text: str) -> int:
        with self.lock:
            return super().write(text)


def test_a_child_prints_through_streams_of_its_own(capfd, monkeypatch):
    """A child that wrote through the parent's stream objects would wait forever on a lock
    another thread held at the fork; it writes through fresh ones on descriptors 1 and 2."""
    monkeypatch.setattr(sys, "stdout", _HeldStream())
    monkeypatch.setattr(sys, "stderr", _HeldStream())
    with ForkPool(_print, 2) as pool:
        # a child stuck on the lock is killed after 20 s: the test fails instead of hanging
        watchdog = threading.Timer(20, lambda: [os.kill(p, 9) for p in list(pool._running)])
        watchdog.start()
        try:
            for n in range(2):
                pool.submit(n, n)
            got = pool.results()
        finally:
            watchdog.cancel()
    out, err = capfd.readouterr()
    assert got == {0: 0, 1: 1}
    assert sorted(line for line in out.splitlines() if line.startswith("out")) == [
        "out 0", "out 1"]
    assert sorted(line for line in err.splitlines() if line.startswith("err")) == [
        "err 0", "err 1"]
