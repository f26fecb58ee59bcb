"""Before ``explain`` models a config: the SL0xx errors that say it cannot run at all.

A config whose heads do not divide by the tensor-parallel size, or whose hidden size is zero,
describes no model a framework would build; explaining its GEMMs would present numbers for
something that cannot run. ``explain`` prints these errors first and stops (exit 1) unless
``--force`` is given.
"""

from __future__ import annotations

from dataclasses import replace

from shapelint.core.model import Finding, ModelConfig
from shapelint.core.source import Document
from shapelint.engine.options import LintOptions
from shapelint.engine.runner import lint_document


def explain_errors(path: str, options: LintOptions, configs: list[ModelConfig]) -> list[Finding]:
    """The SL0xx errors of the file at ``path`` that concern ``configs`` (the ones explained)."""
    from shapelint.engine.discover import kind_of
    from shapelint.readers import parse

    kind = kind_of(path)
    if kind is None:
        return []
    with open(path, "rb") as fh:
        doc = parse(path, fh.read(), kind)
    return config_errors(doc, options, {c.name for c in configs})


def config_errors(
    doc: Document, options: LintOptions, names: set[str] | None = None
) -> list[Finding]:
    """The SL0xx errors of ``doc`` under ``options`` (its configs named in ``names`` only,
    when given), in file order."""
    only_errors = replace(options, select=("SL0",), ignore=(), report_unused_ignores=False)
    _, found = lint_document(doc, only_errors)
    out = [
        f
        for f in found
        if f.severity == "error" and (names is None or not f.config or f.config in names)
    ]
    return sorted(out, key=lambda f: (f.span.line, f.span.column, f.code))


__all__ = ["config_errors", "explain_errors"]
