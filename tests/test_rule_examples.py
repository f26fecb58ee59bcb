"""Every rule's EXAMPLES, run through the real runner and fixer (as Fixit runs its examples).

A valid example produces no finding of its rule and no fix; a reported one produces exactly
the findings its ``expect`` states (line, the text the range covers, a part of the message),
and ``--unsafe-fixes`` turns it into ``fixed`` — or leaves it untouched when the example
promises no fix, so an unexpected fix fails.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import parse_text

from shapelint.core.model import Finding
from shapelint.core.source import Document
from shapelint.engine.fixer import fix_document
from shapelint.engine.options import LintOptions, TargetOptions
from shapelint.engine.pipeline import lint_document
from shapelint.hardware.gpus import lookup
from shapelint.rules import REGISTRY, RuleModule, fixable
from shapelint.rules.base import Example

CASES = [
    pytest.param(module, example, id=f"{code}-{i}-{'valid' if example.valid else 'reported'}")
    for code, module in sorted(REGISTRY.items())
    for i, example in enumerate(module.EXAMPLES, 1)
]
GPU = lookup("H100-SXM")


def document(example: Example) -> Document:
    path = "config.json" if example.format == "json" else f"config.{example.format}"
    return parse_text(example.text, example.format, path)


def options_for(example: Example, **changes: object) -> LintOptions:
    # The example's target fields act as CLI flags over the values the config states.
    options = LintOptions(
        gpus=(GPU,),
        flags=TargetOptions(**example.target),  # type: ignore[arg-type]
        # Examples pin what a rule reports, whatever the estimate says (SL103's bigger hidden
        # size is estimated slower per step, which --min-slowdown would hide).
        min_slowdown=float("-inf"),
        report_unused_ignores=True,
    )
    return replace(options, **changes)  # type: ignore[arg-type]


def findings_for(module: RuleModule, example: Example) -> list[Finding]:
    """The rule's findings on the example, from the whole runner (every rule runs, so that
    SL008 sees what the others report)."""
    _, found = lint_document(document(example), options_for(example))
    found = [f for f in found if f.code == module.RULE.code]
    return sorted(found, key=lambda f: (f.span.line, f.span.column))


def fixed_text(module: RuleModule, example: Example) -> str:
    """The example after ``--unsafe-fixes`` with only this rule selected."""
    only = options_for(example, select=(module.RULE.code,))
    return fix_document(document(example), only, unsafe=True).text


@pytest.mark.parametrize(("module", "example"), CASES)
def test_example(module: RuleModule, example: Example) -> None:
    found = findings_for(module, example)
    if example.valid:
        assert found == [], [f.message for f in found]
        assert fixed_text(module, example) == example.text
        return
    assert example.expect, "a reported example states the findings it expects"
    text = document(example).text
    got = [(f.span.line, text[f.span.start : f.span.end], f.message) for f in found]
    assert len(got) == len(example.expect), got
    for (line, at, message), want in zip(got, example.expect, strict=True):
        assert (line, at) == (want.line, want.at), got
        assert want.message in message, message
    fixed = fixed_text(module, example)
    if example.fixed is None:
        assert fixed == example.text, "a fix appeared that the example does not promise"
        return
    assert fixed == example.fixed
    assert findings_for(module, replace(example, text=fixed)) == [], "the fix did not resolve it"


def test_every_rule_has_valid_and_reported_examples() -> None:
    for code, module in REGISTRY.items():
        kinds = {e.valid for e in module.EXAMPLES}
        assert kinds == {True, False}, code
        assert module.__doc__ and "Source" in module.__doc__, code


def test_warnings_with_a_single_value_fix_are_fixable() -> None:
    for code in ("SL101", "SL102", "SL103", "SL104"):
        assert fixable(REGISTRY[code]), code
