"""The Python API: check, explain and suggest from a program, with the objects the JSON
output serialises.

Each function runs the path the command of the same name runs (settings, the one pipeline,
the performance model), on files or on a text, and returns what the command would print as
data: `check` the findings and configs (`CheckResult.to_json` is ``shapelint check --format
json``), `explain` one `Explanation` per config and GPU, `suggest` the `Suggestions`.
Nothing is printed and nothing is written.

Stability: the names in ``shapelint.__all__``, their parameters and the attributes documented
here (and in docs/api.md) are the public API. shapelint is 0.x: they may change in a minor
release (0.1 → 0.2), never in a patch release, and every change is listed in CHANGELOG.md.
Everything else in the package (``shapelint.engine``, ``shapelint.cli`` …) is internal. The
JSON output has its own contract: its ``version`` and schema (`schema`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shapelint.core.model import Dim, Estimate, Finding, Fix, ModelConfig
from shapelint.core.source import Span

if TYPE_CHECKING:
    import argparse

    from shapelint.cli.suggest import Loaded
    from shapelint.engine.options import LintOptions, TargetOptions
    from shapelint.engine.results import LintResult
    from shapelint.perf.search import Candidate

# A path, or several; for `check` also a text (with ``format``).
PathLike = str | os.PathLike[str]
# The input formats of a text, by the name ``format`` takes.
FORMATS = ("json", "yaml", "toml", "python", "shell")
_SUFFIX = {"json": ".json", "yaml": ".yaml", "toml": ".toml", "python": ".py", "shell": ".sh"}


class ShapelintError(ValueError):
    """What the command line would report as a usage or settings error (exit 2): a path
    that does not exist, an unknown GPU, target field or rule code, a settings file that does
    not validate, a file without a model config to explain. ``findings`` holds the findings
    that stopped `explain` (a file that cannot be read, errors that say a config cannot run).
    """

    def __init__(self, message: str, findings: Sequence[Finding] = ()) -> None:
        super().__init__(message)
        self.findings: tuple[Finding, ...] = tuple(findings)


@dataclass(frozen=True)
class CheckResult:
    """What `check` found: every finding (sorted by path, line, column and code) and every
    config read, in file order. ``files`` are the files read; ``skipped`` the files a walk
    found and did not read, with why; ``errors`` the files a shapelint bug stopped, with the
    error (the command line reports those and exits 2)."""

    findings: tuple[Finding, ...]
    configs: tuple[ModelConfig, ...]
    files: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    errors: tuple[tuple[str, str], ...] = ()
    _result: LintResult | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The ``shapelint check --format json`` document (the ``check`` schema)."""
        from shapelint.engine.results import LintResult
        from shapelint.report.json import report_dict

        return report_dict(self._result or LintResult())


@dataclass(frozen=True)
class Explanation:
    """The performance model's view of one step of one config on one GPU: the headline
    numbers, and ``data``, the whole of it (every GEMM and memory-bound op) as ``shapelint
    explain --format json`` prints it."""

    config: str
    path: str
    gpu: str
    step_time_s: float
    mfu: float
    data: Mapping[str, Any] = field(repr=False)

    def to_json(self) -> dict[str, Any]:
        """``shapelint explain --format json`` for this config and GPU (the ``explain``
        schema)."""
        from shapelint.report.schemas import stamped

        return stamped("explain", dict(self.data))


@dataclass(frozen=True)
class Suggestions:
    """What `suggest` found: the ``original`` shape and the ``candidates``, best first (by
    `Candidate.speedup_per_parameter_pct`, or the Pareto front by parameters), each a
    ``shapelint.perf.search.Candidate`` with ``shape`` (its dims), ``params``,
    ``step_time_s`` (per target, as ``targets``), ``changes`` and ``checkpoint_compatible``.
    ``refused`` says why the target refuses the original, when it does."""

    path: str
    config: ModelConfig
    original: Candidate
    candidates: tuple[Candidate, ...]
    gpus: tuple[str, ...]
    refused: tuple[str, ...] = ()
    _found: Any = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        """``shapelint suggest --format json`` (the ``suggest`` schema)."""
        from shapelint.cli.suggest import to_json

        return to_json(self._found, self.path)


def schema(command: str) -> dict[str, Any]:
    """The JSON schema of ``command``'s ``--format json`` output: ``check``, ``explain``,
    ``suggest``, ``gemm`` or ``engines`` (the file shipped in the package)."""
    from shapelint.report import schemas

    if command not in schemas.VERSIONS:
        raise ShapelintError(
            f"no schema for {command!r} (choose from {', '.join(schemas.VERSIONS)})"
        )
    return schemas.load(command)


def check(
    source: PathLike | Sequence[PathLike] = ".",
    *,
    format: str | None = None,
    path: str | None = None,
    target: Mapping[str, object] | None = None,
    select: str | Iterable[str] | None = None,
    ignore: str | Iterable[str] | None = None,
    min_slowdown: float | None = None,
    exclude: Iterable[str] = (),
    settings: PathLike | None = None,
) -> CheckResult:
    """Lint files, or a text, as ``shapelint check`` does.

    ``source`` is a path or a list of paths (files and directories, walked as the command
    walks them), or, with ``format`` (``json``, ``yaml``, ``toml``, ``python`` or
    ``shell``), the text of one file, reported under ``path`` (default ``<text>`` with the
    format's suffix). Settings are found as the command finds them: the nearest settings file
    above each file (above ``path`` for a text; none for a text without one); ``settings``
    names one file instead (``--config``). ``target`` chooses the target as flags do:
    ``{"gpu": "A100", "tp": 8, "seq_len": 4096}`` (``gpu``: a name or a list; the other keys
    are the target fields, `shapelint.core.target.TARGET_FIELDS`, as the settings take them).
    ``select``/``ignore`` are codes or prefixes (``"SL1"``, ``["SL101", "SL2"]``) as the
    flags; ``min_slowdown`` hides warnings estimated below it (percent); ``exclude`` globs skip
    paths. Raises `ShapelintError` where the command would exit 2 with a usage error.
    """
    from shapelint.cli.check import FileOptions, _check_code_flags, _options
    from shapelint.cli.common import UsageError
    from shapelint.engine.results import LintResult
    from shapelint.engine.settings import EMPTY

    args = _check_args(target, select, ignore, min_slowdown, exclude, settings)
    try:
        _check_code_flags(args)
        file_options = FileOptions(args)
        if format is None:
            result = _lint_paths(_paths(source), file_options, args.exclude)
        else:
            text = _text(source)
            kind = _kind(format)
            where = path if path is not None else f"<text>{_SUFFIX[kind]}"
            # A text without a path has no place to find settings from: none, unless named.
            found = path is not None or settings is not None
            options = file_options(where) if found else _options(args, EMPTY)
            result = LintResult()
            if options is not None:
                result.files.append(_lint_text(where, kind, text, options))
    except UsageError as exc:
        raise ShapelintError(str(exc)) from None
    return CheckResult(
        findings=tuple(result.findings),
        configs=tuple(result.configs),
        files=tuple(r.source.path for r in result.files),
        skipped=tuple((s.path, s.reason) for s in result.skipped),
        errors=tuple((e.path, e.error) for e in result.errors),
        _result=result,
    )


def explain(
    source: PathLike,
    *,
    format: str | None = None,
    path: str | None = None,
    target: Mapping[str, object] | None = None,
    config_name: str | None = None,
    force: bool = False,
    settings: PathLike | None = None,
) -> list[Explanation]:
    """The performance model's view of one step of each config in one file (or text, with
    ``format`` and ``path`` as for `check`), on each target GPU, as ``shapelint explain``.

    ``config_name`` picks one config of a file holding several. A config with errors that
    say it cannot run (SL0xx) raises `ShapelintError` (with those ``findings``) unless
    ``force``; so does a file that cannot be read or holds no model config.
    """
    from shapelint.cli.common import UsageError
    from shapelint.cli.explain import explain_file

    try:
        where, kind, data = _one_file(source, format, path, "explain")
        options = _one_file_options(where, settings, target, format is not None and path is None)
        from shapelint.engine.discover import SourceFile

        explained = explain_file(
            SourceFile(where, kind, explicit=True),
            options,
            data=data,
            config_name=config_name,
            force=force,
        )
    except UsageError as exc:
        raise ShapelintError(str(exc)) from None
    if not explained.read or (explained.errors and not force):
        from shapelint.report import ReportContext
        from shapelint.report.text import format_finding

        first = format_finding(explained.errors[0], ReportContext())
        more = len(explained.errors) - 1
        why = "cannot be read" if not explained.read else "cannot run as written"
        raise ShapelintError(
            f"{where} {why}: {first}" + (f" (and {more} more)" if more else ""),
            explained.errors,
        )
    return [
        Explanation(
            config=r["config"],
            path=r["path"],
            gpu=r["gpu"],
            step_time_s=r["step_time_s"],
            mfu=r["mfu"],
            data=r,
        )
        for r in explained.results
    ]


def suggest(
    source: PathLike,
    *,
    format: str | None = None,
    path: str | None = None,
    target: Mapping[str, object] | None = None,
    config_name: str | None = None,
    tolerance: float = 0.02,
    keep: Iterable[str] = (),
    top: int = 5,
    pareto: bool = False,
    settings: PathLike | None = None,
) -> Suggestions:
    """The fastest shapes near one config at (nearly) the same parameter count, as
    ``shapelint suggest`` ranks them (one file, or a text with ``format`` and ``path``).

    ``tolerance`` is how far the parameter count may move (a fraction, 0 to 0.5); ``keep``
    names dims held as written (``hidden``, ``heads``, ``kv_heads``, ``kv_ratio``,
    ``head_dim``, ``ffn``, ``vocab``, ``layers``, ``micro_batch``, ``tp``); ``top`` how many
    candidates; ``pareto`` the Pareto front of parameters against time instead. A
    micro-batch or tp chosen in ``target`` is held, as the flags hold it. Nothing is written:
    the command's ``--apply`` is not part of the API.
    """
    from shapelint.cli.common import UsageError
    from shapelint.cli.suggest import load_data, suggest_config
    from shapelint.perf.space import KEEPABLE, SuggestOptions

    kept = frozenset(keep) if not isinstance(keep, str) else frozenset((keep,))
    unknown = sorted(kept - set(KEEPABLE))
    if unknown:
        raise ShapelintError(f"unknown dim {unknown[0]!r} (choose from {', '.join(KEEPABLE)})")
    if not 0 <= tolerance <= 0.5:
        raise ShapelintError(f"tolerance must be between 0 and 0.5, got {tolerance!r}")
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ShapelintError(f"top must be a positive integer, got {top!r}")
    try:
        where, kind, data = _one_file(source, format, path, "suggest")
        options = _one_file_options(
            where, settings, target, format is not None and path is None, min_slowdown=0.0
        )
        if data is None:
            data = _read(where, options)
        loaded: Loaded = load_data(where, kind, data, options, config_name)
        chosen = [n for n in ("micro_batch", "tp") if options.flags.get(n) is not None]
        found = suggest_config(
            loaded,
            SuggestOptions(tolerance=tolerance, keep=kept, top=top, pareto=pareto),
            chosen,
        )
    except UsageError as exc:
        raise ShapelintError(str(exc)) from None
    return Suggestions(
        path=where,
        config=found.config,
        original=found.original,
        candidates=tuple(found.candidates),
        gpus=tuple(t.gpu.name for t in found.targets),
        refused=found.refusals,
        _found=found,
    )


# -- how the arguments become the commands' -----------------------------------------------------


def _codes(value: str | Iterable[str] | None) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _paths(source: PathLike | Sequence[PathLike]) -> list[str]:
    if isinstance(source, str | os.PathLike):
        return [os.fspath(source)]
    if isinstance(source, bytes):
        raise ShapelintError("give paths as str or os.PathLike, a text with format=")
    return [os.fspath(p) for p in source]


def _text(source: object) -> str:
    if not isinstance(source, str):
        raise ShapelintError(
            f"with format=, source is the text to lint, not {type(source).__name__}"
        )
    return source


def _kind(format: str) -> str:
    if format not in FORMATS:
        raise ShapelintError(f"unknown format {format!r} (choose from {', '.join(FORMATS)})")
    return format


def _target_choice(target: Mapping[str, object] | None) -> tuple[list[str] | None, TargetOptions]:
    """The GPUs and target fields ``target`` chooses, validated as settings are."""
    from shapelint.core.target import FIELD_NAMES, TargetOptions
    from shapelint.engine.settings import SettingsError, target_choice

    if not target:
        return None, TargetOptions()
    known = ("gpu", *sorted(FIELD_NAMES))
    values: dict[str, object] = {}
    for name, value in target.items():
        key = str(name).replace("-", "_")
        if key not in known:
            import difflib

            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ShapelintError(
                f"target: unknown field {name!r} (known: {', '.join(known)}){hint}"
            )
        values[key.replace("_", "-")] = value
    try:
        gpus, chosen = target_choice(values, "target")
    except SettingsError as exc:
        raise ShapelintError(str(exc)) from None
    return (list(gpus) if gpus else None), chosen


def _check_args(
    target: Mapping[str, object] | None,
    select: str | Iterable[str] | None,
    ignore: str | Iterable[str] | None,
    min_slowdown: float | None,
    exclude: Iterable[str],
    settings: PathLike | None,
) -> argparse.Namespace:
    """``check``'s parsed command line for these arguments, as the language server builds it:
    the command's defaults, then each argument where a flag would put it."""
    import argparse

    from shapelint.cli import check as check_command

    parser = argparse.ArgumentParser(prog="shapelint")
    check_command.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["check"])
    gpus, chosen = _target_choice(target)
    args.gpu = gpus
    for name, value in chosen.chosen.items():
        setattr(args, name, value)
    args.select, args.ignore = _codes(select), _codes(ignore)
    args.min_slowdown = min_slowdown
    args.exclude = [exclude] if isinstance(exclude, str) else list(exclude)
    args.config = os.fspath(settings) if settings is not None else None
    return args


def _lint_paths(paths: list[str], file_options: Any, exclude: list[str]) -> LintResult:
    from shapelint.cli.common import UsageError
    from shapelint.engine.runner import lint_paths

    try:
        # In this process, uncached: a library call forks no workers and writes no cache.
        return lint_paths(paths, file_options, exclude, jobs=1)
    except FileNotFoundError as exc:
        raise UsageError(f"no such file or directory: {exc.args[0]}") from None


def _lint_text(where: str, kind: str, text: str, options: LintOptions) -> Any:
    from shapelint.engine.discover import SourceFile
    from shapelint.engine.pipeline import lint_source

    return lint_source(SourceFile(where, kind, explicit=True), options, data=text.encode("utf-8"))


def _one_file(
    source: PathLike, format: str | None, path: str | None, command: str
) -> tuple[str, str, bytes | None]:
    """``(path, kind, bytes)`` of the one file ``explain``/``suggest`` read: the text given
    with ``format`` (bytes), or the file at ``source`` (None: to be read)."""
    from shapelint.cli.common import UsageError
    from shapelint.engine.discover import KINDS, kind_of

    if format is not None:
        kind = _kind(format)
        where = path if path is not None else f"<text>{_SUFFIX[kind]}"
        return where, kind, _text(source).encode("utf-8")
    if not isinstance(source, str | os.PathLike):
        raise ShapelintError(f"{command} reads one file: give its path")
    where = os.fspath(source)
    if os.path.isdir(where):
        raise UsageError(f"{where} is a directory: {command} reads one config file")
    found = kind_of(where)
    if found is None:
        raise UsageError(f"{where}: not a config file shapelint reads ({', '.join(KINDS)})")
    if not os.path.lexists(where):
        raise UsageError(f"no such file: {where}")
    return where, found, None


def _one_file_options(
    where: str,
    settings: PathLike | None,
    target: Mapping[str, object] | None,
    text_without_path: bool,
    min_slowdown: float = 1.0,
) -> LintOptions:
    """The options ``explain``/``suggest`` read ``where`` with: its settings (none for a text
    without a path, unless ``settings`` names a file), the target chosen over them."""
    from shapelint.cli.common import UsageError, one_file_options
    from shapelint.engine.settings import EMPTY, SettingsError, SettingsResolver

    gpus, chosen = _target_choice(target)
    try:
        if settings is not None:
            found = SettingsResolver(os.fspath(settings)).for_file(where)
        elif text_without_path:
            found = EMPTY
        else:
            found = SettingsResolver().for_file(where)
    except SettingsError as exc:
        raise UsageError(str(exc)) from None
    return one_file_options(found, gpus, None, chosen, min_slowdown=min_slowdown)


def _read(where: str, options: LintOptions) -> bytes:
    from shapelint.cli.common import UsageError
    from shapelint.engine.reading import read_source

    try:
        return read_source(where, options.budget)
    except FileNotFoundError:
        raise UsageError(f"no such file: {where}") from None
    except OSError as exc:
        raise UsageError(f"cannot read {where}: {exc.strerror}") from None


__all__ = [
    "CheckResult",
    "Dim",
    "Estimate",
    "Explanation",
    "Finding",
    "Fix",
    "ModelConfig",
    "ShapelintError",
    "Span",
    "Suggestions",
    "check",
    "explain",
    "schema",
    "suggest",
]
