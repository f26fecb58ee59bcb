"""Every rule's EXAMPLES, run as tests: valid ones are silent, reported ones fire and fix as shown."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import parse_text

from shapelint.lint import dialects
from shapelint.lint.fixer import apply_edits
from shapelint.lint.model import Finding
from shapelint.lint.runner import LintOptions, TargetOptions, lint_document, resolve_target
from shapelint.perf.gpus import lookup
from shapelint.rules import REGISTRY, RuleModule, fixable
from shapelint.rules.base import Example

CASES = [
    pytest.param(module, example, id=f"{code}-{i}-{'valid' if example.valid else 'reported'}")
    for code, module in sorted(REGISTRY.items())
    for i, example in enumerate(module.EXAMPLES, 1)
]


def findings_for(module: RuleModule, example: Example) -> tuple[str, list[Finding]]:
    path = "config.json" if example.format == "json" else f"config.{example.format}"
    doc = parse_text(example.text, example.format, path)
    # The target is resolved as the runner does: the example's target fields act as CLI flags
    # over the values the config itself states (micro-batch, sequence, tensor parallel).
    gpu = lookup("H100-SXM")
    options = LintOptions(gpus=(gpu,), flags=TargetOptions(**example.target))  # type: ignore[arg-type]
    if module.RULE.kind == "document":
        # Problems in the text itself (and unused ignores) come from the whole runner.
        everything = replace(options, min_slowdown=0.0, report_unused_ignores=True)
        _, found = lint_document(doc, everything)
        return doc.text, [f for f in found if f.code == module.RULE.code]
    out: list[Finding] = []
    for config in dialects.extract(doc):
        out.extend(module.check(config, resolve_target(config, gpu, options)))
    return doc.text, out


@pytest.mark.parametrize(("module", "example"), CASES)
def test_example(module: RuleModule, example: Example) -> None:
    text, found = findings_for(module, example)
    if example.valid:
        assert found == [], [f.message for f in found]
        return
    assert found, f"{module.RULE.code} did not fire"
    assert all(f.code == module.RULE.code for f in found)
    for f in found:
        assert text[f.span.start : f.span.end] != "" or module.RULE.kind == "document"
    if example.fixed is not None:
        fixes = [f.fix for f in found if f.fix is not None]
        assert fixes, "example promises a fix but none was offered"
        fixed = apply_edits(text, [e for fix in fixes for e in fix.edits])
        assert fixed == example.fixed
        _, again = findings_for(module, replace(example, text=fixed))
        assert again == [], "the fix did not resolve the finding"


def test_every_rule_has_valid_and_reported_examples() -> None:
    for code, module in REGISTRY.items():
        kinds = {e.valid for e in module.EXAMPLES}
        assert kinds == {True, False}, code
        assert module.__doc__ and "Source" in module.__doc__, code


def test_warnings_with_a_single_value_fix_are_fixable() -> None:
    for code in ("SL101", "SL102", "SL103", "SL104"):
        assert fixable(REGISTRY[code]), code
