"""A ``# shapelint: ignore`` comment that suppresses nothing.

Guideline: a suppression comment should hide a finding that is reported on its line. Once the
value is fixed, or the comment sits on a line no rule points at, the comment only hides the
next real problem on that line, unannounced. Remove it, or narrow ``ignore`` to the codes that
still fire. Reported only with ``--report-unused-ignores``; codes that are not selected in this
run (``--select``/``--ignore``) are never called unused, and unknown codes always are.

Source: the same practice as ruff's RUF100 (unused ``noqa``) and mypy's
``--warn-unused-ignores``.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable

from shapelint.core.model import Finding
from shapelint.core.source import SUPPRESSION, Document, LineIndex
from shapelint.rules.base import Example, Expect, Rule

RULE = Rule(
    code="SL008",
    name="unused-ignore",
    severity="warning",
    summary="a `# shapelint: ignore` comment suppresses nothing on its line",
    source="ruff RUF100; mypy --warn-unused-ignores",
    family="model",
    scope="suppression",
)


EXAMPLES = [
    Example(
        "hidden_size: 768\nnum_attention_heads: 12\n"
        "vocab_size: 50257  # shapelint: ignore[SL101]\n",
        valid=True,
        format="yaml",
        note="the comment hides the SL101 finding on its line",
    ),
    Example(
        "hidden_size: 768  # shapelint: ignore[SL101]\nnum_attention_heads: 12\n"
        "vocab_size: 50304\n",
        valid=False,
        format="yaml",
        note="no SL101 finding points at `hidden_size`",
        expect=(Expect(1, "# shapelint: ignore[SL101]", "`# shapelint"),),
    ),
]


def _comment_span(doc: Document, index: LineIndex, line: int) -> tuple[int, int]:
    """Offsets of the last suppression comment on ``line`` (the whole line if none is seen)."""
    start = index.offset(line, 1)
    end = doc.text.find("\n", start)
    end = len(doc.text) if end == -1 else end
    found = list(SUPPRESSION.finditer(doc.text, start, end))
    if not found:
        return start, end
    return found[-1].start(), found[-1].end()


def check_suppressions(
    doc: Document,
    raw: Iterable[Finding],
    is_selected: Callable[[str], bool],
    known: Container[str],
) -> list[Finding]:
    """SL008 findings for ``doc``'s suppressions, given the findings before suppression
    (``known``: every rule code; any other code in a comment is unknown)."""
    on_line: dict[int, set[str]] = {}
    for f in raw:
        on_line.setdefault(f.span.line, set()).add(f.code)
    index = LineIndex(doc.text)
    out: list[Finding] = []
    for line, codes in sorted(doc.suppressions.items()):
        fired = on_line.get(line, set())
        if not codes:
            if fired:
                continue
            message = "`# shapelint: ignore` suppresses nothing on this line"
        else:
            unknown = sorted(c for c in codes if c not in known)
            unused = sorted(c for c in codes if c in known and c not in fired and is_selected(c))
            if not unknown and not unused:
                continue
            parts = []
            if unused:
                parts.append(f"no {', '.join(unused)} finding on this line")
            if unknown:
                parts.append(f"unknown code {', '.join(unknown)}")
            message = f"`# shapelint: ignore[...]` suppresses nothing: {'; '.join(parts)}"
        start, end = _comment_span(doc, index, line)
        out.append(
            Finding(
                code=RULE.code,
                name=RULE.name,
                severity=RULE.severity,
                message=message,
                path=doc.path,
                span=index.span(doc.path, start, end),
            )
        )
    return out
