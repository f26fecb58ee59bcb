"""GitHub Actions report: workflow commands that GitHub shows as annotations on the PR.

``::warning file=…,line=…,endLine=…,col=…,endColumn=…,title=shapelint SL101::message``, with
the escaping of ``@actions/core`` (``%``, CR and LF in messages; also ``:`` and ``,`` in
properties). GitHub shows at most 10 annotations of each level per step, so the costliest
findings come first (errors, then by estimated slowdown), 10 per level, and a plain line says
how many more there are; they are printed below it as plain text. When
``$GITHUB_STEP_SUMMARY`` is set, the full table is appended to the job summary as Markdown.
Paths are relative to ``$GITHUB_WORKSPACE`` when the file lies inside it.

Nothing a file name or a file holds can start a workflow command: annotations escape every
property and message; the plain lines (the findings past the limit, which name files) are
printed between ``::stop-commands::TOKEN`` and ``::TOKEN::`` with a random token, so the
runner processes no command inside them (GitHub's documented way to print untrusted text),
and each is one line with control characters escaped.
"""

from __future__ import annotations

import os
import secrets
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO
from urllib.parse import quote

from shapelint.core.model import Finding, Severity
from shapelint.core.text import clean, shown_path
from shapelint.engine.results import LintResult
from shapelint.report import ReportContext
from shapelint.report.text import (
    estimate_text,
    fix_text,
    format_finding,
    statistics_lines,
    summary,
    target_lines,
)

MAX_PER_LEVEL = 10
LEVELS = {"error": "error", "warning": "warning", "info": "notice"}
_RANK: dict[Severity, int] = {"error": 0, "warning": 1, "info": 2}


def escape_data(text: str) -> str:
    """Escape a command's message as ``@actions/core`` does."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a command property value (also ``:`` and ``,``, which delimit properties)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workspace_path(path: str, env: Mapping[str, str] | None = None) -> str:
    """``path`` relative to ``$GITHUB_WORKSPACE`` when inside it, with ``/`` separators."""
    env = os.environ if env is None else env
    workspace = env.get("GITHUB_WORKSPACE")
    if workspace:
        full = os.path.abspath(path)
        root = os.path.abspath(workspace)
        if os.path.commonpath([full, root]) == root:
            return Path(os.path.relpath(full, root)).as_posix()
    return Path(path).as_posix()


def message(finding: Finding) -> str:
    """The annotation text: message, estimate and fix."""
    text = finding.message
    est = estimate_text(finding)
    if est:
        text += f" [{est}]"
    if finding.fix is not None:
        label = "fix" if finding.fix.applicability == "safe" else "unsafe fix"
        text += f" ({label}: {fix_text(finding)})"
    return text


def command(finding: Finding, env: Mapping[str, str] | None = None) -> str:
    """One ``::level …::message`` workflow command for ``finding``."""
    span = finding.span
    props = [
        ("file", shown_path(workspace_path(finding.path, env), control=False)),
        ("line", str(span.line)),
        ("endLine", str(span.end_line)),
    ]
    if span.line == span.end_line:  # GitHub ignores columns on multi-line annotations
        props += [("col", str(span.column)), ("endColumn", str(span.end_column))]
    props.append(("title", f"shapelint {finding.code} {finding.name}"))
    joined = ",".join(f"{k}={escape_property(v)}" for k, v in props)
    return f"::{LEVELS[finding.severity]} {joined}::{escape_data(message(finding))}"


def by_cost(findings: Sequence[Finding]) -> list[Finding]:
    """Errors first, then the largest estimated slowdown; ties in file order."""
    return sorted(findings, key=lambda f: (_RANK[f.severity], -f.max_slowdown))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def step_summary(result: LintResult, env: Mapping[str, str] | None = None) -> str:
    """The job-summary Markdown: a heading, the summary line and every finding in a table."""
    env = os.environ if env is None else env
    findings = by_cost(result.findings)
    lines = ["## shapelint", "", summary(result, ReportContext()), ""]
    if not findings:
        return "\n".join(lines)
    repo, sha = env.get("GITHUB_REPOSITORY"), env.get("GITHUB_SHA")
    server = env.get("GITHUB_SERVER_URL", "https://github.com")
    lines += ["| | code | location | message | slowdown | fix |", "|---|---|---|---|---|---|"]
    icons = {"error": "❌", "warning": "⚠️", "info": "ℹ️"}
    for f in findings:
        path = shown_path(workspace_path(f.path, env)).replace("`", "'")
        where = f"{path}:{f.span.line}:{f.span.column}"
        if repo and sha:
            where = f"[{where}]({server}/{repo}/blob/{sha}/{quote(path)}#L{f.span.line})"
        else:
            where = f"`{where}`"
        slowdown = estimate_text(f) or "–"
        fix = "–"
        if f.fix is not None:
            how = (
                "safe, `--fix`" if f.fix.applicability == "safe" else "**unsafe**, `--unsafe-fixes`"
            )
            fix = f"{fix_text(f)} ({how})"
        lines.append(
            f"| {icons[f.severity]} | `{f.code}` {f.name} | {_cell(where)} | "
            f"{_cell(clean(f.message))} | {_cell(slowdown)} | {_cell(fix)} |"
        )
    targets = [t.replace("*", "\\*") for t in target_lines(result)]
    if targets:
        lines += ["", targets[0], "", *(f"- {t.strip()}" for t in targets[1:])]
    return "\n".join(lines) + "\n"


def report(result: LintResult, stream: TextIO, ctx: ReportContext) -> None:
    """Write annotations (10 per level, costliest first), the rest as text, and the summary."""
    env = os.environ
    shown: Counter[str] = Counter()
    rest: list[Finding] = []
    for f in by_cost(result.findings):
        if shown[f.severity] < MAX_PER_LEVEL:
            shown[f.severity] += 1
            stream.write(command(f) + "\n")
        else:
            rest.append(f)
    if rest:
        counts = Counter(f.severity for f in rest)
        parts = ", ".join(
            f"{counts[s]} {s}{'s' if counts[s] != 1 else ''}" for s in _RANK if counts[s]
        )
        where = " (all are in the job summary)" if env.get("GITHUB_STEP_SUMMARY") else ""
        stream.write(
            f"shapelint: {len(rest)} more findings not shown as annotations "
            f"(GitHub shows {MAX_PER_LEVEL} per level): {parts}{where}\n"
        )
        # File names and messages come from the files: no command may run from them.
        token = secrets.token_hex(16)
        stream.write(f"::stop-commands::{token}\n")
        for f in rest:
            stream.write(format_finding(f, ReportContext()) + "\n")
        stream.write(f"::{token}::\n")
    if ctx.statistics:
        for line in statistics_lines(result):
            stream.write(line + "\n")
    if not ctx.quiet:
        stream.write(summary(result, ctx) + "\n")
    summary_file = env.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        with open(summary_file, "a", encoding="utf-8") as fh:
            fh.write(step_summary(result, env) + "\n")
