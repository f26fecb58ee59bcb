"""SARIF 2.1.0 report, for GitHub code scanning (``github/codeql-action/upload-sarif``).

One run: ``tool.driver`` describes shapelint and every rule that fired (with its rendered
documentation as help); each result points at a repo-relative URI under ``%SRCROOT%`` (the
``$GITHUB_WORKSPACE``, else the current directory), carries a ``partialFingerprints`` entry
that survives edits elsewhere in the file (a hash of code, path, key and config, never the
line), the fix as a SARIF replacement, the slowdown in the message text (GitHub shows only that)
and in ``properties``, with the target the config was estimated for.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

from shapelint import __version__
from shapelint.core.model import Finding
from shapelint.core.text import shown_path
from shapelint.engine.results import LintResult
from shapelint.report import ReportContext
from shapelint.report.text import message_with_estimate

if TYPE_CHECKING:
    from shapelint.engine.assumed import AssumedTarget

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/shapelint/shapelint"
RULES_DOC = "https://github.com/shapelint/shapelint/blob/main/docs/rules.md"
SRCROOT = "%SRCROOT%"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
# GitHub code scanning tags by rule family (`Rule.family`); any other family is "correctness".
TAGS = {"alignment": "performance", "batching": "performance"}


def source_root(env: Mapping[str, str] | None = None) -> str:
    """The directory result URIs are relative to: ``$GITHUB_WORKSPACE``, else the cwd."""
    env = os.environ if env is None else env
    return os.path.abspath(env.get("GITHUB_WORKSPACE") or os.getcwd())


def artifact_location(path: str, root: str) -> dict[str, str]:
    """A relative URI under ``%SRCROOT%`` for files inside ``root``, else an absolute file URI."""
    full = os.path.abspath(path)
    if os.path.commonpath([full, root]) == root:
        rel = Path(os.path.relpath(full, root)).as_posix()
        # Quoted from the name's bytes: a name that is not UTF-8 is a valid URI too (%FF).
        return {"uri": quote(os.fsencode(rel)), "uriBaseId": SRCROOT}
    return {"uri": Path(full).as_uri()}


def fingerprint(finding: Finding, rel_path: str) -> str:
    """Stable across edits that move the finding: code, path, key and config, not the line."""
    material = "\0".join((finding.code, rel_path, finding.key, finding.config))
    if not finding.key:  # a parse problem has no key: its message says what is wrong
        material += "\0" + finding.message
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:32]


def _rule(code: str) -> dict[str, Any]:
    from shapelint.rules import REGISTRY
    from shapelint.rules.render import render_rule

    module = REGISTRY[code]
    rule = module.RULE
    doc = (module.__doc__ or "").strip()
    full = doc.split("\n\n", 1)[1].strip() if "\n\n" in doc else rule.summary
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": full},
        "help": {
            "text": render_rule(module, markdown=False),
            "markdown": render_rule(module, markdown=True),
        },
        "helpUri": f"{RULES_DOC}#{rule.code.lower()}-{rule.name}",
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {"tags": [TAGS.get(rule.family, "correctness")]},
    }


def _region(finding: Finding) -> dict[str, int]:
    s = finding.span
    return {
        "startLine": s.line,
        "startColumn": s.column,
        "endLine": s.end_line,
        "endColumn": s.end_column,
    }


def _fix(finding: Finding, text: str | None, location: dict[str, str]) -> dict[str, Any] | None:
    if finding.fix is None or text is None:
        return None
    from shapelint.engine.fixer import edit_text

    replacements = []
    for edit in finding.fix.edits:
        s = edit.span
        replacements.append(
            {
                "deletedRegion": {
                    "startLine": s.line,
                    "startColumn": s.column,
                    "endLine": s.end_line,
                    "endColumn": s.end_column,
                },
                "insertedContent": {"text": edit_text(text, edit)},
            }
        )
    return {
        "description": {"text": f"{finding.fix.description} ({finding.fix.applicability})"},
        "artifactChanges": [{"artifactLocation": location, "replacements": replacements}],
    }


def _result(
    finding: Finding,
    rule_index: int,
    root: str,
    text: str | None,
    target: AssumedTarget | None = None,
) -> dict[str, Any]:
    location = artifact_location(finding.path, root)
    rel = location["uri"] if "uriBaseId" in location else shown_path(Path(finding.path).as_posix())
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": rule_index,
        "level": LEVELS[finding.severity],
        "message": {"text": message_with_estimate(finding)},
        "locations": [
            {"physicalLocation": {"artifactLocation": location, "region": _region(finding)}}
        ],
        "partialFingerprints": {"shapelint/v1": fingerprint(finding, rel)},
    }
    fix = _fix(finding, text, location)
    if fix is not None:
        result["fixes"] = [fix]
    props: dict[str, Any] = {}
    if finding.config:
        props["config"] = finding.config
    if target is not None:
        props["target"] = target.as_json()
    if finding.key:
        props["key"] = finding.key
    if finding.estimates:
        props["maxSlowdownPct"] = round(finding.max_slowdown, 3)
        props["estimates"] = [
            {
                "gpu": e.gpu,
                "slowdownPct": e.slowdown_pct,
                "stepTimeS": e.step_time_s,
                "fixedStepTimeS": e.fixed_step_time_s,
            }
            for e in finding.estimates
        ]
    if props:
        result["properties"] = props
    return result


def _suppression(reason: str) -> dict[str, str]:
    """A SARIF ``suppression`` for a finding an in-file comment hid, with its reason."""
    out = {"kind": "inSource", "status": "accepted"}
    if reason:
        out["justification"] = reason
    return out


def report_dict(result: LintResult, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The SARIF log as a dict."""
    root = source_root(env)
    findings = result.findings
    suppressed = [s for r in result.files for s in r.suppressed]
    codes = sorted({f.code for f in findings} | {s.finding.code for s in suppressed})
    index = {code: i for i, code in enumerate(codes)}
    texts = {r.doc.path: r.doc.text for r in result.files}
    targets = {(r.doc.path, name): t for r in result.files for name, t in r.targets.items()}
    notifications = [
        {
            "level": "error",
            "message": {"text": f"internal error while linting {shown_path(e.path)}: {e.error}"},
        }
        for e in result.errors
    ]
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "shapelint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [_rule(code) for code in codes],
            }
        },
        "originalUriBaseIds": {SRCROOT: {"uri": Path(root).as_uri() + "/"}},
        "invocations": [
            {
                "executionSuccessful": not result.errors,
                "toolExecutionNotifications": notifications,
            }
        ],
        "columnKind": "unicodeCodePoints",
        "results": [
            _result(f, index[f.code], root, texts.get(f.path), targets.get((f.path, f.config)))
            for f in findings
        ]
        + [
            {
                **_result(
                    s.finding,
                    index[s.finding.code],
                    root,
                    texts.get(s.finding.path),
                    targets.get((s.finding.path, s.finding.config)),
                ),
                "suppressions": [_suppression(s.reason)],
            }
            for s in suppressed
        ],
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def report(result: LintResult, stream: TextIO, ctx: ReportContext) -> None:
    """Write the SARIF log as one JSON document."""
    json.dump(report_dict(result), stream, indent=2, ensure_ascii=False)
    stream.write("\n")
