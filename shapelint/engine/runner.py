"""Run the rules over files: parse, extract configs, check, filter, estimate, sort.

Everything here is a pure function of the files' contents and the options, except reading
the files. Parsers and rules never raise on bad input; anything unexpected while linting one
file is caught and returned as an `InternalError` for that file, so one bad file never hides
the findings of the others.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar, cast

from shapelint import dialects
from shapelint.core.limits import DEFAULT as DEFAULT_BUDGET
from shapelint.core.limits import Budget, OverTime, cpu_limit
from shapelint.core.model import (
    Finding,
    ModelConfig,
    Target,
)
from shapelint.core.source import Document, LineIndex, Problem, file_disables, suppression_reason
from shapelint.dialects.common import KeyAliases
from shapelint.engine.discover import Skipped, SourceFile, as_posix, discover
from shapelint.engine.options import LintOptions
from shapelint.engine.results import FileResult, InternalError, LintResult, Suppressed
from shapelint.engine.target import (
    fixed_target,
    resolve_target,
)
from shapelint.readers import parse
from shapelint.rules import REGISTRY, config_rules

if TYPE_CHECKING:
    from shapelint.engine.cache import LintCache

T = TypeVar("T")


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
    posix = as_posix(path)
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
    # A module no engine in the registry runs is checked only against engines a user names.
    engine_free = not config.runs_on_engines and primary.engines == ()
    for module in options.rules if options.rules is not None else config_rules():
        if not selected(module.RULE.code, options, config.path):
            continue
        if engine_free and module.RULE.code.startswith("SL3"):
            continue
        tuned = options.rule_options.get(module.RULE.code)
        found = (
            module.check(config, primary)
            if tuned is None
            else cast(Any, module).check(config, primary, options=tuned)
        )
        for finding in found:
            finding = with_severity(_with_estimates(finding, config, targets, options), options)
            if (
                finding.severity != "error"
                and finding.estimates
                and finding.max_slowdown < options.min_slowdown
            ):
                continue
            out.append(finding)
    return _defer(out)


# A generic rule's finding that an engine rule reports at the same value, in the engine's own
# words and naming who refuses it: the generic one is dropped (SL005's "heads must divide the
# tensor-parallel size" and SL301's "Total number of attention heads (28) must be divisible by
# tensor parallel size (8)", vLLM and Megatron-LM named).
DEFERS_TO = {"SL005": "SL301"}


def _defer(findings: list[Finding]) -> list[Finding]:
    """``findings`` without those `DEFERS_TO` says another finding at the same value covers."""
    said = {(f.code, f.span.start, f.span.end) for f in findings}
    return [
        f
        for f in findings
        if f.code not in DEFERS_TO or (DEFERS_TO[f.code], f.span.start, f.span.end) not in said
    ]


def _not_understood(
    doc: Document, configs: list[ModelConfig], options: LintOptions
) -> list[Finding]:
    """SL009 when ``doc`` names two or more model-shape keys but no config is complete."""
    from shapelint.dialects.common import looks_like_model
    from shapelint.dialects.shape_keys import (
        CORE,
        enough_shape_keys,
        settings_line,
        shape_keys,
    )
    from shapelint.rules import sl009_config_not_understood as sl009

    if any(looks_like_model({d: v for d, v in c.dims.items() if v.known}) for c in configs):
        return []
    keys = shape_keys(doc, options.extra_keys)
    if not enough_shape_keys(keys):
        return []
    rule = sl009.RULE
    first = keys[0]
    paths = [k.path for k in keys]
    unknown = {k.path: k.unknown for k in keys if k.unknown is not None and k.dim in CORE}
    for config in configs:  # values a dialect knows to be unknown (a conversion's template)
        for dim in CORE:
            v = config.get(dim)
            if v is not None and not v.known and v.expression and v.key not in unknown:
                unknown[v.key] = v.expression
    return [
        Finding(
            code=rule.code,
            name=rule.name,
            severity=rule.severity,
            message=sl009.message(
                paths,
                settings_line(keys),
                sorted(
                    unknown.items(),
                    key=lambda item: paths.index(item[0]) if item[0] in paths else len(paths),
                ),
            ),
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


class Unreadable(OSError):
    """A file shapelint refuses to read (not a regular file, over the size limit)."""


def read_source(path: str, budget: Budget = DEFAULT_BUDGET) -> bytes:
    """The bytes of the regular file at ``path``, at most ``budget.max_file_bytes`` of them.

    Opened without blocking, so a FIFO or device named like a config is refused (by the
    ``fstat`` of the open file, not a separate check) instead of hanging the run; a file over
    the size limit is refused without being read. Raises OSError with the OS's reason.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device or other special file"
            raise Unreadable(f"it is {kind}, not a regular file")
        limit = budget.max_file_bytes
        if st.st_size > limit:
            raise Unreadable(_too_large(st.st_size, budget))
        chunks = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # it grew while being read
            raise Unreadable(_too_large(size, budget))
        return b"".join(chunks)
    finally:
        os.close(fd)


def _too_large(size: int, budget: Budget) -> str:
    return (
        f"the file is {size / 1048576:.1f} MB, over the limit of {budget.max_file_size_mb} MB "
        "(the setting max-file-size-mb raises it); not read"
    )


def _read_failure(path: str, exc: OSError) -> str:
    if isinstance(exc, Unreadable):
        return f"cannot read file: {exc}"
    reason = exc.strerror or str(exc)
    if os.path.islink(path) and not os.path.exists(path):
        reason += f" (a symlink to {os.readlink(path)!r}, which does not exist)"
    return f"cannot read file: {reason}"


def _unread_document(source: SourceFile, message: str) -> Document:
    doc = Document(path=source.path, text="", format=source.kind)
    doc.problems.append(Problem("SL000", message, LineIndex("").span(source.path, 0, 0)))
    return doc


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
    problem = next(p for p in doc.problems if p.code == "SL000")
    return (
        f"not read: {problem.message} (line {problem.span.line}), "
        "and no model-shape keys in it; name the file to see the error"
    )


def lint_file(
    source: SourceFile, options: LintOptions, cache: LintCache | None = None
) -> FileResult:
    """Read, parse and lint one file; a file that cannot be read is an SL000 finding on it.
    With ``cache``, a file unchanged since a run under the same options is not parsed again
    (a file over its time budget is never cached)."""
    read = True
    try:
        data = read_source(source.path, options.budget)
    except OSError as exc:
        doc = _unread_document(source, _read_failure(source.path, exc))
        read = False
    else:
        key = cache.key(source, data, options) if cache is not None else None
        if key is not None and cache is not None:
            hit = cache.get(key, source)
            if hit is not None:
                return hit
        try:
            with cpu_limit(options.budget.max_seconds_per_file):
                doc = parse(source.path, data, source.kind, options.budget)
                result = _finish(
                    source, doc, *lint_document_suppressed(doc, options), options, read
                )
            if key is not None and cache is not None:
                cache.put(key, result)
            return result
        except OverTime as exc:
            doc = _unread_document(source, exc.message)
            doc.text = data.decode("utf-8", errors="replace")  # for the skip triage
    return _finish(source, doc, *lint_document_suppressed(doc, options), options, read)


def _finish(
    source: SourceFile,
    doc: Document,
    configs: list[ModelConfig],
    findings: list[Finding],
    suppressed: list[Suppressed],
    options: LintOptions,
    read: bool,
) -> FileResult:
    if options.baseline is not None:
        stale = options.report_unused_ignores and selected("SL008", options, source.path)
        findings = options.baseline.apply(source.path, findings, stale)
    from shapelint.engine.assumed import assumed_target

    targets = {c.name: assumed_target(c, options) for c in configs}
    from shapelint.dialects.shape_keys import matched_names

    keys = options.extra_keys
    matched = matched_names(doc, keys) if keys and doc.ok else frozenset()
    return FileResult(source, doc, configs, findings, targets, suppressed, keys, matched, read)


OptionsFor = Callable[[str], "LintOptions | None"]


def lint_one(
    source: SourceFile, options: LintOptions, cache: LintCache | None = None
) -> FileResult | InternalError:
    """`lint_file`, with a failure returned as an `InternalError` instead of raised."""
    try:
        return lint_file(source, options, cache)
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
) -> LintResult:
    """Lint every file under ``paths``; a failure in one file is recorded, not raised.

    ``options`` is one `LintOptions` for every file, or a function giving each file's own
    (from the settings that apply to it; None when those settings exclude the file). Errors
    in settings raise from that function and are the caller's to report. ``jobs`` worker
    processes share the files (None: by the number of files, see `parallel.auto_jobs`); the
    result is the same for any number. ``cache`` skips files linted before (`lint.cache`).
    """
    if isinstance(options, LintOptions):
        exclude = (*exclude, *options.exclude)
        single = options
        options = lambda _path: single  # noqa: E731
    result = LintResult()
    items: list[tuple[SourceFile, LintOptions]] = []
    for source in discover(paths, exclude, result.skipped):
        file_options = options(source.path)
        if file_options is not None:
            items.append((source, file_options))
    from shapelint.engine import parallel

    workers = parallel.auto_jobs(len(items)) if jobs is None else jobs
    workers = min(workers, len(items))
    if workers > 1 and parallel.can_fork():
        outcomes = parallel.lint_parallel(items, workers, cache, lint_one)
    else:
        outcomes = [lint_one(source, file_options, cache) for source, file_options in items]
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
