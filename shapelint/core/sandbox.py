"""Worker processes for untrusted text: whatever a parser does, the run goes on.

The pre-checks of `shapelint.core.limits` keep the parsers within bounds for every input
found so far, but a parser written in C or Rust can still crash the whole process on input
that passes them (libcst segfaults on a 6 KB f-string holding 3,000 nested brackets, and on
5,000 chained ``lambda:``), or allocate gigabytes in native code where no Python-level timer
can stop it. So the text is parsed in a forked worker process that the operating system
limits (``RLIMIT_CPU``: CPU seconds, ``RLIMIT_AS``: address space), and a worker that dies —
a signal, memory exhausted, CPU time spent, or no answer within a generous wall-clock time —
is a `Died` answer for that one input; the next input gets a fresh worker.

A worker is forked once and answers many requests (`call`, inside a `session`), so a run
pays for one fork, not one per file; `run_pool` spreads many calls over several workers,
replacing each that dies. Workers are forked from the running process, so they share every
module it has imported and every function it would call; a request names a module-level
function (pickled by name) and its arguments, and the answer comes back pickled.

A worker can say which other file it is reading (`reading`): the Python reader reads the
modules base classes are imported from. When a worker dies inside such a read, the request
is tried again with that file refused (`refused` is then True for it, and the reader treats
the base as unreadable), so a file that crashes the parser only as somebody's base class
costs that base, not the file that imports it.

Where ``fork`` or the ``resource`` module is missing (Windows), `available` is False and
callers parse in their own process, within the pre-checks only.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import math
import os
import signal
import struct
import sys
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from shapelint.core.limits import OverTime

# The most memory a worker may take beyond what it had when forked (an input needing more is
# not a model config: the largest Python file of the test corpora takes 100 MB in libcst).
MEMORY_MB = 2048
# A death inside a noted read is retried with that file refused, at most this many times.
MAX_REFUSED = 8
# Wall-clock time a request may take, beyond its CPU seconds: the CPU limit stops a busy
# worker; this stops one that waits on something forever, on however loaded a machine.
WALL_BASE_S = 60.0
WALL_PER_CPU_S = 10.0

_HEADER = struct.Struct("!cQ")


@dataclass(frozen=True)
class Died:
    """A worker that ended without answering.

    ``cause`` is ``"crash"`` (a signal or an exit), ``"time"`` (its CPU or wall-clock
    limit), or ``"memory"`` (its address-space limit); ``detail`` says more (``signal 11,
    SIGSEGV``); ``inside`` is the file it noted it was reading when it died, if any.
    """

    cause: str
    detail: str
    inside: str | None = None


@dataclass(frozen=True)
class Raised:
    """The function raised an exception in the worker (a bug, not a death): its one line."""

    error: str


class WorkerError(RuntimeError):
    """`call`'s function raised in the worker; the message is the worker's one line."""


# -- in the worker -------------------------------------------------------------------------------

_in_worker = False
_replies_fd = -1
_refused: frozenset[str] = frozenset()


def inside() -> bool:
    """True in a worker process (a caller then parses in place: it is already limited)."""
    return _in_worker


def refused(path: str) -> bool:
    """True when ``path`` is a file the current request must not read (a worker died there)."""
    return bool(_refused) and _key(path) in _refused


@contextlib.contextmanager
def reading(path: str) -> Iterator[None]:
    """Note, for the parent, that the block reads ``path`` (a no-op outside a worker)."""
    if not _in_worker:
        yield
        return
    _send(_replies_fd, b"E", _key(path).encode("utf-8", "surrogateescape"))
    try:
        yield
    finally:
        _send(_replies_fd, b"L", b"")


def _key(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


def _child(requests: int, replies: int, errors: int, memory_mb: int, keep: set[int]) -> None:
    """The worker's life: limits, then answer requests until the parent closes the pipe."""
    global _in_worker, _replies_fd, _refused
    import pickle
    import resource

    _in_worker, _replies_fd = True, replies
    _WORKERS.clear()
    for fd in _OPEN_FDS - keep:  # other workers' pipes: their EOF must not wait for us
        with contextlib.suppress(OSError):
            os.close(fd)
    _OPEN_FDS.clear()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # A SIGINT that arrived while it was blocked (`Worker`) is discarded once ignored.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    # Nothing a parser prints may reach the user's terminal or the language server's stream;
    # the parent reads the error stream after a death (Rust's "memory allocation failed").
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(errors, 2)
    os.close(devnull)
    faulthandler.disable()  # its dump would go to the caller's saved error stream
    # The streams Python writes to may not be file descriptors 1 and 2 (a caller's capture).
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the worker's whole life
    sys.stderr = open(2, "w", errors="replace", closefd=False)  # noqa: SIM115
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _limit_memory(memory_mb)
    while True:
        request = _read_message(requests)
        if request is None:
            return
        fn, args, seconds, refused_paths = pickle.loads(request[1])
        _refused = refused_paths
        _limit_cpu(seconds)
        try:
            reply: tuple[Any, ...] = ("ok", fn(*args))
        except OverTime as exc:
            reply = ("overtime", exc.seconds)
        except MemoryError:
            reply = ("memory",)
        except RecursionError:
            reply = ("raised", "RecursionError")
        except Exception as exc:
            reply = ("raised", f"{type(exc).__name__}: {exc}")
        try:
            payload = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except MemoryError:
            payload = pickle.dumps(("memory",))
        except Exception as exc:  # an answer that cannot travel: a bug, said as one
            payload = pickle.dumps(("raised", f"cannot return the result: {exc}"))
        _send(replies, b"R", payload)


def _limit_memory(memory_mb: int) -> None:
    """Cap the address space at what the process has now plus ``memory_mb`` (Linux: the
    current size is read from /proc; elsewhere no cap)."""
    import resource

    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            size_kb = next(int(line.split()[1]) for line in fh if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = size_kb * 1024 + memory_mb * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft != resource.RLIM_INFINITY:
        limit = min(limit, soft)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _limit_cpu(seconds: float) -> None:
    """Let the process run ``seconds`` more CPU time (plus a margin, so that the Python-level
    `cpu_limit` speaks first where it can), then receive SIGXCPU. The hard limit is left as
    it is: an unprivileged process could not raise it again for the next request."""
    import resource

    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    if seconds <= 0:
        want = hard
    else:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        want = math.ceil(usage.ru_utime + usage.ru_stime) + math.ceil(seconds) + 2
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (want, hard))


# -- framing -------------------------------------------------------------------------------------


def _send(fd: int, tag: bytes, payload: bytes) -> None:
    data = memoryview(_HEADER.pack(tag, len(payload)) + payload)
    while data:
        written = os.write(fd, data[: 1 << 20])
        data = data[written:]


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_message(fd: int) -> tuple[bytes, bytes] | None:
    header = _read_exactly(fd, _HEADER.size)
    if header is None:
        return None
    tag, size = _HEADER.unpack(header)
    payload = _read_exactly(fd, size)
    return None if payload is None else (tag, payload)


# -- in the parent -------------------------------------------------------------------------------

_OPEN_FDS: set[int] = set()
_WORKERS: set[Worker] = set()


def available() -> bool:
    """True where workers can be forked and limited (POSIX), and this is not one already."""
    if _in_worker or not hasattr(os, "fork"):
        return False
    try:
        import resource  # noqa: F401
    except ImportError:  # pragma: no cover - Windows
        return False
    return True


class Worker:
    """One forked worker process and the parent's ends of its pipes."""

    def __init__(self, memory_mb: int = MEMORY_MB) -> None:
        import tempfile

        self.memory_mb = memory_mb
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed by dispose
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        own = {req_r, rep_w, self.errors.fileno()}
        _OPEN_FDS.update({req_r, req_w, rep_r, rep_w, self.errors.fileno()})
        with warnings.catch_warnings():
            # Python 3.12 warns when a process with threads forks (the language server's
            # reader thread); the worker touches no lock those threads may hold.
            warnings.simplefilter("ignore", DeprecationWarning)
            # Forked with SIGINT blocked, so no Ctrl-C reaches the worker before it ignores
            # SIGINT (a traceback from the worker); the parent's mask is restored at once.
            # A fork that fails (EAGAIN: too many processes) leaves the mask as it was, the
            # pipes closed.
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                pid = os.fork()
            except BaseException:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
                for fd in (req_r, req_w, rep_r, rep_w):
                    os.close(fd)
                    _OPEN_FDS.discard(fd)
                _OPEN_FDS.discard(self.errors.fileno())
                self.errors.close()
                raise
            if pid != 0:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if pid == 0:  # pragma: no cover - runs in the worker, which never returns
            try:
                _child(req_r, rep_w, self.errors.fileno(), memory_mb, own)
            finally:
                os._exit(0)
        for fd in (req_r, rep_w):
            os.close(fd)
            _OPEN_FDS.discard(fd)
        self.pid, self.requests, self.replies = pid, req_w, rep_r
        self.buffer = bytearray()
        self.stack: list[str] = []
        self.deadline: float | None = None
        self.timed_out = False
        self.status: int | None = None
        _WORKERS.add(self)

    def send(
        self, fn: Callable[..., Any], args: tuple[Any, ...], seconds: float, refused: frozenset[str]
    ) -> None:
        """Start one request; BrokenPipeError when the worker is gone."""
        import pickle

        self.stack.clear()
        self.errors.seek(0)
        self.errors.truncate()
        payload = pickle.dumps((fn, args, seconds, refused), protocol=pickle.HIGHEST_PROTOCOL)
        self.deadline = (
            time.monotonic() + WALL_BASE_S + WALL_PER_CPU_S * seconds if seconds > 0 else None
        )
        _send(self.requests, b"Q", payload)

    def receive(self) -> tuple[str, Any] | None:
        """Read what the worker has written: ``("ok", value)``, ``("overtime", seconds)``,
        ``("raised", line)`` or ``("memory",)`` once the answer is complete, a `Died` tuple
        ``("died", Died)`` when the pipe ended first, None while the answer is incomplete."""
        import pickle

        try:
            chunk = os.read(self.replies, 1 << 20)
        except OSError:
            chunk = b""
        if not chunk:
            return ("died", self._died())
        self.buffer += chunk
        while len(self.buffer) >= _HEADER.size:
            tag, size = _HEADER.unpack_from(self.buffer)
            if len(self.buffer) < _HEADER.size + size:
                return None
            payload = bytes(self.buffer[_HEADER.size : _HEADER.size + size])
            del self.buffer[: _HEADER.size + size]
            if tag == b"E":
                self.stack.append(payload.decode("utf-8", "surrogateescape"))
            elif tag == b"L":
                if self.stack:
                    self.stack.pop()
            elif tag == b"R":
                self.deadline = None
                answer: tuple[str, Any] = pickle.loads(payload)
                return answer
        return None

    def overdue(self, now: float) -> bool:
        """Kill the worker when its request is past the wall-clock limit; True if it was."""
        if self.deadline is None or now < self.deadline:
            return False
        self.timed_out = True
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        self.deadline = None
        return True

    def _died(self) -> Died:
        self.close()
        inside = self.stack[-1] if self.stack else None
        status = self.status or 0
        said = ""
        with contextlib.suppress(OSError, ValueError):
            self.errors.seek(0, os.SEEK_END)
            self.errors.seek(max(0, self.errors.tell() - 4096))
            said = self.errors.read().decode("utf-8", "replace")
        if self.timed_out:
            return Died("time", "no answer in time", inside)
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            try:
                detail = f"signal {number}, {signal.Signals(number).name}"
            except ValueError:
                detail = f"signal {number}"
            if number == getattr(signal, "SIGXCPU", -1):
                return Died("time", detail, inside)
            if any(s in said for s in ("memory allocation of", "MemoryError", "out of memory")):
                return Died("memory", detail, inside)
            if number == signal.SIGKILL:  # not ours: the kernel's out-of-memory killer
                return Died("memory", detail, inside)
            return Died("crash", detail, inside)
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
        return Died("crash", f"exit status {code}", inside)

    def close(self) -> None:
        """Stop the worker (it holds nothing worth a graceful end) and reap it."""
        if self.status is not None:
            return
        for fd in (self.requests, self.replies):
            with contextlib.suppress(OSError):
                os.close(fd)
            _OPEN_FDS.discard(fd)
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == 0:
                with contextlib.suppress(OSError):
                    os.kill(self.pid, signal.SIGKILL)
                _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            status = 0
        self.status = status
        _WORKERS.discard(self)

    def dispose(self) -> None:
        """`close`, and drop the file that kept the worker's error stream."""
        self.close()
        if not self.errors.closed:
            _OPEN_FDS.discard(self.errors.fileno())
            self.errors.close()


def _close_all() -> None:
    for worker in list(_WORKERS):
        worker.dispose()


atexit.register(_close_all)


# -- one worker for a run ------------------------------------------------------------------------

_depth = 0
_worker: Worker | None = None


@contextlib.contextmanager
def session() -> Iterator[None]:
    """Keep one worker for every `call` in the block (a command's run), then stop it.

    Outside a session each `call` forks its own worker: a library caller gets no process
    that outlives its call, and a test that patches a function sees the patch in the worker.
    """
    global _depth, _worker
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _drop()


def call(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    *,
    seconds: float,
    memory_mb: int = MEMORY_MB,
) -> Any:
    """``fn(*args)`` in a worker with ``seconds`` of CPU time and ``memory_mb`` of memory.

    Returns the value, or a `Died` when the worker died (after retrying deaths inside a noted
    read with that file refused). `OverTime` raised in the worker is raised here; any other
    exception is a `WorkerError`. Needs `available`.
    """
    global _worker
    refused_paths: frozenset[str] = frozenset()
    while True:
        if _worker is None or _worker.status is not None:
            _drop()
            _worker = Worker(memory_mb)
        try:
            answer = _ask(_worker, fn, args, seconds, refused_paths)
        except BaseException:  # Ctrl-C while waiting: the worker's answer would come late
            _drop()
            raise
        if _depth == 0:
            _drop()
        kind = answer[0]
        if kind == "ok":
            return answer[1]
        if kind == "overtime":
            raise OverTime(answer[1])
        if kind == "memory":
            return Died("memory", "MemoryError")
        if kind == "raised":
            raise WorkerError(answer[1])
        died: Died = answer[1]
        if died.inside is not None and len(refused_paths) < MAX_REFUSED:
            refused_paths |= {died.inside}
            continue
        return died


def _drop() -> None:
    global _worker
    if _worker is not None:
        _worker.dispose()
        _worker = None


def _ask(
    worker: Worker,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    seconds: float,
    refused_paths: frozenset[str],
) -> tuple[str, Any]:
    import select

    try:
        worker.send(fn, args, seconds, refused_paths)
    except OSError:  # the worker died while reading the request (or before)
        return ("died", worker._died())
    while True:
        timeout = None if worker.deadline is None else max(0.0, worker.deadline - time.monotonic())
        try:
            ready, _, _ = select.select([worker.replies], [], [], timeout)
        except InterruptedError:  # pragma: no cover - PEP 475 retries select itself
            continue
        if not ready:
            worker.overdue(time.monotonic())
            continue
        answer = worker.receive()
        if answer is not None:
            return answer


# -- many calls on several workers ---------------------------------------------------------------


def run_pool(
    calls: Sequence[tuple[Callable[..., Any], tuple[Any, ...], float]],
    workers: int,
    *,
    memory_mb: int = MEMORY_MB,
    progress: Callable[[int, int], None] | None = None,
) -> list[Any]:
    """Each ``(fn, args, seconds)`` of ``calls`` in one of ``workers`` workers, in order;
    ``progress(done, total)`` is called as each answer is final.

    An item's answer is its value, a `Died` (the worker is replaced and the other items go
    on), or a `Raised`; `OverTime` in the worker is ``Died("time", …)``. Items are handed
    out one at a time, so a slow file never holds back a queue of others.
    """
    import select

    results: list[Any] = [None] * len(calls)
    todo: deque[int] = deque(range(len(calls)))
    refused_for: dict[int, frozenset[str]] = {}
    pool: list[Worker] = []
    busy: dict[int, tuple[Worker, int]] = {}  # replies fd → (worker, item)

    def start(worker: Worker) -> None:
        while todo:
            item = todo.popleft()
            fn, args, seconds = calls[item]
            try:
                worker.send(fn, args, seconds, refused_for.get(item, frozenset()))
            except OSError:
                finish(worker, item, ("died", worker._died()))
                return
            busy[worker.replies] = (worker, item)
            return

    done = 0

    def finish(worker: Worker, item: int, answer: tuple[str, Any]) -> None:
        nonlocal done
        kind = answer[0]
        final = (
            kind != "died"
            or answer[1].inside is None
            or len(refused_for.get(item, frozenset())) >= MAX_REFUSED
        )
        if final:
            done += 1
            if progress is not None:
                progress(done, len(calls))
        if kind == "ok":
            results[item] = answer[1]
        elif kind == "overtime":
            results[item] = Died("time", f"{answer[1]:g} s of CPU time")
        elif kind == "memory":
            results[item] = Died("memory", "MemoryError")
        elif kind == "raised":
            results[item] = Raised(answer[1])
        else:
            died: Died = answer[1]
            tried = refused_for.get(item, frozenset())
            if died.inside is not None and len(tried) < MAX_REFUSED:
                refused_for[item] = tried | {died.inside}
                todo.appendleft(item)
            else:
                results[item] = died
            pool.remove(worker)
            worker.dispose()
            if todo:
                replacement = Worker(memory_mb)
                pool.append(replacement)
                start(replacement)
            return
        start(worker)

    try:
        for _ in range(min(workers, len(calls))):
            worker = Worker(memory_mb)
            pool.append(worker)
            start(worker)
        while busy:
            deadlines = [w.deadline for w, _ in busy.values() if w.deadline is not None]
            now = time.monotonic()
            timeout = max(0.0, min(deadlines) - now) if deadlines else None
            ready, _, _ = select.select(list(busy), [], [], timeout)
            if not ready:
                now = time.monotonic()
                for w, _ in list(busy.values()):
                    w.overdue(now)
                continue
            for fd in ready:
                worker, item = busy[fd]
                answer = worker.receive()
                if answer is None:
                    continue
                del busy[fd]
                finish(worker, item, answer)
    finally:
        for worker in pool:
            worker.dispose()
    return results


__all__ = [
    "MEMORY_MB",
    "Died",
    "Raised",
    "Worker",
    "WorkerError",
    "available",
    "call",
    "inside",
    "reading",
    "refused",
    "run_pool",
    "session",
]
