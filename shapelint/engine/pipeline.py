"""The one pipeline from bytes to findings: read, parse, extract, rules, suppress, baseline.

`lint_source` is the pipeline for one file (or for a text standing for it): ``check`` runs it
on every file it finds, ``explain``, ``suggest`` and the language server on the one file they
are given, and ``--fix`` reuses the document it returns. `lint_document` is its rule stage,
which the fixer also runs on each fixed text before trusting it.

What the rules are and the order they run in come from each rule's metadata
(`shapelint.rules.base.Rule`): reader problems first, then the rules that read the whole
document, then the config rules, then the rules about suppressions, which see every other
finding. Nothing here names a rule, except the reading problem (SL000) a read failure is.

Everything is a pure function of the file's contents and the options, except reading the
file and what its reading rests on in the same project (a script's sourced files, the module of
a preset the config names: `shapelint.engine.tree`, `shapelint.engine.presets`), which the
document records. Parsers and rules never raise on bad input.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from shapelint import dialects
from shapelint.core.limits import OverTime, cpu_limit
from shapelint.core.model import Finding, ModelConfig, Target
from shapelint.core.source import Document, LineIndex, Problem, file_disables, suppression_reason
from shapelint.engine.discover import SourceFile
from shapelint.engine.isolation import parse
from shapelint.engine.options import LintOptions
from shapelint.engine.reading import read_failure, read_source
from shapelint.engine.results import FileResult, Suppressed
from shapelint.engine.selection import matches, selected, with_severity
from shapelint.engine.target import fixed_target, resolve_fields, resolve_target
from shapelint.rules import REGISTRY, config_rules, rules_of

if TYPE_CHECKING:
    from shapelint.engine.cache import LintCache
    from shapelint.rules.base import DocumentRule, Rule, SuppressionRule

# The problem a file that cannot be read (or parsed in time) is reported as.
READ_PROBLEM = "SL000"


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
    if disabled is not None and finding.code != READ_PROBLEM:
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
    rules: list[Rule] = []
    # A rule that needs engines is checked only against engines the config implies or the
    # user names.
    engine_free = not config.runs_on_engines and primary.engines == ()
    chosen = options.rules if options.rules is not None else config_rules(engines=not engine_free)
    for module in chosen:
        rule = module.RULE
        if not selected(rule.code, options, config.path):
            continue
        if engine_free and rule.needs_engines:
            continue
        if config.unread_batch and rule.uses_micro_batch:
            continue  # the micro-batch would be the built-in default, not the file's
        rules.append(rule)
        tuned = options.rule_options.get(rule.code)
        with _stage(f"rule {rule.code}"):
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
    return _defer(out, rules)


@contextmanager
def _stage(where: str) -> Iterator[None]:
    """Name the stage in an `OverTime` raised in the block, so that a rule that runs past the
    budget is not reported as a file too complex to read (issue 26, failure 21)."""
    try:
        yield
    except OverTime as exc:
        exc.where = exc.where or where
        raise


def _defer(findings: list[Finding], rules: Sequence[Rule]) -> list[Finding]:
    """``findings`` without those whose rule defers to another rule's finding at the same
    value (`Rule.defers_to`): one value, one finding, in the words of the rule that knows
    more."""
    defers = {r.code: r.defers_to for r in rules if r.defers_to}
    if not defers:
        return findings
    said = {(f.code, f.span.start, f.span.end) for f in findings}
    return [
        f
        for f in findings
        if not any((code, f.span.start, f.span.end) in said for code in defers.get(f.code, ()))
    ]


def batch_understood(config: ModelConfig, options: LintOptions) -> ModelConfig:
    """``config`` without its batch keys no reader understood (`ModelConfig.unread_batch`)
    when a flag or the settings choose the micro-batch: only the built-in default would be a
    guess that the rules depending on it must not rest on."""
    if not config.unread_batch or resolve_fields(config, options)["micro_batch"][1] == "default":
        return config
    return replace(config, unread_batch=())


def lint_document(doc: Document, options: LintOptions) -> tuple[list[ModelConfig], list[Finding]]:
    """Configs and findings of one parsed document."""
    configs, kept, _ = lint_document_suppressed(doc, options)
    return configs, kept


def lint_document_suppressed(
    doc: Document, options: LintOptions
) -> tuple[list[ModelConfig], list[Finding], list[Suppressed]]:
    """Configs, findings, and the findings in-file comments suppressed, of one document:
    the rule stage of the pipeline, each scope of rules in `shapelint.rules.base.SCOPES`
    order."""

    def chosen(code: str) -> bool:
        return selected(code, options, doc.path)

    findings = [with_severity(f, options) for f in _problem_findings(doc) if chosen(f.code)]
    with _stage("the dialects that read its configs"):
        configs = dialects.extract(doc, options.extra_keys) if doc.ok else []
        if doc.ok and not configs:
            # a file that names its model's preset instead of stating it (engine.presets,
            # imported here: a file that states its shape needs none of the presets' tables)
            from shapelint.engine.presets import preset_configs

            configs = preset_configs(doc, options.extra_keys)
        configs = [batch_understood(c, options) for c in configs]
    if doc.ok:
        for module in rules_of("document"):
            if chosen(module.RULE.code):
                with _stage(f"rule {module.RULE.code}"):
                    found = cast("DocumentRule", module).check_document(
                        doc, configs, options.extra_keys
                    )
                    findings.extend(with_severity(f, options) for f in found)
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
    if options.report_unused_ignores and doc.suppressions:
        for module in rules_of("suppression"):
            if chosen(module.RULE.code):
                unused = cast("SuppressionRule", module).check_suppressions(
                    doc, findings, chosen, REGISTRY
                )
                kept.extend(with_severity(f, options) for f in unused)
    return configs, kept, suppressed


def unread_document(source: SourceFile, message: str) -> Document:
    """An empty document whose one problem says why ``source`` was not read."""
    doc = Document(path=source.path, text="", format=source.kind)
    doc.problems.append(Problem(READ_PROBLEM, message, LineIndex("").span(source.path, 0, 0)))
    return doc


def not_read(source: SourceFile, options: LintOptions, message: str) -> FileResult:
    """The result of a path that could not be read: its one SL000 finding is ``message``."""
    doc = unread_document(source, message)
    return _finish(source, doc, *lint_document_suppressed(doc, options), options, False)


def lint_source(
    source: SourceFile,
    options: LintOptions,
    cache: LintCache | None = None,
    *,
    data: bytes | None = None,
) -> FileResult:
    """The pipeline for one file: read it (`shapelint.engine.reading`), parse it within the
    budget, extract its configs, run the rules, apply suppressions and the baseline.

    ``data`` stands for the file's bytes when the caller has them (an editor's unsaved text,
    bytes already read); otherwise the file is read, and a file that cannot be read is an
    SL000 finding on it (``FileResult.read`` False). With ``cache``, a file unchanged since a
    run under the same options is not parsed again (a file over its time budget is never
    cached).
    """
    read = True
    if data is None:
        try:
            data = read_source(source.path, options.budget)
        except OSError as exc:
            return not_read(source, options, read_failure(source.path, exc))
    key = cache.key(source, data, options) if cache is not None else None
    if key is not None and cache is not None:
        hit = cache.get(key, source)
        if hit is not None:
            return hit
    try:
        with cpu_limit(options.budget.max_seconds_per_file):
            doc = parse(source.path, data, source.kind, options.budget)
            result = _finish(source, doc, *lint_document_suppressed(doc, options), options, read)
        if key is not None and cache is not None:
            cache.put(key, result)
        return result
    except OverTime as exc:
        return unparsed(source, options, exc.message, data)


def unparsed(
    source: SourceFile, options: LintOptions, message: str, data: bytes | None = None
) -> FileResult:
    """The result of a file that was read (``data``, or read again here) but not parsed:
    its one SL000 finding is ``message`` (over its time, or a worker that died on it). Never
    cached: time depends on the machine."""
    if data is None:
        try:
            data = read_source(source.path, options.budget)
        except OSError:
            data = b""
    doc = unread_document(source, message)
    doc.text = data.decode("utf-8", errors="replace")  # for the skip triage
    return _finish(source, doc, *lint_document_suppressed(doc, options), options, True)


def lint_parsed(source: SourceFile, doc: Document, options: LintOptions) -> FileResult:
    """The rest of the pipeline for a document already parsed (the fixer's verified text):
    rules, suppressions and the baseline, as `lint_source` runs them."""
    return _finish(source, doc, *lint_document_suppressed(doc, options), options, True)


def _stale_rule(options: LintOptions, path: str) -> Rule | None:
    """The rule that reports baseline entries matching nothing, when unused ignores are
    asked for and it is selected."""
    if not options.report_unused_ignores:
        return None
    return next(
        (m.RULE for m in rules_of("suppression") if selected(m.RULE.code, options, path)), None
    )


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
        findings = options.baseline.apply(source.path, findings, _stale_rule(options, source.path))
    from shapelint.engine.assumed import assumed_target

    targets = {c.name: assumed_target(c, options) for c in configs}
    from shapelint.dialects.shape_keys import matched_names

    keys = options.extra_keys
    matched = matched_names(doc, keys) if keys and doc.ok else frozenset()
    return FileResult(source, doc, configs, findings, targets, suppressed, keys, matched, read)


__all__ = [
    "READ_PROBLEM",
    "check_config",
    "lint_document",
    "lint_document_suppressed",
    "lint_parsed",
    "lint_source",
    "not_read",
    "unparsed",
    "unread_document",
]
