"""``shapelint check`` (the default command): lint, fix (``--fix``, ``--diff``), record a
baseline, report, and choose the exit code."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

from shapelint.cli.common import BUG_URL, UsageError, _gpus, _targets, write_gpu_notes
from shapelint.cli.flags import codes_arg
from shapelint.core.text import clean, shown_path

if TYPE_CHECKING:  # the runner imports every rule: imported where a check runs
    import argparse

    from shapelint.engine.baseline import Baseline
    from shapelint.engine.options import LintOptions
    from shapelint.engine.results import LintResult
    from shapelint.engine.settings import Settings
    from shapelint.report import ReportContext, Reporter


def add_parser(sub: Any) -> None:
    """Register ``check`` on the subparsers ``sub``."""
    from shapelint.cli.argtypes import finite_float
    from shapelint.cli.argtypes import positive_int as _positive
    from shapelint.cli.flags import add_output_flags, add_target_flags
    from shapelint.report import FORMATS

    check = sub.add_parser("check", help="lint config files (the default command)")
    check.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    check.add_argument(
        "--format",
        default="auto",
        help="|".join(("auto", *FORMATS))
        + " (default auto: github under GitHub Actions, else text)",
    )
    check.add_argument(
        "--select", action="append", metavar="CODES", help="only these codes or prefixes"
    )
    check.add_argument(
        "--ignore", action="append", metavar="CODES", help="skip these codes or prefixes"
    )
    check.add_argument(
        "--exclude", action="append", default=[], metavar="GLOB", help="skip matching paths"
    )
    check.add_argument(
        "--min-slowdown",
        type=finite_float,
        metavar="PCT",
        help="hide warnings estimated below PCT%% (default 1)",
    )
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    check.add_argument("-q", "--quiet", action="store_true", help="print findings only")
    check.add_argument(
        "-v", "--verbose", action="store_true", help="say which files held no config"
    )
    check.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    check.add_argument(
        "--unsafe-fixes", action="store_true", help="also apply unsafe fixes (implies --fix)"
    )
    check.add_argument(
        "--diff", action="store_true", help="print the fixes as a unified diff; write nothing"
    )
    check.add_argument("--show-fixes", action="store_true", help="list every fix applied")
    check.add_argument(
        "--jobs", type=_positive, metavar="N", help="worker processes (default: by tree size)"
    )
    check.add_argument(
        "--no-cache", action="store_true", help="lint every file again (skip .shapelint_cache)"
    )
    add_output_flags(check)
    add_target_flags(check)


def _color(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty()


def _options(args: argparse.Namespace, settings: Settings) -> LintOptions:
    """LintOptions for files under ``settings``: CLI flags win, settings fill the rest.

    ``--select`` on the command line replaces the settings' select and ignore (as in ruff);
    ``--ignore`` and ``--exclude`` add to them.
    """
    from shapelint.core.limits import Budget
    from shapelint.engine.options import LintOptions

    names = args.gpu or settings.gpu
    gpu_file = args.gpu_file or settings.gpu_file
    try:
        gpus = _gpus(names, gpu_file)
    except UsageError as exc:
        from_settings = (not args.gpu and settings.gpu) or (not args.gpu_file and gpu_file)
        if settings.path and from_settings:
            raise UsageError(f"{settings.path}: {exc}") from None
        raise
    if args.select:
        select, ignore = codes_arg(args.select), codes_arg(args.ignore)
    else:
        select, ignore = settings.select or (), (*settings.ignore, *codes_arg(args.ignore))
    min_slowdown = args.min_slowdown if args.min_slowdown is not None else settings.min_slowdown
    flags, defaults = _targets(args, settings)
    return LintOptions(
        gpus=gpus,
        gpu_default=not names,
        flags=flags,
        defaults=defaults,
        select=select,
        ignore=ignore,
        per_file_ignores=settings.per_file_ignores,
        extra_keys=settings.keys,
        min_slowdown=1.0 if min_slowdown is None else min_slowdown,
        report_unused_ignores=args.report_unused_ignores,
        budget=Budget(**settings.budget),
        baseline=_baseline(args, settings),
        severity=settings.severity,
        rule_options=settings.rule_options,
    )


def _baseline(args: argparse.Namespace, settings: Settings) -> Baseline | None:
    """The baseline that hides findings under ``settings`` (``--baseline`` wins); none while
    ``--write-baseline`` records every finding."""
    path = args.baseline or settings.baseline
    if path is None or args.write_baseline:
        return None
    from shapelint.engine.baseline import BaselineError, load_cached

    try:
        return load_cached(path)
    except BaselineError as exc:
        where = f"{settings.path}: " if settings.path and not args.baseline else ""
        raise UsageError(f"{where}{exc}") from None


class FileOptions:
    """Each linted file's options, built once per settings file that applies to it.

    Lint, fix and the re-lint after fixing all ask this object, so a file is checked under
    the same settings at every step. ``fail_on`` records each file's own ``fail-on``.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        from shapelint.engine.settings import SettingsError, SettingsResolver

        self.args = args
        try:
            self.resolver = SettingsResolver(args.config)
        except SettingsError as exc:
            raise UsageError(str(exc)) from None
        self.built: dict[str | None, LintOptions] = {}
        self.fail_on: dict[str, str] = {}

    def __call__(self, path: str) -> LintOptions | None:
        """The options for ``path``; None when its settings exclude it."""
        from shapelint.engine.settings import SettingsError

        try:
            settings = self.resolver.for_file(path)
        except SettingsError as exc:
            raise UsageError(str(exc)) from None
        if settings.excludes(path):
            return None
        if settings.fail_on and not self.args.fail_on:
            self.fail_on[path] = settings.fail_on
        if settings.path not in self.built:
            self.built[settings.path] = _options(self.args, settings)
        return self.built[settings.path]

    def of(self, path: str) -> LintOptions:
        """The options a linted file was checked with."""
        options = self(path)
        if options is None:  # excluded files are never linted, so never fixed
            raise ValueError(f"{path} is excluded by its settings")
        return options


def lint_check(args: argparse.Namespace, file_options: FileOptions, err: TextIO) -> LintResult:
    """Lint ``args.paths``, each file under its own settings; a progress line on ``err`` when
    it is a terminal and the run is long (`shapelint.cli.progress`); with ``-v``, a cache that
    cannot be used is noted on ``err``."""
    from shapelint.cli.progress import ProgressLine, files_text
    from shapelint.engine.runner import lint_paths

    cache = None
    if not args.no_cache:  # pickle and the package walk only when the cache is used
        from shapelint.engine.cache import LintCache

        cache = LintCache.default()
        if cache.disabled and args.verbose:
            err.write(f"info: cache not used: {shown_path(cache.disabled)}\n")
    jobs = args.jobs
    if jobs is None and (args.fix or args.unsafe_fixes or args.diff):
        jobs = 1  # the fixer reuses this process's parsed documents; workers' would be re-parsed
    progress = ProgressLine(err, files_text, quiet=args.quiet)
    try:
        return lint_paths(
            args.paths, file_options, args.exclude, jobs=jobs, cache=cache, progress=progress
        )
    except FileNotFoundError as exc:
        raise UsageError(f"no such file or directory: {exc.args[0]}") from None
    finally:
        progress.close()


def emit_report(
    reporter: Reporter, result: LintResult, out: TextIO, ctx: ReportContext, path: str | None
) -> None:
    """Write the report to ``out``, or atomically to ``path`` (``--output-file``)."""
    if path is None:
        reporter(result, out, ctx)
        return
    import io

    from shapelint.engine.writer import WriteRefused, write_output

    buf = io.StringIO()
    reporter(result, buf, ctx)
    try:
        write_output(path, buf.getvalue().encode("utf-8"))
    except WriteRefused as exc:
        raise UsageError(f"cannot write output file {shown_path(path)}: {exc}") from None
    except OSError as exc:
        raise UsageError(
            f"cannot write output file {shown_path(path)}: {exc.strerror or exc}"
        ) from None


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``shapelint check``: lint, report, and choose the exit code."""
    from shapelint.report import FORMATS, ReportContext, get_reporter

    fmt = args.format
    if fmt == "auto":
        fmt = "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {args.format!r} (choose from auto, {', '.join(FORMATS)})")
    _check_code_flags(args)
    if args.write_baseline and args.diff:
        raise UsageError("--write-baseline records findings; it cannot be combined with --diff")
    file_options = FileOptions(args)
    result = lint_check(args, file_options, err)
    write_gpu_notes((g for o in file_options.built.values() for g in o.gpus), err)
    fixed = 0
    if args.diff:
        return run_diff(args, result, file_options, out, err)
    if args.fix or args.unsafe_fixes:
        result, fixed = run_fix(args, result, file_options, out if fmt == "text" else err, err)
    if args.write_baseline:
        return write_baseline(result, args.write_baseline, err)
    ctx = ReportContext(
        color=_color(out) and fmt == "text" and not args.output_file,
        verbose=args.verbose,
        quiet=args.quiet,
        show_fixes=args.show_fixes,
        statistics=args.statistics,
        fixed=fixed,
    )
    emit_report(get_reporter(fmt), result, out, ctx, args.output_file)
    if args.verbose:
        _report_empty(result, err)
    for dim, name in result.unmatched_keys():
        err.write(f'shapelint: warning: key map {dim} = ["{name}"] matched no key in any file\n')
    for e in result.errors:
        err.write(
            f"shapelint: internal error while linting {shown_path(e.path)}: {e.error} "
            f"(please report this at {BUG_URL})\n"
        )
    if result.errors:
        return 2
    return exit_code(result, args.exit_zero, args.fail_on or "info", file_options.fail_on)


def _check_code_flags(args: argparse.Namespace) -> None:
    """Refuse ``--select``/``--ignore`` codes that match no rule (exit 2, closest suggested)."""
    from shapelint.rules.codes import UnknownCodeError, check_selectors

    try:
        check_selectors(codes_arg(args.select), "--select")
        check_selectors(codes_arg(args.ignore), "--ignore")
    except UnknownCodeError as exc:
        raise UsageError(str(exc)) from None


def write_baseline(result: LintResult, path: str, err: TextIO) -> int:
    """``--write-baseline FILE``: record the findings; 0, or 2 when it cannot be written."""
    from shapelint.engine.baseline import write
    from shapelint.engine.writer import WriteRefused

    try:
        n = write(result.findings, path)
    except WriteRefused as exc:
        raise UsageError(f"cannot write baseline file {shown_path(path)}: {exc}") from None
    except OSError as exc:
        raise UsageError(
            f"cannot write baseline file {shown_path(path)}: {exc.strerror or exc}"
        ) from None
    noun = "finding" if n == 1 else "findings"
    err.write(f"shapelint: recorded {n} {noun} in {shown_path(path)}\n")
    return 2 if result.errors else 0


def run_fix(
    args: argparse.Namespace,
    result: LintResult,
    file_options: FileOptions,
    shown: TextIO,
    err: TextIO,
) -> tuple[LintResult, int]:
    """``--fix`` / ``--unsafe-fixes``: write the fixes; the findings that remain, and how many
    were fixed. ``--show-fixes`` lists each change on ``shown``."""
    from shapelint.engine.fixer import fix_paths
    from shapelint.report.text import applied_lines

    run = fix_paths(result, args.paths, file_options.of, unsafe=args.unsafe_fixes)
    for line in run.messages():
        err.write(f"shapelint: {line}\n")
    if args.show_fixes:
        for line in applied_lines(run):
            shown.write(line + "\n")
    # What remains: the written files re-linted from their verified text, the others as linted.
    return run.result, run.fixed


def run_diff(
    args: argparse.Namespace,
    result: LintResult,
    file_options: FileOptions,
    out: TextIO,
    err: TextIO,
) -> int:
    """``--diff``: print what the fixes would change, write nothing; 1 when there is a diff."""
    from shapelint.engine.fixer import fix_paths

    run = fix_paths(result, args.paths, file_options.of, unsafe=args.unsafe_fixes, write=False)
    for f in run.changed:
        out.write(f.diff())
    for line in run.messages():
        err.write(f"shapelint: {line}\n")
    if run.fixed:
        err.write(f"Would fix {run.fixed} {'problem' if run.fixed == 1 else 'problems'}.\n")
    for e in result.errors:
        err.write(f"shapelint: internal error while linting {shown_path(e.path)}: {e.error}\n")
    if result.errors:
        return 2
    return 1 if run.changed and not args.exit_zero else 0


def _report_empty(result: LintResult, err: TextIO) -> None:
    for skipped in result.skipped:
        err.write(f"info: {shown_path(skipped.path)}: skipped: {clean(skipped.reason)}\n")
    for r in result.files:
        if r.source.explicit and not r.configs and r.doc.ok:
            err.write(f"info: {shown_path(r.source.path)}: no model config found\n")


def exit_code(
    result: LintResult,
    exit_zero: bool,
    fail_on: str,
    per_file: Mapping[str, str] | None = None,
) -> int:
    """1 when a finding at or above ``fail_on`` remains (unless --exit-zero), else 0.

    ``per_file`` gives a file's own threshold (its settings' ``fail-on``) where it has one.
    """
    from shapelint.core.model import SEVERITY_RANK

    if exit_zero:
        return 0
    per_file = per_file or {}
    return (
        1
        if any(
            SEVERITY_RANK[f.severity] >= SEVERITY_RANK[per_file.get(f.path, fail_on)]
            for f in result.findings
        )
        else 0
    )
