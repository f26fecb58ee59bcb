"""Run the rules over files: parse, extract configs, check, filter, estimate, sort.

Everything here is a pure function of the files' contents and the options, except reading
the files. Parsers and rules never raise on bad input; anything unexpected while linting one
file is caught and returned as an `InternalError` for that file, so one bad file never hides
the findings of the others.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from shapelint.engines import default_engines
from shapelint.lint import dialects
from shapelint.lint.dialects.common import KeyAliases
from shapelint.lint.discover import SourceFile, discover
from shapelint.lint.formats import parse
from shapelint.lint.model import (
    Attention,
    Dim,
    Finding,
    Mode,
    ModelConfig,
    Target,
    normalize_dtype,
)
from shapelint.lint.source import Document, file_disables, suppression_reason
from shapelint.perf.gpus import GPU
from shapelint.rules import REGISTRY, RuleModule, config_rules

if TYPE_CHECKING:
    from shapelint.lint.assumed import AssumedTarget
    from shapelint.lint.baseline import Baseline

T = TypeVar("T")

# A model's maximum context (HF max_position_embeddings) is not the length it is trained at;
# estimates for such configs use at most this many tokens per sequence unless told otherwise.
DEFAULT_SEQ_LEN = 4096


@dataclass(frozen=True)
class TargetOptions:
    """Target fields a user chose (CLI flags or settings); None means "not chosen"."""

    dtype: str | None = None
    micro_batch: int | None = None
    seq_len: int | None = None
    tp: int | None = None
    mode: Mode | None = None
    attention: Attention | None = None
    # Engines (canonical shapelint.engines names) and the other parallel sizes (SL3xx rules).
    engines: tuple[str, ...] | None = None
    pp: int | None = None
    ep: int | None = None
    cp: int | None = None


@dataclass(frozen=True)
class LintOptions:
    """Everything that decides what the runner reports."""

    gpus: tuple[GPU, ...]
    flags: TargetOptions = TargetOptions()
    defaults: TargetOptions = TargetOptions()
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    extra_keys: KeyAliases = field(default_factory=dict)
    min_slowdown: float = 1.0
    exclude: tuple[str, ...] = ()
    report_unused_ignores: bool = False
    # Findings recorded here are hidden (lint.baseline); None: no baseline.
    baseline: Baseline | None = None
    # Settings' [severity]: code or prefix → "error" | "warning" | "info" | "off".
    severity: Mapping[str, str] = field(default_factory=dict)
    # The config rules to run; None: every rule in the registry (`rules.config_rules`).
    rules: tuple[RuleModule, ...] | None = None


@dataclass
class InternalError:
    """An unexpected exception while linting one file (a shapelint bug)."""

    path: str
    error: str


@dataclass
class FileResult:
    """What linting one file produced."""

    source: SourceFile
    doc: Document
    configs: list[ModelConfig]
    findings: list[Finding]
    # Each config's target and which fields were defaults, by config name (lint.assumed).
    targets: dict[str, AssumedTarget] = field(default_factory=dict)
    # Findings hidden by a ``# shapelint: ignore`` / ``disable-file`` comment, with reasons.
    suppressed: list[Suppressed] = field(default_factory=list)
    # The settings key map that applied to the file, and which of its names matched a key.
    keys: KeyAliases = field(default_factory=dict)
    matched_keys: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Suppressed:
    """A finding an in-file comment hid, and the reason written after ``--`` (or "")."""

    finding: Finding
    reason: str


@dataclass
class LintResult:
    """What linting all files produced, findings sorted by path and position."""

    files: list[FileResult] = field(default_factory=list)
    errors: list[InternalError] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        """All findings, sorted by path, line, column and code."""
        out = [f for r in self.files for f in r.findings]
        return sorted(out, key=lambda f: (f.path, f.span.line, f.span.column, f.code))

    def unmatched_keys(self) -> list[tuple[str, str]]:
        """``(dim, key name)`` of a settings key map that matched no key in any file it
        applied to (a typo, or a path that is not where the file keeps the value)."""
        applied: dict[tuple[str, str], bool] = {}
        for r in self.files:
            for dim, names in r.keys.items():
                for name in names:
                    pair = (dim.value, name)
                    applied[pair] = applied.get(pair, False) or name in r.matched_keys
        return [pair for pair, hit in applied.items() if not hit]

    @property
    def configs(self) -> list[ModelConfig]:
        """All configs read, in file order."""
        return [c for r in self.files for c in r.configs]


def resolve_target(config: ModelConfig, gpu: GPU, options: LintOptions) -> Target:
    """The target for ``config``: CLI flags, then the config's own values, then settings."""
    flags, defaults = options.flags, options.defaults
    seq = config.int(Dim.SEQ_LEN)
    if seq is not None and config.seq_is_max_context:
        seq = min(seq, DEFAULT_SEQ_LEN)
    config_dtype = config.get(Dim.DTYPE)
    dtype = _first(
        flags.dtype,
        normalize_dtype(config_dtype.value) if config_dtype is not None else None,
        defaults.dtype,
        "bf16",
    )
    return Target(
        gpu=gpu,
        dtype=runnable_dtype(dtype, gpu),
        micro_batch=_first(flags.micro_batch, config.int(Dim.MICRO_BATCH), defaults.micro_batch, 1),
        seq_len=_first(flags.seq_len, seq, defaults.seq_len, DEFAULT_SEQ_LEN),
        tp=_first(flags.tp, config.int(Dim.TP), defaults.tp, 1),
        mode=_first(flags.mode, defaults.mode, "train"),
        attention=_first(flags.attention, defaults.attention, "flash"),
        # Engines: flags, then settings, then what the config implies (a guess ranks last).
        engines=_first(flags.engines, defaults.engines, default_engines(config), ()),
        pp=_first(flags.pp, config.int(Dim.PP), defaults.pp, 1),
        ep=_first(flags.ep, config.int(Dim.EP), defaults.ep, 1),
        cp=_first(flags.cp, config.int(Dim.CP), defaults.cp, 1),
    )


# A GPU without a dtype's Tensor Core rate runs the nearest one it has (V100: bf16 → fp16).
DTYPE_FALLBACK: dict[str, tuple[str, ...]] = {
    "bf16": ("fp16", "fp32"),
    "fp16": ("bf16", "fp32"),
    "fp8": ("bf16", "fp16"),
    "tf32": ("fp32",),
}


def runnable_dtype(dtype: str, gpu: GPU) -> str:
    """``dtype`` if ``gpu`` has a rate for it, else the nearest one it has."""
    if dtype in gpu.peak_tflops:
        return dtype
    for other in DTYPE_FALLBACK.get(dtype, ()):
        if other in gpu.peak_tflops:
            return other
    return dtype


def _first(*values: T | None) -> T:
    for v in values:
        if v is not None:
            return v
    raise ValueError("no default")


def matches(code: str, prefixes: Iterable[str]) -> bool:
    """True when ``code`` starts with any of ``prefixes`` (``ALL`` matches everything)."""
    return any(p == "ALL" or code.startswith(p.upper()) for p in prefixes)


def severity_override(code: str, options: LintOptions) -> str | None:
    """The settings' severity for ``code``: the longest matching code or prefix wins."""
    best = max((p for p in options.severity if matches(code, (p,))), key=len, default=None)
    return options.severity[best] if best is not None else None


def with_severity(finding: Finding, options: LintOptions) -> Finding:
    """``finding`` at the severity the settings give its rule (unchanged when none)."""
    level = severity_override(finding.code, options)
    if level in ("error", "warning", "info") and level != finding.severity:
        return replace(finding, severity=level)  # type: ignore[arg-type]
    return finding


def selected(code: str, options: LintOptions, path: str) -> bool:
    """Whether ``code`` is reported for ``path`` under select / ignore / per-file-ignores
    (and not turned ``off`` in the settings' severity table)."""
    if options.select and not matches(code, options.select):
        return False
    if options.severity and severity_override(code, options) == "off":
        return False
    if matches(code, options.ignore):
        return False
    posix = Path(path).as_posix()
    for pattern, codes in options.per_file_ignores.items():
        if (fnmatch.fnmatch(posix, pattern) or fnmatch.fnmatch(posix, f"*/{pattern}")) and matches(
            code, codes
        ):
            return False
    return True


def _problem_findings(doc: Document) -> list[Finding]:
    out = []
    for p in doc.problems:
        rule = REGISTRY[p.code].RULE
        out.append(
            Finding(
                code=p.code,
                name=rule.name,
                severity=rule.severity,
                message=p.message,
                path=doc.path,
                span=p.span,
                key=p.key,
            )
        )
    return out


def _suppression(finding: Finding, doc: Document) -> Suppressed | None:
    """How an in-file comment hides ``finding`` (its line's ignore, or the file's
    ``disable-file``, which never hides a parse error); None when nothing does."""
    # A value inherited from another file: this file's line comments are not about it.
    codes = doc.suppressions.get(finding.span.line) if finding.path == doc.path else None
    if codes is not None and (not codes or finding.code in codes):
        return Suppressed(finding, suppression_reason(doc.text, finding.span.line))
    disabled = file_disables(doc.text) if "disable-file" in doc.text else None
    if disabled is not None and finding.code != "SL000":
        file_codes, _, reason = disabled
        if not file_codes or matches(finding.code, file_codes):
            return Suppressed(finding, reason)
    return None


def _fixed_int(fix_dims: Mapping[Dim, object], dim: Dim, default: int) -> int:
    new = fix_dims.get(dim)
    if isinstance(new, int) and not isinstance(new, bool) and new > 0:
        return new
    return default


def fixed_target(
    fixed: ModelConfig, fix_dims: Mapping[Dim, object], gpu: GPU, options: LintOptions
) -> Target:
    """The target of a fixed config: resolved as usual, except that a micro-batch, sequence
    length or tensor-parallel size the fix sets wins over a CLI flag (the flag chose the
    as-written value the rule reported; the estimate is of the fix)."""
    target = resolve_target(fixed, gpu, options)
    return replace(
        target,
        micro_batch=_fixed_int(fix_dims, Dim.MICRO_BATCH, target.micro_batch),
        seq_len=_fixed_int(fix_dims, Dim.SEQ_LEN, target.seq_len),
        tp=_fixed_int(fix_dims, Dim.TP, target.tp),
    )


def _with_estimates(
    finding: Finding, config: ModelConfig, targets: Sequence[Target], options: LintOptions
) -> Finding:
    if finding.fix is None or not finding.fix.dims:
        return finding
    from shapelint.perf.estimate import estimate_fix

    dims = dict(finding.fix.dims)
    fixed = config.with_dims(dims)
    estimates = []
    for target in targets:
        try:
            est = estimate_fix(
                config, target, finding.fix, fixed_target(fixed, dims, target.gpu, options)
            )
        except ValueError:  # the GPU lacks this dtype (fp8 on A100): no estimate there
            continue
        if est is not None:
            estimates.append(est)
    return replace(finding, estimates=tuple(estimates))


def check_config(config: ModelConfig, options: LintOptions) -> list[Finding]:
    """Run every selected config rule on one config, with estimates on each GPU."""
    targets = [resolve_target(config, gpu, options) for gpu in options.gpus]
    primary = targets[0]
    out: list[Finding] = []
    for module in options.rules if options.rules is not None else config_rules():
        if not selected(module.RULE.code, options, config.path):
            continue
        for finding in module.check(config, primary):
            finding = with_severity(_with_estimates(finding, config, targets, options), options)
            if (
                finding.severity != "error"
                and finding.estimates
                and finding.max_slowdown < options.min_slowdown
            ):
                continue
            out.append(finding)
    return out


def _not_understood(
    doc: Document, configs: list[ModelConfig], options: LintOptions
) -> list[Finding]:
    """SL009 when ``doc`` names two or more model-shape keys but no config is complete."""
    from shapelint.lint.dialects.common import looks_like_model
    from shapelint.lint.dialects.shape_keys import enough_shape_keys, settings_line, shape_keys
    from shapelint.rules import sl009_config_not_understood as sl009

    if any(looks_like_model(c.dims) for c in configs):
        return []
    keys = shape_keys(doc, options.extra_keys)
    if not enough_shape_keys(keys):
        return []
    rule = sl009.RULE
    first = keys[0]
    return [
        Finding(
            code=rule.code,
            name=rule.name,
            severity=rule.severity,
            message=sl009.message([k.path for k in keys], settings_line(keys)),
            path=doc.path,
            span=first.span,
            key=first.path,
        )
    ]


def lint_document(doc: Document, options: LintOptions) -> tuple[list[ModelConfig], list[Finding]]:
    """Configs and findings of one parsed document."""
    configs, kept, _ = lint_document_suppressed(doc, options)
    return configs, kept


def lint_document_suppressed(
    doc: Document, options: LintOptions
) -> tuple[list[ModelConfig], list[Finding], list[Suppressed]]:
    """Configs, findings, and the findings in-file comments suppressed, of one document."""
    findings = [
        with_severity(f, options)
        for f in _problem_findings(doc)
        if selected(f.code, options, doc.path)
    ]
    configs = dialects.extract(doc, options.extra_keys) if doc.ok else []
    if doc.ok and selected("SL009", options, doc.path):
        findings.extend(with_severity(f, options) for f in _not_understood(doc, configs, options))
    seen: set[tuple[str, int, str]] = set()
    for config in configs:
        for f in check_config(config, options):
            # Two configs that share a value (a sub-config reading its parent's key) report once.
            key = (f.code, f.span.start, f.message)
            if key not in seen:
                seen.add(key)
                findings.append(f)
    kept: list[Finding] = []
    suppressed: list[Suppressed] = []
    for f in findings:
        hidden = _suppression(f, doc)
        if hidden is None:
            kept.append(f)
        else:
            suppressed.append(hidden)
    if options.report_unused_ignores and doc.suppressions and selected("SL008", options, doc.path):
        from shapelint.rules.sl008_unused_ignore import unused_ignores

        unused = unused_ignores(doc, findings, lambda code: selected(code, options, doc.path))
        kept.extend(with_severity(f, options) for f in unused)
    return configs, kept, suppressed


def lint_file(source: SourceFile, options: LintOptions) -> FileResult:
    """Read, parse and lint one file (OSError propagates to the caller)."""
    with open(source.path, "rb") as fh:
        data = fh.read()
    doc = parse(source.path, data, source.kind)
    configs, findings, suppressed = lint_document_suppressed(doc, options)
    if options.baseline is not None:
        stale = options.report_unused_ignores and selected("SL008", options, source.path)
        findings = options.baseline.apply(source.path, findings, stale)
    from shapelint.lint.assumed import assumed_target

    targets = {c.name: assumed_target(c, options) for c in configs}
    from shapelint.lint.dialects.shape_keys import matched_names

    keys = options.extra_keys
    matched = matched_names(doc, keys) if keys and doc.ok else frozenset()
    return FileResult(source, doc, configs, findings, targets, suppressed, keys, matched)


OptionsFor = Callable[[str], "LintOptions | None"]


def lint_paths(
    paths: Iterable[str], options: LintOptions | OptionsFor, exclude: Iterable[str] = ()
) -> LintResult:
    """Lint every file under ``paths``; a failure in one file is recorded, not raised.

    ``options`` is one `LintOptions` for every file, or a function giving each file's own
    (from the settings that apply to it; None when those settings exclude the file). Errors
    in settings raise from that function and are the caller's to report.
    """
    if isinstance(options, LintOptions):
        exclude = (*exclude, *options.exclude)
        single = options
        options = lambda _path: single  # noqa: E731
    result = LintResult()
    for source in discover(paths, exclude):
        file_options = options(source.path)
        if file_options is None:
            continue
        try:
            result.files.append(lint_file(source, file_options))
        except OSError as exc:
            result.errors.append(InternalError(source.path, f"cannot read file: {exc.strerror}"))
        except Exception as exc:  # a bug in shapelint: report it for this file and go on
            result.errors.append(InternalError(source.path, f"{type(exc).__name__}: {exc}"))
    return result
