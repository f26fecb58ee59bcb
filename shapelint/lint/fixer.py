"""Apply fixes: edits to spans of the original text, spliced from the end of the file.

Only the characters of each edited value change; everything else in the file — comments,
key order, quoting, indentation, line endings — is left byte for byte as it was.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from shapelint.lint.model import Edit


class OverlappingEditsError(ValueError):
    """Two edits of one file touch the same characters."""


_UNDERSCORED = re.compile(r"^[+-]?\d{1,3}(_\d{3})+$")


def render(old_text: str, new: object) -> str:
    """The text for ``new`` written in the style of ``old_text``.

    Quotes are kept (``"50257"`` → ``"50304"``), digit grouping with underscores is kept
    (``50_257`` → ``50_304``), and anything else is the plain literal.
    """
    if isinstance(new, bool) or not isinstance(new, int):
        return str(new)
    if len(old_text) >= 2 and old_text[0] == old_text[-1] and old_text[0] in "\"'":
        return f"{old_text[0]}{new}{old_text[0]}"
    if _UNDERSCORED.match(old_text.strip()):
        return f"{new:_d}"
    return str(new)


def edit_text(text: str, edit: Edit) -> str:
    """The replacement text of one edit against the file's text."""
    if edit.text is not None:
        return edit.text
    return render(text[edit.span.start : edit.span.end], edit.new)


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Splice all edits into ``text`` from the end backwards; refuse overlapping edits.

    Identical edits (the same span and new value, e.g. one value reported by two configs that
    share it) are applied once.
    """
    unique: dict[tuple[int, int], Edit] = {}
    for e in edits:
        key = (e.span.start, e.span.end)
        prior = unique.get(key)
        if prior is not None and (prior.new != e.new or prior.text != e.text):
            raise OverlappingEditsError(f"two different edits of {e.key} at line {e.span.line}")
        unique[key] = e
    ordered = sorted(unique.values(), key=lambda e: e.span.start, reverse=True)
    for later, earlier in zip(ordered, ordered[1:]):
        if earlier.span.end > later.span.start:
            raise OverlappingEditsError(
                f"edits of {earlier.key} and {later.key} overlap at line {later.span.line}"
            )
    out = text
    for e in ordered:
        out = out[: e.span.start] + edit_text(text, e) + out[e.span.end :]
    return out
