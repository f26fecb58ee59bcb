"""Lint many files on several cores: worker processes forked from this one.

Each file is linted exactly as `pipeline.lint_source` lints it; results come back in the order the
files were given, so reports are identical to a one-worker run. Workers are forked after the
parent has decided every file's options and imported the readers the files need, so they
start with everything loaded and nothing needs pickling on the way in; on the way back a
result travels without its parsed tree (`cache.lite`). Where ``fork`` is not available
(Windows) the files are linted in this process.

Ctrl-C is the parent's alone: a terminal sends SIGINT to every process of the foreground group,
so workers ignore it (they are forked with SIGINT blocked and ignore it before unblocking, so
no moment is left in which one could print a traceback); the parent's KeyboardInterrupt ends
the pool, which terminates them.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shapelint.engine.cache import LintCache
    from shapelint.engine.discover import SourceFile
    from shapelint.engine.options import LintOptions
    from shapelint.engine.results import FileResult, InternalError

    # `runner.lint_one`, passed in by the runner (this module is below it).
    LintOne = Callable[[SourceFile, LintOptions, LintCache | None], FileResult | InternalError]

# A worker pays for itself from about this many files (fork, result transfer).
FILES_PER_JOB = 100

Item = tuple["SourceFile", "LintOptions"]

_ITEMS: Sequence[Item] = ()
_CACHE: LintCache | None = None
_LINT: LintOne | None = None

_READERS = {
    "json": "shapelint.readers.json",
    "yaml": "shapelint.readers.yaml",
    "toml": "shapelint.readers.toml",
    "python": "shapelint.readers.python",
    "shell": "shapelint.readers.shell",
}


def cpu_count() -> int:
    """CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def auto_jobs(n_files: int) -> int:
    """The default worker count: one per `FILES_PER_JOB` files, at most the CPU count."""
    return max(1, min(cpu_count(), n_files // FILES_PER_JOB))


def can_fork() -> bool:
    """True where worker processes can be forked and limited."""
    from shapelint.core import sandbox

    return sandbox.available()


def _one(index: int) -> bytes | InternalError | None:
    """Lint item ``index`` in a worker: the pickled `lite` result, the error, or None when the
    result cannot be pickled (the parent then lints that file itself)."""
    from shapelint.engine.cache import dumps
    from shapelint.engine.results import FileResult

    assert _LINT is not None  # set by lint_parallel before the workers fork
    source, options = _ITEMS[index]
    outcome = _LINT(source, options, _CACHE)
    return dumps(outcome) if isinstance(outcome, FileResult) else outcome


def lint_parallel(
    items: Sequence[Item],
    jobs: int,
    cache: LintCache | None,
    lint_one: LintOne,
    progress: Callable[[int, int], None] | None = None,
) -> list[FileResult | InternalError]:
    """Lint ``items`` with ``lint_one`` on ``jobs`` forked workers; outcomes in the order of
    ``items``, ``progress(done, total)`` called as they arrive.

    The workers are `shapelint.core.sandbox` workers: each file is linted under its CPU-time
    budget and the memory limit, and a worker that dies on a file (a parser crash, memory,
    time) makes that file one SL000 finding saying why; a fresh worker takes the next file.
    """
    import pickle

    from shapelint.core import sandbox
    from shapelint.engine.isolation import died_message
    from shapelint.engine.pipeline import unparsed
    from shapelint.engine.results import InternalError

    global _ITEMS, _CACHE, _LINT
    for kind in sorted({source.kind for source, _ in items}):
        if kind in _READERS:  # import once here rather than once per worker
            importlib.import_module(_READERS[kind])
            if kind == "python":
                importlib.import_module("libcst")
    _ITEMS, _CACHE, _LINT = items, cache, lint_one
    try:
        calls = [
            (_one, (i,), opts.budget.max_seconds_per_file) for i, (_, opts) in enumerate(items)
        ]
        returned = sandbox.run_pool(calls, jobs, progress=progress)
    finally:
        _ITEMS, _CACHE, _LINT = (), None, None
    outcomes: list[FileResult | InternalError] = []
    for (source, options), got in zip(items, returned, strict=True):
        if isinstance(got, bytes):
            outcomes.append(pickle.loads(got))
        elif got is None:
            outcomes.append(lint_one(source, options, cache))
        elif isinstance(got, sandbox.Died):
            message = died_message(source.kind, got, options.budget)
            outcomes.append(unparsed(source, options, message))
        elif isinstance(got, sandbox.Raised):
            outcomes.append(InternalError(source.path, got.error))
        else:
            outcomes.append(got)
    return outcomes
