"""The worker processes untrusted text is parsed in (issue 26): a worker that dies is an
answer, not the end of the run; limits are the operating system's, not only pre-checks."""

from __future__ import annotations

import os
import signal
import time

import pytest

from shapelint.core import sandbox
from shapelint.core.limits import OverTime, cpu_limit

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="workers need fork")


def double(x: int) -> int:
    return 2 * x


def crash() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


def spin_natively() -> None:
    # No Python-level timer here: only RLIMIT_CPU can stop it (as libcst's native parser).
    while True:
        pass


def allocate(mb: int) -> int:
    return len(bytearray(mb * 1024 * 1024))


def python_over_time() -> None:
    with cpu_limit(0.3):
        while True:
            pass


def fail() -> None:
    raise ValueError("a bug")


def crash_reading(path: str) -> str:
    """Reads ``path`` as a base module would be read; crashes there unless it is refused."""
    if sandbox.refused(path):
        return f"{path} refused"
    with sandbox.reading(path):
        crash()
    return "not reached"


def test_value_comes_back() -> None:
    assert sandbox.call(double, (21,), seconds=5) == 42


def test_a_crash_is_an_answer_and_the_next_call_gets_a_fresh_worker() -> None:
    with sandbox.session():
        died = sandbox.call(crash, (), seconds=5)
        assert died == sandbox.Died("crash", "signal 11, SIGSEGV")
        assert sandbox.call(double, (2,), seconds=5) == 4


def test_native_code_past_its_cpu_time_is_stopped_by_the_os() -> None:
    start = time.monotonic()
    died = sandbox.call(spin_natively, (), seconds=1)
    assert isinstance(died, sandbox.Died) and died.cause == "time"
    assert "SIGXCPU" in died.detail
    assert time.monotonic() - start < 60


def test_memory_past_the_limit_is_an_answer() -> None:
    died = sandbox.call(allocate, (400,), seconds=10, memory_mb=100)
    assert died == sandbox.Died("memory", "MemoryError")
    assert sandbox.call(allocate, (10,), seconds=10, memory_mb=100) == 10 * 1024 * 1024


def test_python_over_time_in_the_worker_is_raised_here() -> None:
    with pytest.raises(OverTime):
        sandbox.call(python_over_time, (), seconds=5)


def test_an_exception_in_the_worker_is_a_worker_error() -> None:
    with pytest.raises(sandbox.WorkerError, match="ValueError: a bug"):
        sandbox.call(fail, (), seconds=5)


def test_a_death_inside_a_noted_read_is_retried_with_that_file_refused() -> None:
    assert sandbox.call(crash_reading, ("base.py",), seconds=5).endswith("base.py refused")


def test_no_worker_outlives_its_session() -> None:
    with sandbox.session():
        sandbox.call(double, (1,), seconds=5)
        (worker,) = sandbox._WORKERS
        sandbox.call(double, (1,), seconds=5)
        assert (
            len(sandbox._WORKERS) == 1 and worker in sandbox._WORKERS
        )  # one warm worker answers the whole session
    assert not sandbox._WORKERS
    with pytest.raises(ChildProcessError):
        os.waitpid(worker.pid, os.WNOHANG)  # reaped


def test_pool_replaces_dead_workers_and_answers_every_item_in_order() -> None:
    calls = [(double, (i,), 5.0) for i in range(20)]
    calls[3] = (crash, (), 5.0)
    calls[11] = (crash, (), 5.0)
    calls[15] = (fail, (), 5.0)
    calls[17] = (crash_reading, ("x.py",), 5.0)
    start = time.monotonic()
    got = sandbox.run_pool(calls, 2)
    assert time.monotonic() - start < 60
    expected: list[object] = [2 * i for i in range(20)]
    expected[3] = expected[11] = sandbox.Died("crash", "signal 11, SIGSEGV")
    expected[15] = sandbox.Raised("ValueError: a bug")
    expected[17] = sandbox.call(crash_reading, ("x.py",), seconds=5)
    assert got == expected
    assert not sandbox._WORKERS


def test_pool_with_every_worker_dying_does_not_hang() -> None:
    start = time.monotonic()
    got = sandbox.run_pool([(crash, (), 5.0)] * 6, 3)
    assert got == [sandbox.Died("crash", "signal 11, SIGSEGV")] * 6
    assert time.monotonic() - start < 60


def test_a_worker_prints_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    assert sandbox.call(print, ("from the worker",), seconds=5) is None
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


def test_a_fork_that_fails_leaves_the_signal_mask_and_no_pipe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SIGINT is blocked around the fork; a fork that fails (EAGAIN) must not leave it blocked
    in the caller (a program using shapelint as a library would never see Ctrl-C again)."""

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    before = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    open_before = set(sandbox._OPEN_FDS)
    monkeypatch.setattr(sandbox.os, "fork", no_fork)
    with pytest.raises(BlockingIOError):
        sandbox.Worker()
    assert signal.pthread_sigmask(signal.SIG_BLOCK, set()) == before
    assert set(sandbox._OPEN_FDS) == open_before
