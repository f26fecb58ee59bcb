"""Machine-readable report: one JSON object, the stable contract documented in docs/output.md.

``{"$schema": …, "version": 1, "findings": [...], "configs": [...]}``, valid against the
shipped schema (`shapelint.report.schemas`); field names never change within a version.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from shapelint.core.model import Finding, ModelConfig
from shapelint.core.text import json_value, shown_path
from shapelint.engine.results import LintResult
from shapelint.report import ReportContext
from shapelint.report.schemas import VERSIONS, stamped
from shapelint.report.text import message_with_estimate

VERSION = VERSIONS["check"]


def finding_json(f: Finding) -> dict[str, Any]:
    """One finding in the contract's shape."""
    fix = None
    if f.fix is not None:
        fix = {
            "applicability": f.fix.applicability,
            "description": f.fix.description,
            "edits": [
                {
                    "key": e.key,
                    "old": json_value(e.old),
                    "new": json_value(e.new),
                    "line": e.span.line,
                    "column": e.span.column,
                }
                for e in f.fix.edits
            ],
        }
    return {
        "code": f.code,
        "name": f.name,
        "severity": f.severity,
        "path": shown_path(f.path),
        "line": f.span.line,
        "column": f.span.column,
        "end_line": f.span.end_line,
        "end_column": f.span.end_column,
        "config": f.config,
        "key": f.key,
        "value": json_value(f.value),
        "message": message_with_estimate(f),
        "estimates": [
            {
                "gpu": e.gpu,
                "slowdown_pct": e.slowdown_pct,
                "step_time_s": e.step_time_s,
                "fixed_step_time_s": e.fixed_step_time_s,
            }
            for e in f.estimates
        ],
        "fix": fix,
    }


def config_json(c: ModelConfig) -> dict[str, Any]:
    """One config: where it is, its dialect, every dim it states or implies, and which
    reader (dialect or key family) supplied each dim; for dims the key lexicon read by the
    words of their keys (source ``lexicon``), ``lexicon_keys`` names the key of each."""
    out = {
        "path": shown_path(c.path),
        "name": c.name,
        "dialect": c.dialect,
        "dims": {dim.value: json_value(v.value) for dim, v in c.dims.items() if v.known},
        "sources": {
            dim.value: c.sources.get(dim, c.dialect) for dim, v in c.dims.items() if v.known
        },
    }
    lexicon = {
        dim.value: v.key
        for dim, v in c.dims.items()
        if v.known and c.sources.get(dim, c.dialect) == "lexicon"
    }
    if lexicon:
        out["lexicon_keys"] = lexicon
    return out


def report_dict(result: LintResult) -> dict[str, Any]:
    """The whole report as a dict."""
    return stamped(
        "check",
        {
            "findings": [finding_json(f) for f in result.findings],
            "configs": [
                {**config_json(c), "target": r.targets[c.name].as_json()}
                if c.name in r.targets
                else config_json(c)
                for r in result.files
                for c in r.configs
            ],
        },
    )


def report(result: LintResult, stream: TextIO, ctx: ReportContext) -> None:
    """Write the report as one JSON object."""
    json.dump(report_dict(result), stream, indent=2, ensure_ascii=False)
    stream.write("\n")
