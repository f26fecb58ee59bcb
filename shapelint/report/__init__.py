"""Output formats: each module exposes ``report(result, stream, context)``; `REPORTERS` names them.

Adding a format means one module and one line here; the runner and CLI never change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from shapelint.engine.results import LintResult


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


# Format name → module; each module defines ``report``. Imported only when used.
_MODULES = {
    "text": "shapelint.report.text",
    "json": "shapelint.report.json",
    "github": "shapelint.report.github",
    "sarif": "shapelint.report.sarif",
}


def get_reporter(name: str) -> Reporter:
    """The reporter for a format name (imported only when used); KeyError for unknown names."""
    import importlib

    module = importlib.import_module(_MODULES[name])
    reporter: Reporter = module.report
    return reporter


FORMATS = tuple(_MODULES)
