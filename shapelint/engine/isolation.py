"""Where a file is parsed: in this process, or in a limited worker (`shapelint.core.sandbox`).

A Python file is always parsed in a worker: libcst's native parser can crash the process on
input that passes every pre-check, or take gigabytes where no Python-level timer can stop it.
A file of any other format is parsed in a worker when it is larger than `WORKER_BYTES`: its
readers are pure Python and stop at the CPU-time budget in this process, but only the
operating system can cap the memory a large input makes them take. A small JSON, YAML, TOML
or shell file (nearly every config) is parsed in this process, so checking one config costs
no fork. Inside a worker of `--jobs` (already limited), and where no worker can be forked
(Windows), everything is parsed in place, within the pre-checks of `shapelint.core.limits`.

A worker that dies is an SL000 problem on the file saying why — "the Python parser crashed
on this file (signal 11, SIGSEGV)", "more than 2048 MB of memory" — and the run goes on; a
worker out of CPU time is `OverTime`, as a reader over its budget in this process is.
"""

from __future__ import annotations

from shapelint.core.limits import DEFAULT, Budget, OverTime, cpu_limit
from shapelint.core.source import Document
from shapelint.engine.tree import parse_in_tree as parse_here
from shapelint.readers import not_read

# Non-Python files up to this size are parsed in this process (a fork costs more than they do).
WORKER_BYTES = 1 << 20

KIND_NAMES = {"python": "Python", "json": "JSON", "yaml": "YAML", "toml": "TOML", "shell": "shell"}


def in_worker(kind: str, size: int) -> bool:
    """Whether a file of ``kind`` and ``size`` bytes is parsed in a worker (where one can be)."""
    return kind == "python" or size > WORKER_BYTES


def parse(path: str, data: bytes, kind: str, budget: Budget = DEFAULT) -> Document:
    """`shapelint.readers.parse`, in a limited worker where the file needs one.

    A worker that crashes or runs out of memory gives a document whose one problem (SL000)
    says so; one out of CPU time raises `OverTime` here. Never raises for bad input.
    """
    from shapelint.core import sandbox

    if not in_worker(kind, len(data)) or not sandbox.available():
        return parse_here(path, data, kind, budget)
    got = sandbox.call(
        _parse_in_worker, (path, data, kind, budget), seconds=budget.max_seconds_per_file
    )
    if isinstance(got, sandbox.Died):
        if got.cause == "time":
            raise OverTime(budget.max_seconds_per_file)
        return died_document(path, data, kind, died_message(kind, got, budget))
    assert isinstance(got, Document)
    return got


def _parse_in_worker(path: str, data: bytes, kind: str, budget: Budget) -> Document:
    """The worker's side of `parse`: the reader within the same Python-level CPU budget as in
    the parent (the operating system's limit stops native code that does not return)."""
    with cpu_limit(budget.max_seconds_per_file):
        return parse_here(path, data, kind, budget)


def died_message(kind: str, died: object, budget: Budget = DEFAULT) -> str:
    """The SL000 message for a worker that died on a file of ``kind`` (a `sandbox.Died`)."""
    from shapelint.core import sandbox

    assert isinstance(died, sandbox.Died)
    if died.cause == "time":
        return OverTime(budget.max_seconds_per_file).message
    if died.cause == "memory":
        return f"too complex to read statically: more than {sandbox.MEMORY_MB} MB of memory"
    name = KIND_NAMES.get(kind, kind)
    return f"the {name} parser crashed on this file ({died.detail}); it was not read"


def died_document(path: str, data: bytes, kind: str, message: str) -> Document:
    """A document of ``data`` (decoded leniently, for the skip triage) whose one problem is
    ``message`` at its start (the readers name the code of a file not read)."""
    return not_read(path, data, kind, message)


__all__ = ["WORKER_BYTES", "died_document", "died_message", "in_worker", "parse"]
