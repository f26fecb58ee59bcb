"""A ``# shapelint: ignore`` comment that suppresses nothing.

Guideline: a suppression comment should hide a finding that is reported on its line. Once the
value is fixed, or the comment sits on a line no rule points at, the comment only hides the
next real problem on that line, unannounced. Remove it, or narrow ``ignore`` to the codes that
still fire. Reported only with ``--report-unused-ignores``; codes that are not selected in this
run (``--select``/``--ignore``) are never called unused, and unknown codes always are.

A comment in a shell script that cannot stand where it is written is reported always, by the
shell reader: on a line a command continues from, a comment ends the command (bash reads
``\\`` and a space as an escaped space, and a backslash after the comment as part of it), so
the next line runs as a command of its own and the ignore is not applied. Written in
backquotes before the backslash, ```# shapelint: ignore[SL104]` \\``, the comment is a
command substitution that expands to nothing: the command goes on and the ignore applies.

Source: the same practice as ruff's RUF100 (unused ``noqa``) and mypy's
``--warn-unused-ignores``; for shell, the Bash Reference Manual, 3.1.2.1 Escape Character (a
backslash keeps the next character literal, a newline after it continues the line) and 3.1.3
Comments (a word beginning with ``#`` and the rest of its line are ignored).
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
    source="ruff RUF100; mypy --warn-unused-ignores; bash manual, Comments and Escape Character",
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
    Example(
        "torchrun pretrain_gpt.py --num-layers 24 --hidden-size 2048 --num-attention-heads 16 \\\n"
        "    --ffn-hidden-size 5461 `# shapelint: ignore[SL104]` \\\n"
        "    --micro-batch-size 4\n",
        valid=True,
        format="shell",
        note="in backquotes, the comment may stand on a line the command continues from",
    ),
    Example(
        "torchrun pretrain_gpt.py --num-layers 24 --hidden-size 2048 --num-attention-heads 16 \\\n"
        "    --ffn-hidden-size 5461 \\  # shapelint: ignore[SL104]\n"
        "    --micro-batch-size 4\n",
        valid=False,
        format="shell",
        note="`\\ ` is an escaped space, not a line continuation: the comment ends the command",
        expect=(Expect(2, "# shapelint: ignore[SL104]", "this comment ends the command"),),
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
