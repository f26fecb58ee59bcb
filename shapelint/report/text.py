"""Human-readable report.

One line per finding: ``path:line:col: CODE [severity] message [+X% step time on GPU]
(fix: old → new)``. The severity follows the code in brackets: ``path:line:col: CODE`` stays
the prefix that ruff's concise output, editors' problem matchers and ``grep ': SL101'`` rely on,
and ``[error]`` / ``[warning]`` / ``[info]`` is one token to grep for, shown as the settings'
``[tool.shapelint.severity]`` left it.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, TextIO

from shapelint.core.model import CAPACITY_DIMS, Dim, Finding
from shapelint.core.text import clean, shown_path
from shapelint.engine.results import LintResult
from shapelint.report import ReportContext

if TYPE_CHECKING:
    from shapelint.engine.fixer import FixRun

_COLORS = {"error": "31", "warning": "33", "info": "36", "code": "1", "path": "1", "dim": "2"}


def _c(text: str, what: str, ctx: ReportContext) -> str:
    return f"\x1b[{_COLORS[what]}m{text}\x1b[0m" if ctx.color else text


# A fix that sets one of these changes how many tokens a step processes; its estimate compares
# time per token (perf.estimate.estimate_fix), and the report says so.
_TARGET_DIMS = frozenset({Dim.MICRO_BATCH, Dim.SEQ_LEN, Dim.TP})


def estimate_text(finding: Finding) -> str:
    """``+3.1% step time on H100-SXM, +2.4% on A100-SXM-80GB`` (empty without estimates);
    ``time per FLOP`` for fixes that change the model's capacity (`CAPACITY_DIMS`), ``time per
    token`` for fixes that change the micro-batch, sequence length or tp."""
    fixed = {d for d, _ in finding.fix.dims} if finding.fix is not None else set()
    if fixed & CAPACITY_DIMS:
        measure = " time per FLOP"
    elif fixed & _TARGET_DIMS:
        measure = " time per token"
    else:
        measure = " step time"
    parts = []
    for i, e in enumerate(finding.estimates):
        what = measure if i == 0 else ""
        parts.append(f"{e.slowdown_pct:+.1f}%{what} on {e.gpu}")
    return ", ".join(parts)


def fix_text(finding: Finding) -> str:
    """``vocab_size 50257 → 50304`` for each edit of the finding's fix."""
    if finding.fix is None:
        return ""
    return ", ".join(f"{e.key} {e.old} → {e.new}" for e in finding.fix.edits)


def applied_lines(run: FixRun) -> list[str]:
    """``path:line:col: CODE key old → new`` for each edit that --fix applied (--show-fixes)."""
    out = []
    for file_fix, finding in run.applied:
        assert finding.fix is not None
        for e in finding.fix.edits:
            where = f"{shown_path(file_fix.path)}:{e.span.line}:{e.span.column}:"
            out.append(f"{where} {finding.code} {e.key} {e.old} → {e.new}")
    return out


def format_finding(finding: Finding, ctx: ReportContext) -> str:
    """One finding as one line."""
    path = shown_path(finding.path)
    where = _c(f"{path}:{finding.span.line}:{finding.span.column}:", "path", ctx)
    code = _c(f"{finding.code} [{finding.severity}]", finding.severity, ctx)
    line = f"{where} {code} {clean(finding.message)}"
    est = estimate_text(finding)
    if est:
        line += f" [{est}]"
    if finding.fix is not None:
        label = "fix" if finding.fix.applicability == "safe" else "unsafe fix"
        line += _c(f" ({label}: {fix_text(finding)})", "dim", ctx)
    if finding.config and ctx.verbose:
        line += _c(f" [config {finding.config}]", "dim", ctx)
    return line


def plural(n: int, noun: str) -> str:
    """``1 config``, ``2 configs``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def summary(result: LintResult, ctx: ReportContext) -> str:
    """The closing line: counts by severity, files, and what --fix could do."""
    findings = result.findings
    files = len(result.files)
    configs = len(result.configs)
    if not findings:
        where = f"{plural(configs, 'config')} in {plural(files, 'file')}"
        # "All checks passed" only when every file found was checked.
        unchecked = [
            f"{plural(len(result.errors), 'file')} not checked (internal error)"
            for _ in result.errors[:1]
        ] + [
            f"{plural(len(result.skipped), 'file')} skipped (-v lists them)"
            for _ in result.skipped[:1]
        ]
        if not configs:  # nothing was checked: not a pass
            found = f"No model configs found in {plural(files, 'file')}"
            return f"{found}; {'; '.join(unchecked)}." if unchecked else f"{found}."
        if unchecked:
            return f"No problems found in {where}; {'; '.join(unchecked)}."
        return f"All checks passed ({where})."
    by = Counter(f.severity for f in findings)
    counts = ", ".join(
        f"{by[s]} {s}{'s' if by[s] != 1 else ''}" for s in ("error", "warning", "info") if by[s]
    )
    noun = "problem" if len(findings) == 1 else "problems"
    where = f"{plural(configs, 'config')} in {plural(files, 'file')}"
    text = f"Found {len(findings)} {noun} ({counts}) in {where}."
    safe = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "safe")
    unsafe = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "unsafe")
    if safe:
        text += f" {safe} fixable with --fix."
    if unsafe:
        text += f" {unsafe} more with --unsafe-fixes."
    return text


def message_with_estimate(finding: Finding) -> str:
    """The finding's message followed by its slowdown, ``… [+19.3% step time on H100-SXM]``
    (what JSON and SARIF messages carry, so a viewer that shows only the text shows the cost)."""
    est = estimate_text(finding)
    return f"{finding.message} [{est}]" if est else finding.message


def target_lines(result: LintResult, every: bool = False) -> list[str]:
    """What the configs with findings (``every``: all configs) were estimated for, once each:
    one line when they share a target, else one per config; ``*`` marks a built-in default."""
    rows: list[tuple[str, str]] = []
    for r in result.files:
        reported = {f.config for f in r.findings}
        for c in r.configs:
            assumed = r.targets.get(c.name)
            if assumed is not None and (every or c.name in reported):
                path = shown_path(c.path)
                label = f"{path} ({clean(c.name)})" if c.name else path
                rows.append((label, assumed.text()))
    if not rows:
        return []
    legend = "* = built-in default; choose with flags or [tool.shapelint]"
    if len({text for _, text in rows}) == 1:
        return [f"Estimated for: {rows[0][1]} ({legend})"]
    return [f"Estimated for ({legend}):"] + [f"  {label}: {text}" for label, text in rows]


def statistics_lines(result: LintResult) -> list[str]:
    """``--statistics``: findings per rule, then the findings in-file comments suppressed,
    per rule and reason (``# shapelint: ignore[SL102] -- checkpoint fixed``)."""
    out = []
    counts = Counter((f.code, f.name) for f in result.findings)
    for (code, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        out.append(f"{n:5d}  {code}  {name}")
    hidden = Counter(
        (s.finding.code, s.finding.name, s.reason) for r in result.files for s in r.suppressed
    )
    if hidden:
        out.append("Suppressed in the files:")
        for (code, name, reason), n in sorted(hidden.items(), key=lambda kv: (-kv[1], kv[0])):
            why = f"  -- {reason}" if reason else "  (no reason given)"
            out.append(f"{n:5d}  {code}  {name}{why}")
    return out


def report(result: LintResult, stream: TextIO, ctx: ReportContext) -> None:
    """Write every finding, the targets they were estimated for, optional statistics, and a
    summary line."""
    findings = result.findings
    if not ctx.quiet or findings:
        for f in findings:
            stream.write(format_finding(f, ctx) + "\n")
    if not ctx.quiet:
        for line in target_lines(result, every=ctx.verbose):
            stream.write(_c(line, "dim", ctx) + "\n")
    if ctx.statistics:
        for line in statistics_lines(result):
            stream.write(line + "\n")
    if ctx.fixed:
        noun = "problem" if ctx.fixed == 1 else "problems"
        stream.write(f"Fixed {ctx.fixed} {noun}; {len(findings)} remaining.\n")
    if not ctx.quiet:
        stream.write(summary(result, ctx) + "\n")
