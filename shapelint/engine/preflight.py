"""Before ``explain`` models a config: the errors that say it cannot run at all.

A config whose heads do not divide by the tensor-parallel size, or whose hidden size is zero,
describes no model a framework would build; explaining its GEMMs would present numbers for
something that cannot run. ``explain`` runs the pipeline with only the rules whose errors say
so (`Rule.breaks_model`), prints those errors first and stops (exit 1) unless ``--force`` is
given.
"""

from __future__ import annotations

from dataclasses import replace

from shapelint.core.model import Finding
from shapelint.engine.options import LintOptions
from shapelint.engine.results import FileResult


def preflight_options(options: LintOptions) -> LintOptions:
    """``options`` narrowed to the rules whose errors mean the config does not describe a
    working model, none of them ignored, and no unused-ignore reporting."""
    from shapelint.rules import REGISTRY

    codes = tuple(code for code, m in sorted(REGISTRY.items()) if m.RULE.breaks_model)
    return replace(options, select=codes, ignore=(), report_unused_ignores=False)


def config_errors(result: FileResult, names: set[str] | None = None) -> list[Finding]:
    """The errors of a file linted under `preflight_options` that concern the configs named
    in ``names`` (every config when None), in file order."""
    out = [
        f
        for f in result.findings
        if f.severity == "error" and (names is None or not f.config or f.config in names)
    ]
    return sorted(out, key=lambda f: (f.span.line, f.span.column, f.code))


__all__ = ["config_errors", "preflight_options"]
