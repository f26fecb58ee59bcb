"""Command line: parse arguments, build options, run, return the exit code.

Exit codes, as ruff: 0 nothing reported, 1 findings, 2 usage, settings or internal error.
Nothing a user types or any file contains produces a traceback: errors are one line.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from shapelint import __version__
from shapelint.cli.common import DEFAULT_GPU, UsageError, _gpus, _targets, write_gpu_notes
from shapelint.core import interrupt as _interrupt

# Imports live in the functions that use them: ``--version`` answers before argparse, the
# config types or any rule is imported (start-up), and a command imports only its own.
if TYPE_CHECKING:  # the runner imports every rule: only commands that lint import it
    import argparse

    from shapelint.core.model import ModelConfig
    from shapelint.dialects.common import KeyAliases
    from shapelint.engine.baseline import Baseline
    from shapelint.engine.options import LintOptions
    from shapelint.engine.results import LintResult
    from shapelint.engine.settings import Settings
    from shapelint.report import ReportContext, Reporter

BUG_URL = "https://github.com/shapelint/shapelint/issues"
COMMANDS = ("check", "rules", "rule", "gpus", "explain", "suggest", "gemm", "engines", "server")


def _dtype(text: str) -> str:
    import argparse

    from shapelint.core.dtypes import DTYPES, normalize_dtype

    dtype = normalize_dtype(text)
    if dtype is None:
        raise argparse.ArgumentTypeError(
            f"unknown dtype {text!r} (choose from {', '.join(DTYPES)})"
        )
    return dtype


def _codes(values: list[str] | None) -> tuple[str, ...]:
    return tuple(c.strip().upper() for v in values or () for c in v.split(",") if c.strip())


def add_target_flags(p: argparse.ArgumentParser) -> None:
    """Flags shared by ``check`` and ``explain`` that choose the target."""
    from shapelint.cli.argtypes import positive_int as _positive
    from shapelint.cli.engines import add_engine_flags
    from shapelint.cli.step_flags import add_step_flags
    from shapelint.core.model import ATTENTION_KERNELS

    p.add_argument(
        "--gpu",
        action="append",
        metavar="NAME",
        help=f"target GPU (repeatable; default {DEFAULT_GPU})",
    )
    p.add_argument("--gpu-file", metavar="FILE", help="YAML file with extra GPU entries")
    p.add_argument("--dtype", type=_dtype, help="bf16|fp16|fp8|tf32|fp32 (torch names accepted)")
    p.add_argument("--tp", type=_positive, metavar="N", help="tensor-parallel size")
    p.add_argument("--micro-batch", type=_positive, metavar="B", help="micro-batch size per GPU")
    p.add_argument("--seq-len", type=_positive, metavar="S", help="sequence length")
    p.add_argument(
        "--mode", choices=("train", "prefill", "decode"), help="what a step is (default train)"
    )
    p.add_argument(
        "--attention",
        choices=ATTENTION_KERNELS,
        help="attention kernel (default flash: FA3 on Hopper, FA2 elsewhere)",
    )
    add_engine_flags(p)
    add_step_flags(p)


def add_output_flags(p: argparse.ArgumentParser) -> None:
    """Flags of ``check`` for settings, output and the exit code."""
    p.add_argument("--config", metavar="FILE", help="settings file to use instead of searching")
    p.add_argument("--statistics", action="store_true", help="count findings per rule")
    p.add_argument("--output-file", metavar="FILE", help="write the report to FILE")
    p.add_argument(
        "--fail-on",
        choices=("error", "warning", "info"),
        help="lowest severity that makes the exit code 1 (default info)",
    )
    p.add_argument(
        "--report-unused-ignores",
        action="store_true",
        help="report `# shapelint: ignore` comments and baseline entries that hide nothing (SL008)",
    )
    p.add_argument("--baseline", metavar="FILE", help="hide the findings recorded in FILE")
    p.add_argument(
        "--write-baseline", metavar="FILE", help="record today's findings in FILE; exit 0"
    )


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser for every subcommand, or only for ``command`` (a run needs only its
    own: ``suggest``'s flags import its module, which ``check`` never uses)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="shapelint",
        description="Lint transformer model configs for GPU-unfriendly shapes.",
    )
    parser.add_argument("--version", action="version", version=f"shapelint {__version__}")
    sub = parser.add_subparsers(dest="command")

    def wanted(name: str) -> bool:
        return command is None or command == name

    if wanted("check"):
        _add_check(sub)
    _add_others(sub, wanted)
    return parser


def _add_check(sub: Any) -> None:
    from shapelint.cli.argtypes import positive_int as _positive

    check = sub.add_parser("check", help="lint config files (the default command)")
    check.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    check.add_argument(
        "--format",
        default="auto",
        help="auto|text|json|github|sarif (default auto: github under GitHub Actions, else text)",
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
        type=float,
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


def _add_others(sub: Any, wanted: Callable[[str], bool]) -> None:
    """Every subcommand but ``check`` that ``wanted`` accepts."""
    _add_small(sub, wanted)
    if wanted("explain"):
        _add_explain(sub)
    if wanted("suggest"):
        from shapelint.cli import suggest

        suggest.add_parser(sub, add_target_flags)
    if wanted("server"):
        server = sub.add_parser("server", help="language server over stdio (needs shapelint[lsp])")
        server.add_argument("--config", metavar="FILE", help="settings file for every document")
    if wanted("gemm"):
        _add_gemm(sub)


def _add_small(sub: Any, wanted: Callable[[str], bool]) -> None:
    """``rules``, ``rule``, ``engines`` and ``gpus``, where ``wanted``."""
    if wanted("rules"):
        sub.add_parser("rules", help="list the rules")
    if wanted("rule"):
        rule = sub.add_parser("rule", help="explain one rule")
        rule.add_argument("code", metavar="CODE|NAME")
    if wanted("engines"):
        engines = sub.add_parser(
            "engines", help="list the engines, versions checked and rule codes"
        )
        engines.add_argument("--format", choices=("text", "json"), default="text")
    if wanted("gpus"):
        gpus = sub.add_parser("gpus", help="print the GPU table")
        gpus.add_argument("--gpu-file", metavar="FILE")


def _add_explain(sub: Any) -> None:
    explain = sub.add_parser("explain", help="print the performance model's view of a config")
    explain.add_argument("path", metavar="CONFIG", help="one config file")
    explain.add_argument("--config-name", metavar="NAME", help="only the config named NAME")
    explain.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help='text (default) or json: one object, or {"configs": [...]} for several',
    )
    explain.add_argument(
        "--plot", metavar="FILE", help="draw the roofline chart to FILE (.png, .svg; needs [plot])"
    )
    explain.add_argument(
        "--force", action="store_true", help="model a config even when it has SL0xx errors"
    )
    add_target_flags(explain)


def _add_gemm(sub: Any) -> None:
    gemm = sub.add_parser("gemm", help="time one GEMM M×K by K×N as the model sees it")
    gemm.add_argument("m", metavar="M")
    gemm.add_argument("n", metavar="N")
    gemm.add_argument("k", metavar="K")
    gemm.add_argument("--batch", metavar="B", default="1", help="batched GEMMs (default 1)")
    gemm.add_argument(
        "--layout",
        choices=("nn", "nt", "tn", "tt"),
        default="nt",
        help="A, B: n as written, t transposed (default nt: X·Wᵀ)",
    )
    gemm.add_argument("--format", choices=("text", "json"), default="text")
    gemm.add_argument("--gpu", metavar="NAME", help=f"GPU (default {DEFAULT_GPU})")
    gemm.add_argument("--gpu-file", metavar="FILE", help="YAML file with extra GPU entries")
    gemm.add_argument("--dtype", type=_dtype, default="bf16", help="bf16|fp16|fp8|tf32|fp32")


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
        select, ignore = _codes(args.select), _codes(args.ignore)
    else:
        select, ignore = settings.select or (), (*settings.ignore, *_codes(args.ignore))
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


def lint_check(args: argparse.Namespace, file_options: FileOptions) -> LintResult:
    """Lint ``args.paths``, each file under its own settings."""
    from shapelint.engine.runner import lint_paths

    cache = None
    if not args.no_cache:  # pickle and the package walk only when the cache is used
        from shapelint.engine.cache import LintCache

        cache = LintCache.default()
    jobs = args.jobs
    if jobs is None and (args.fix or args.unsafe_fixes or args.diff):
        jobs = 1  # the fixer reuses this process's parsed documents; workers' would be re-parsed
    try:
        return lint_paths(args.paths, file_options, args.exclude, jobs=jobs, cache=cache)
    except FileNotFoundError as exc:
        raise UsageError(f"no such file or directory: {exc.args[0]}") from None


def emit_report(
    reporter: Reporter, result: LintResult, out: TextIO, ctx: ReportContext, path: str | None
) -> None:
    """Write the report to ``out``, or atomically to ``path`` (``--output-file``)."""
    if path is None:
        reporter(result, out, ctx)
        return
    import io
    import tempfile

    buf = io.StringIO()
    reporter(result, buf, ctx)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".shapelint-", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(buf.getvalue())
                fh.flush()
                os.fsync(fh.fileno())
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise UsageError(f"cannot write output file {path}: {exc.strerror}") from None


def run_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
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
    result = lint_check(args, file_options)
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
            f"shapelint: internal error while linting {e.path}: {e.error} "
            f"(please report this at {BUG_URL})\n"
        )
    if result.errors:
        return 2
    return exit_code(result, args.exit_zero, args.fail_on or "info", file_options.fail_on)


def _check_code_flags(args: argparse.Namespace) -> None:
    """Refuse ``--select``/``--ignore`` codes that match no rule (exit 2, closest suggested)."""
    from shapelint.rules.codes import UnknownCodeError, check_selectors

    try:
        check_selectors(_codes(args.select), "--select")
        check_selectors(_codes(args.ignore), "--ignore")
    except UnknownCodeError as exc:
        raise UsageError(str(exc)) from None


def write_baseline(result: LintResult, path: str, err: TextIO) -> int:
    """``--write-baseline FILE``: record the findings; 0, or 2 when it cannot be written."""
    from shapelint.engine.baseline import write

    try:
        n = write(result.findings, path)
    except OSError as exc:
        raise UsageError(f"cannot write baseline file {path}: {exc.strerror}") from None
    err.write(f"shapelint: recorded {n} {'finding' if n == 1 else 'findings'} in {path}\n")
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
        err.write(f"shapelint: internal error while linting {e.path}: {e.error}\n")
    if result.errors:
        return 2
    return 1 if run.changed and not args.exit_zero else 0


def _report_empty(result: LintResult, err: TextIO) -> None:
    for skipped in result.skipped:
        err.write(f"info: {skipped.path}: skipped: {skipped.reason}\n")
    for r in result.files:
        if r.source.explicit and not r.configs and r.doc.ok:
            err.write(f"info: {r.source.path}: no model config found\n")


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


def run_rules(out: TextIO) -> int:
    """``shapelint rules``: one line per rule."""
    from shapelint.rules import REGISTRY, fixable

    for code, module in sorted(REGISTRY.items()):
        rule = module.RULE
        mark = "fix" if fixable(module) else "   "
        out.write(f"{code}  {rule.severity:<7}  {mark}  {rule.name:<30} {rule.summary}\n")
    return 0


def run_rule(code: str, out: TextIO) -> int:
    """``shapelint rule CODE|NAME``: the guideline, why, source and examples."""
    from shapelint.rules.codes import closest, find_rule
    from shapelint.rules.render import render_rule

    module = find_rule(code)
    if module is None:
        near = closest(code, prefixes=False)
        hint = f"; did you mean {near!r}?" if near else ""
        raise UsageError(f"unknown rule {code!r} (`shapelint rules` lists them){hint}")
    out.write(render_rule(module, markdown=False))
    return 0


def _explained_configs(path: str, name: str | None, keys: KeyAliases) -> list[ModelConfig]:
    """The configs of the one file ``path`` that have a model shape (``name``: only that one)."""
    from shapelint import dialects
    from shapelint.engine.discover import KINDS, kind_of
    from shapelint.readers import parse

    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory: explain reads one config file")
    kind = kind_of(path)
    if kind is None:
        raise UsageError(f"{path}: not a config file shapelint reads ({', '.join(KINDS)})")
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    doc = parse(path, data, kind)
    if not doc.ok:
        p = doc.problems[0]
        raise UsageError(f"{path}:{p.span.line}:{p.span.column}: {p.message}")
    configs = [c for c in dialects.extract(doc, keys) if not c.shape_from_elsewhere]
    if not configs:
        raise UsageError(f"{path}: no model config found (explain needs a model's shape)")
    if name is None:
        return configs
    picked = [c for c in configs if name in (c.name, c.name.split(" ", 1)[-1])]
    picked = picked or [c for c in configs if c.name.lower() == name.lower()]
    if not picked:
        names = ", ".join(repr(c.name) for c in configs[:10])
        more = f" and {len(configs) - 10} more" if len(configs) > 10 else ""
        raise UsageError(f"{path}: no config named {name!r} (found {names}{more})")
    return picked


def _explain_errors(
    args: argparse.Namespace, options: LintOptions, configs: list[ModelConfig], err: TextIO
) -> bool:
    """Print the SL0xx errors of the explained configs to ``err``; True when there are any."""
    from shapelint.engine.preflight import explain_errors
    from shapelint.report import ReportContext
    from shapelint.report.text import format_finding

    errors = explain_errors(args.path, options, configs)
    for f in errors:
        err.write(format_finding(f, ReportContext()) + "\n")
    if errors and not args.force:
        err.write(
            "shapelint: the config cannot run as written (errors above); fix them, or pass "
            "--force to model it anyway\n"
        )
    return bool(errors)


def run_explain(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``shapelint explain``: every GEMM of one step of each config in one file, as the
    performance model sees it; ``--format json`` prints one object for one config (and GPU),
    ``{"configs": [...]}`` for several; ``--plot`` draws the roofline chart."""
    import json

    from shapelint.cli.explain import explain, render_explain_text
    from shapelint.engine.options import LintOptions
    from shapelint.engine.settings import SettingsError, SettingsResolver
    from shapelint.engine.target import resolve_target
    from shapelint.hardware.gpus import UnsupportedDtypeError

    try:
        settings = SettingsResolver().for_file(args.path)
    except SettingsError as exc:
        raise UsageError(str(exc)) from None
    configs = _explained_configs(args.path, args.config_name, settings.keys)
    gpus = _gpus(args.gpu or settings.gpu, args.gpu_file or settings.gpu_file)
    write_gpu_notes(gpus, err)
    flags, defaults = _targets(args, settings)
    options = LintOptions(gpus=gpus, flags=flags, defaults=defaults)
    for gpu in options.gpus:
        try:
            if args.dtype is not None:  # asked for by name: no silent fallback to another dtype
                gpu.peak(args.dtype)
        except UnsupportedDtypeError as exc:
            raise UsageError(str(exc)) from None
    if _explain_errors(args, options, configs, err) and not args.force:
        return 1
    results: list[dict[str, Any]] = []
    for config in configs:
        for gpu in options.gpus:
            try:
                results.append(explain(config, resolve_target(config, gpu, options)))
            except UnsupportedDtypeError as exc:
                raise UsageError(str(exc)) from None
    if args.plot:
        _plot(results, args.plot)
    if args.format == "json":
        payload = results[0] if len(results) == 1 else {"configs": results}
        out.write(json.dumps(payload, indent=2) + "\n")
    else:
        out.write("\n".join(render_explain_text(r) for r in results))
    return 0


def _plot(results: list[dict[str, Any]], path: str) -> None:
    from shapelint.report.plot import MissingExtraError, plot_roofline

    if len(results) != 1:
        raise UsageError(
            f"--plot draws one config on one GPU, not {len(results)}: "
            "choose one with --config-name and a single --gpu"
        )
    try:
        plot_roofline(results[0], path)
    except MissingExtraError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # matplotlib: an unknown image format
        raise UsageError(f"cannot draw {path}: {exc}") from None


def run_server(args: argparse.Namespace) -> int:
    """``shapelint server``: the language server, each document linted as ``check`` would."""
    from shapelint.cli.server import MissingExtraError, serve

    check = build_parser().parse_args(
        ["check", *(["--config", args.config] if args.config else [])]
    )
    file_options = FileOptions(check)
    try:
        return serve(file_options)
    except MissingExtraError as exc:
        raise UsageError(str(exc)) from None


def run_gemm(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``shapelint gemm M N K``: one GEMM's predicted time (logic in perf/gemm_command.py)."""
    from shapelint.cli import gemm as gemm_command

    (gpu,) = _gpus([args.gpu] if args.gpu else None, args.gpu_file)
    write_gpu_notes([gpu], err)
    try:
        return gemm_command.run(args, gpu, args.dtype, out)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def run_gpus(gpu_file: str | None, out: TextIO) -> int:
    """``shapelint gpus``: the GPU table."""
    from shapelint.hardware.gpus import GPUTableError, load_table

    try:
        table = load_table(gpu_file)
    except GPUTableError as exc:
        raise UsageError(str(exc)) from None
    columns = ("name", "SMs", "16-bit", "fp8", "fp32", "GB/s", "GB", "align", "aliases")
    out.write("{:<16} {:>4} {:>7} {:>7} {:>6} {:>6} {:>5} {:>5}  {}\n".format(*columns))
    for gpu in table:
        peaks = gpu.peak_tflops
        half = peaks.get("bf16") or peaks.get("fp16") or 0.0
        fp8 = f"{peaks['fp8']:.1f}" if peaks.get("fp8") else "-"
        out.write(
            f"{gpu.name:<16} {gpu.sms:>4} {half:>7.1f} {fp8:>7} {peaks.get('fp32', 0.0):>6.1f} "
            f"{gpu.mem_bw_gbs:>6.0f} {gpu.mem_gb:>5.0f} {gpu.best_align_bytes:>5}  "
            f"{', '.join(gpu.aliases)}\n"
        )
    out.write(
        "Dense Tensor Core TFLOP/s (16-bit: bf16, or fp16 where the GPU has no bf16); "
        "sources in shapelint/hardware/gpus.yaml.\n"
    )
    return 0


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Entry point of the ``shapelint`` console script; returns the exit code."""
    try:
        # As the console script, Ctrl-C exited at once while importing (``_interrupt``);
        # from here on it is a KeyboardInterrupt, caught around the whole command.
        _interrupt.restore()
        code = _main(argv, out, err)
    except KeyboardInterrupt:
        (err or sys.stderr).write("shapelint: interrupted\n")
        code = 130
    if argv is None:
        # The console script, its report written: flush it, then ignore Ctrl-C on the way out.
        # A Python-level handler cannot cover the whole way: interpreter finalization puts
        # every handler it installed back to the system default (it keeps SIG_IGN), and a
        # SIGINT in that last moment killed the process silently (-2) after a complete report.
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except KeyboardInterrupt:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write("shapelint: interrupted\n")
            code = 130
        except BrokenPipeError:  # the reader left: nothing more to flush at exit
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # a closed stream: the exit code stands
            pass
        with contextlib.suppress(ValueError):  # not the main thread
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code


def _main(argv: Sequence[str] | None, out: TextIO | None, err: TextIO | None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (
        args_list[0] not in COMMANDS and args_list[0] not in ("-h", "--help", "--version")
    ):
        args_list.insert(0, "check")
    if args_list == ["--version"]:  # as argparse's version action prints it, without argparse
        sys.stdout.write(f"shapelint {__version__}\n")
        return 0
    # Help lists every command; a run builds only the parser of its own.
    parser = build_parser(None if args_list[0] not in COMMANDS else args_list[0])
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # argparse printed the usage error
        return 2 if exc.code else 0
    try:
        if args.command == "rules":
            return run_rules(out)
        if args.command == "rule":
            return run_rule(args.code, out)
        if args.command == "gpus":
            return run_gpus(args.gpu_file, out)
        if args.command == "explain":
            return run_explain(args, out, err)
        if args.command == "server":
            return run_server(args)
        if args.command == "suggest":
            from shapelint.cli.suggest import run_suggest

            return run_suggest(args, out, err)
        if args.command == "gemm":
            return run_gemm(args, out, err)
        if args.command == "engines":
            from shapelint.cli.engines import run_engines

            return run_engines(args.format, out)
        return run_check(args, out, err)
    except UsageError as exc:
        err.write(f"shapelint: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        err.write("shapelint: interrupted\n")
        return 130
    except BrokenPipeError:  # `shapelint … | head`: the reader left; stop quietly
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # a bug: one line, not a traceback
        err.write(
            f"shapelint: internal error: {type(exc).__name__}: {exc} "
            f"(please report this at {BUG_URL})\n"
        )
        return 2
