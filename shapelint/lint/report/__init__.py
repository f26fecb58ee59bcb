"""Output formats: each module exposes ``report(result, stream, context)``; `REPORTERS` names them.

Adding a format means one module and one line here; the runner and CLI never change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from shapelint.lint.runner import LintResult


@dataclass(frozen=True)
class ReportContext:
    """How to render: colours, fix details, and what was fixed when --fix ran."""

    color: bool = False
    show_fixes: bool = False
    verbose: bool = False
    quiet: bool = False
    statistics: bool = False
    fixed: int = 0


Reporter = Callable[[LintResult, TextIO, ReportContext], None]


def get_reporter(name: str) -> Reporter:
    """The reporter for a format name (imported only when used)."""
    if name == "text":
        from shapelint.lint.report.text import report as text_report

        return text_report
    if name == "json":
        from shapelint.lint.report.json import report as json_report

        return json_report
    raise KeyError(name)


FORMATS = ("text", "json")
