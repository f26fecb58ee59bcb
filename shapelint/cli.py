"""Command line: parse arguments, build options, run, return the exit code.

Exit codes, as ruff: 0 nothing reported, 1 findings, 2 usage, settings or internal error.
Nothing a user types or any file contains produces a traceback: errors are one line.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from shapelint import __version__
from shapelint.lint.model import DTYPES, SEVERITY_RANK, normalize_dtype
from shapelint.lint.runner import LintOptions, LintResult, TargetOptions, lint_paths

BUG_URL = "https://github.com/shapelint/shapelint/issues"
DEFAULT_GPU = "H100-SXM"
COMMANDS = ("check", "rules", "rule", "gpus", "explain")


class UsageError(Exception):
    """A problem with the command line or settings: reported in one line, exit 2."""


def _dtype(text: str) -> str:
    dtype = normalize_dtype(text)
    if dtype is None:
        raise argparse.ArgumentTypeError(f"unknown dtype {text!r} (choose from {', '.join(DTYPES)})")
    return dtype


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {n}")
    return n


def _codes(values: list[str] | None) -> tuple[str, ...]:
    return tuple(c.strip().upper() for v in values or () for c in v.split(",") if c.strip())


def add_target_flags(p: argparse.ArgumentParser) -> None:
    """Flags shared by ``check`` and ``explain`` that choose the target."""
    p.add_argument("--gpu", action="append", metavar="NAME", help=f"target GPU (repeatable; default {DEFAULT_GPU})")
    p.add_argument("--gpu-file", metavar="FILE", help="YAML file with extra GPU entries")
    p.add_argument("--dtype", type=_dtype, help="bf16|fp16|fp8|tf32|fp32 (torch names accepted)")
    p.add_argument("--tp", type=_positive, metavar="N", help="tensor-parallel size")
    p.add_argument("--micro-batch", type=_positive, metavar="B", help="micro-batch size per GPU")
    p.add_argument("--seq-len", type=_positive, metavar="S", help="sequence length")
    p.add_argument("--mode", choices=("train", "prefill", "decode"), help="what a step is (default train)")
    p.add_argument("--attention", choices=("flash", "unfused"), help="attention kernel (default flash)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = argparse.ArgumentParser(
        prog="shapelint",
        description="Lint transformer model configs for GPU-unfriendly shapes.",
    )
    parser.add_argument("--version", action="version", version=f"shapelint {__version__}")
    sub = parser.add_subparsers(dest="command")

    check = sub.add_parser("check", help="lint config files (the default command)")
    check.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    check.add_argument("--format", default="auto", help="auto|text|json (default auto)")
    check.add_argument("--select", action="append", metavar="CODES", help="only these codes or prefixes")
    check.add_argument("--ignore", action="append", metavar="CODES", help="skip these codes or prefixes")
    check.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="skip matching paths")
    check.add_argument("--min-slowdown", type=float, metavar="PCT", help="hide warnings estimated below PCT%% (default 1)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    check.add_argument("-q", "--quiet", action="store_true", help="print findings only")
    check.add_argument("-v", "--verbose", action="store_true", help="say which files held no config")
    add_target_flags(check)

    sub.add_parser("rules", help="list the rules")
    rule = sub.add_parser("rule", help="explain one rule")
    rule.add_argument("code")
    gpus = sub.add_parser("gpus", help="print the GPU table")
    gpus.add_argument("--gpu-file", metavar="FILE")
    return parser


def _color(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty()


def _gpus(names: Sequence[str] | None, gpu_file: str | None) -> tuple[object, ...]:
    from shapelint.perf.gpus import GPUTableError, UnknownGPUError, load_table

    try:
        table = load_table(gpu_file)
        return tuple(table.lookup(n) for n in (names or [DEFAULT_GPU]))
    except (UnknownGPUError, GPUTableError) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot read GPU file {gpu_file}: {exc.strerror}") from None


def run_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``shapelint check``: lint, report, and choose the exit code."""
    from shapelint.lint.report import FORMATS, ReportContext, get_reporter

    fmt = args.format
    if fmt == "auto":
        fmt = "text"
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {args.format!r} (choose from auto, {', '.join(FORMATS)})")
    options = LintOptions(
        gpus=_gpus(args.gpu, args.gpu_file),  # type: ignore[arg-type]
        flags=TargetOptions(
            dtype=args.dtype,
            micro_batch=args.micro_batch,
            seq_len=args.seq_len,
            tp=args.tp,
            mode=args.mode,
            attention=args.attention,
        ),
        select=_codes(args.select),
        ignore=_codes(args.ignore),
        exclude=tuple(args.exclude),
        min_slowdown=1.0 if args.min_slowdown is None else args.min_slowdown,
    )
    try:
        result = lint_paths(args.paths, options)
    except FileNotFoundError as exc:
        raise UsageError(f"no such file or directory: {exc.args[0]}") from None
    ctx = ReportContext(color=_color(out) and fmt == "text", verbose=args.verbose, quiet=args.quiet)
    get_reporter(fmt)(result, out, ctx)
    if args.verbose:
        _report_empty(result, err)
    for e in result.errors:
        err.write(f"shapelint: internal error while linting {e.path}: {e.error} (please report this at {BUG_URL})\n")
    if result.errors:
        return 2
    return exit_code(result, args.exit_zero, "info")


def _report_empty(result: LintResult, err: TextIO) -> None:
    for r in result.files:
        if r.source.explicit and not r.configs and r.doc.ok:
            err.write(f"info: {r.source.path}: no model config found\n")


def exit_code(result: LintResult, exit_zero: bool, fail_on: str) -> int:
    """1 when a finding at or above ``fail_on`` remains (unless --exit-zero), else 0."""
    if exit_zero:
        return 0
    threshold = SEVERITY_RANK[fail_on]
    return 1 if any(SEVERITY_RANK[f.severity] >= threshold for f in result.findings) else 0


def run_rules(out: TextIO) -> int:
    """``shapelint rules``: one line per rule."""
    from shapelint.rules import REGISTRY, fixable

    for code, module in sorted(REGISTRY.items()):
        rule = module.RULE
        mark = "fix" if fixable(module) else "   "
        out.write(f"{code}  {rule.severity:<7}  {mark}  {rule.name:<30} {rule.summary}\n")
    return 0


def run_rule(code: str, out: TextIO) -> int:
    """``shapelint rule CODE``: the guideline, why, source and examples."""
    from shapelint.rules import get
    from shapelint.rules.render import render_rule

    module = get(code)
    if module is None:
        raise UsageError(f"unknown rule {code!r}; `shapelint rules` lists them")
    out.write(render_rule(module, markdown=False))
    return 0


def run_gpus(gpu_file: str | None, out: TextIO) -> int:
    """``shapelint gpus``: the GPU table."""
    from shapelint.perf.gpus import GPUTableError, load_table

    try:
        table = load_table(gpu_file)
    except GPUTableError as exc:
        raise UsageError(str(exc)) from None
    header = f"{'name':<16} {'SMs':>4} {'bf16':>7} {'fp8':>7} {'fp32':>6} {'GB/s':>6} {'GB':>5} {'align':>5}  aliases"
    out.write(header + "\n")
    for gpu in table:
        fp8 = gpu.peak_tflops.get("fp8")
        out.write(
            f"{gpu.name:<16} {gpu.sms:>4} {gpu.peak_tflops.get('bf16', 0):>7.1f} "
            f"{(f'{fp8:.1f}' if fp8 else '-'):>7} {gpu.peak_tflops.get('fp32', 0):>6.1f} "
            f"{gpu.mem_bw_gbs:>6.0f} {gpu.mem_gb:>5.0f} {gpu.best_align_bytes:>5}  {', '.join(gpu.aliases)}\n"
        )
    out.write("Dense Tensor Core TFLOP/s; sources in shapelint/perf/gpus.yaml.\n")
    return 0


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Entry point of the ``shapelint`` console script; returns the exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (args_list[0] not in COMMANDS and args_list[0] not in ("-h", "--help", "--version")):
        args_list.insert(0, "check")
    parser = build_parser()
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
        return run_check(args, out, err)
    except UsageError as exc:
        err.write(f"shapelint: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        err.write("shapelint: interrupted\n")
        return 130
    except Exception as exc:  # a bug: one line, not a traceback
        err.write(f"shapelint: internal error: {type(exc).__name__}: {exc} (please report this at {BUG_URL})\n")
        return 2
