"""Lint the files under some paths: discover them, run the pipeline on each (in worker
processes for a large tree), triage the files that did not parse, collect the results.

Each file goes through `shapelint.engine.pipeline.lint_source`; anything unexpected while
linting one file is caught and returned as an `InternalError` for that file, so one bad file
never hides the findings of the others.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from shapelint.dialects.common import KeyAliases
from shapelint.engine.discover import Skipped, SourceFile, discover
from shapelint.engine.options import LintOptions
from shapelint.engine.pipeline import READ_PROBLEM, lint_source, not_read
from shapelint.engine.results import FileResult, InternalError, LintResult

if TYPE_CHECKING:
    from shapelint.engine.cache import LintCache

# Files whose name says they hold a model config: a parse failure there is always reported.
MODEL_FILE_NAMES = frozenset({"config.json", "params.json", "model_args.json"})


def skip_reason(result: FileResult, extra_keys: KeyAliases | None = None) -> str | None:
    """Why a file that did not parse is skipped rather than reported, or None to report it.

    Only a file a walk found (or pre-commit passed) is skipped, and only when neither its
    name nor its text says it holds a model config: a JSON file with comments, a template,
    a Python 2 script are not shapelint's business unless the user named them.
    """
    source, doc = result.source, result.doc
    if source.explicit or doc.ok or not result.read:
        return None
    from shapelint.dialects.shape_keys import holds_model_keys

    named = os.path.basename(source.path).lower() in MODEL_FILE_NAMES
    if named or holds_model_keys(doc.text, extra_keys):
        return None
    problem = next(p for p in doc.problems if p.code == READ_PROBLEM)
    return (
        f"not read: {problem.message} (line {problem.span.line}), "
        "and no model-shape keys in it; name the file to see the error"
    )


OptionsFor = Callable[[str], "LintOptions | None"]


def lint_one(
    source: SourceFile, options: LintOptions, cache: LintCache | None = None
) -> FileResult | InternalError:
    """`lint_source`, with a failure returned as an `InternalError` instead of raised."""
    try:
        return lint_source(source, options, cache)
    except OSError as exc:
        return InternalError(source.path, f"cannot read file: {exc.strerror}")
    except Exception as exc:  # a bug in shapelint: report it for this file and go on
        return InternalError(source.path, f"{type(exc).__name__}: {exc}")


def lint_paths(
    paths: Iterable[str],
    options: LintOptions | OptionsFor,
    exclude: Iterable[str] = (),
    *,
    jobs: int | None = 1,
    cache: LintCache | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LintResult:
    """Lint every file under ``paths``; a failure in one file is recorded, not raised.

    ``options`` is one `LintOptions` for every file, or a function giving each file's own
    (from the settings that apply to it; None when those settings exclude the file). Errors
    in settings raise from that function and are the caller's to report. ``jobs`` worker
    processes share the files (None: by the number of files, see `parallel.auto_jobs`); the
    result is the same for any number. ``cache`` skips files linted before (`engine.cache`).
    ``progress(done, total)`` is called as files are linted.
    """
    if isinstance(options, LintOptions):
        exclude = (*exclude, *options.exclude)
        single = options
        options = lambda _path: single  # noqa: E731
    result = LintResult()
    items: list[tuple[SourceFile, LintOptions]] = []
    unreadable: list[Skipped] = []
    for source in discover(paths, exclude, result.skipped, unreadable):
        file_options = options(source.path)
        if file_options is not None:
            items.append((source, file_options))
    for directory in unreadable:  # never silent: its files were not linted
        dir_options = options(directory.path)
        if dir_options is not None:
            message = f"cannot read directory: {directory.reason}; the files in it were not linted"
            source = SourceFile(directory.path, "directory", explicit=True)
            result.files.append(not_read(source, dir_options, message))
    from shapelint.core import sandbox
    from shapelint.engine import parallel

    workers = parallel.auto_jobs(len(items)) if jobs is None else jobs
    workers = min(workers, len(items))
    if workers > 1 and parallel.can_fork():
        outcomes = parallel.lint_parallel(items, workers, cache, lint_one, progress)
    else:
        with sandbox.session():  # one parsing worker for the run, forked when a file needs it
            outcomes = []
            for source, file_options in items:
                outcomes.append(lint_one(source, file_options, cache))
                if progress is not None:
                    progress(len(outcomes), len(items))
    for (source, file_options), outcome in zip(items, outcomes, strict=True):
        if isinstance(outcome, InternalError):
            result.errors.append(outcome)
            continue
        reason = skip_reason(outcome, file_options.extra_keys)
        if reason is None:
            result.files.append(outcome)
        else:
            result.skipped.append(Skipped(source.path, reason))
    return result
