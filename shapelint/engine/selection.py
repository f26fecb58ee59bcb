"""Which rule codes a file is checked with, and at what severity: ``select``, ``ignore``,
``per-file-ignores`` and the settings' ``[severity]`` table, all by code or code prefix."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import replace

from shapelint.core.model import Finding
from shapelint.engine.discover import as_posix
from shapelint.engine.options import LintOptions


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


__all__ = ["matches", "selected", "severity_override", "with_severity"]
