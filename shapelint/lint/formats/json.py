"""JSON reader with exact positions.

The standard library decides validity and reports syntax errors (so line and column match
what users see from ``python -m json.tool``); a small recursive-descent pass then walks the
same text to record the `Span` of every key and value. Values are built with the same
primitives ``json.loads`` uses, so they compare equal to its result.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]  # untyped in typeshed

from shapelint.lint.source import (
    Candidate,
    Document,
    Entry,
    LineIndex,
    Mapping,
    Node,
    Problem,
    Scalar,
    Sequence,
    Span,
)

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_CONSTANTS: dict[str, object] = {
    "true": True,
    "false": False,
    "null": None,
    "NaN": float("nan"),
    "Infinity": float("inf"),
    "-Infinity": float("-inf"),
}
# Deeply nested input would exhaust Python's recursion; json.loads fails on it too.
_MAX_DEPTH = 500
# Python refuses to convert longer digit strings to int (sys.get_int_max_str_digits).
_MAX_DIGITS = 4300


def _too_many_digits(digits: int) -> str:
    return f"a number too large to convert ({digits} digits; Python converts at most {_MAX_DIGITS})"


class _Invalid(Exception):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


class _Parser:
    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self.index = LineIndex(text)
        self.problems: list[Problem] = []

    def span(self, start: int, end: int) -> Span:
        return self.index.span(self.path, start, end)

    def skip(self, pos: int) -> int:
        m = _WS.match(self.text, pos)
        return m.end() if m else pos

    def value(self, pos: int, key_path: str, depth: int) -> tuple[Node, int]:
        if depth > _MAX_DEPTH:
            raise _Invalid("nesting too deep", pos)
        text = self.text
        ch = text[pos : pos + 1]
        if ch == "{":
            return self.obj(pos, key_path, depth)
        if ch == "[":
            return self.array(pos, key_path, depth)
        if ch == '"':
            s, end = scanstring(text, pos + 1, True)
            return Scalar(s, self.span(pos, end)), end
        for word, const in _CONSTANTS.items():
            if text.startswith(word, pos):
                end = pos + len(word)
                return Scalar(const, self.span(pos, end)), end
        m = _NUMBER.match(text, pos)
        if m:
            integer, frac, exp = m.groups()
            if frac or exp:
                number: object = float(integer + (frac or "") + (exp or ""))
            elif len(integer) > _MAX_DIGITS:
                raise _Invalid(_too_many_digits(len(integer.lstrip("-"))), pos)
            else:
                number = int(integer)
            return Scalar(number, self.span(pos, m.end())), m.end()
        raise _Invalid("expected a value", pos)

    def obj(self, start: int, key_path: str, depth: int) -> tuple[Mapping, int]:
        text = self.text
        entries: list[Entry] = []
        seen: dict[str, Span] = {}
        pos = self.skip(start + 1)
        if text[pos : pos + 1] == "}":
            return Mapping((), self.span(start, pos + 1)), pos + 1
        while True:
            if text[pos : pos + 1] != '"':
                raise _Invalid("expected a key", pos)
            key, key_end = scanstring(text, pos + 1, True)
            key_span = self.span(pos, key_end)
            pos = self.skip(key_end)
            if text[pos : pos + 1] != ":":
                raise _Invalid("expected ':'", pos)
            pos = self.skip(pos + 1)
            child_path = f"{key_path}.{key}" if key_path else key
            node, pos = self.value(pos, child_path, depth + 1)
            if key in seen:
                first = seen[key]
                self.problems.append(
                    Problem(
                        "SL001",
                        f"duplicate key '{child_path}' (first at line {first.line}); "
                        "JSON readers keep only the last value",
                        key_span,
                        child_path,
                    )
                )
            seen[key] = key_span
            entries.append(Entry(key, key_span, node))
            pos = self.skip(pos)
            ch = text[pos : pos + 1]
            if ch == ",":
                pos = self.skip(pos + 1)
                continue
            if ch == "}":
                return Mapping(tuple(entries), self.span(start, pos + 1)), pos + 1
            raise _Invalid("expected ',' or '}'", pos)

    def array(self, start: int, key_path: str, depth: int) -> tuple[Sequence, int]:
        text = self.text
        items: list[Node] = []
        pos = self.skip(start + 1)
        if text[pos : pos + 1] == "]":
            return Sequence((), self.span(start, pos + 1)), pos + 1
        while True:
            node, pos = self.value(pos, f"{key_path}[{len(items)}]", depth + 1)
            items.append(node)
            pos = self.skip(pos)
            ch = text[pos : pos + 1]
            if ch == ",":
                pos = self.skip(pos + 1)
                continue
            if ch == "]":
                return Sequence(tuple(items), self.span(start, pos + 1)), pos + 1
            raise _Invalid("expected ',' or ']'", pos)


def parse_json(path: str, text: str) -> Document:
    """Parse JSON text into a `Document`; syntax errors become an SL000 problem, not a raise."""
    doc = Document(path=path, text=text, format="json")
    index = LineIndex(text)
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        offset = min(exc.pos, len(text))
        span = index.span(path, offset, offset)
        doc.problems.append(Problem("SL000", f"invalid JSON: {exc.msg}", span))
        return doc
    except RecursionError:
        doc.problems.append(
            Problem("SL000", "invalid JSON: nesting too deep", index.span(path, 0, 0))
        )
        return doc
    except ValueError:  # an integer over Python's digit limit; the parser below finds where
        pass
    parser = _Parser(text, path)
    try:
        pos = parser.skip(0)
        root, _ = parser.value(pos, "", 0)
    except _Invalid as exc:  # a depth or digit limit (or our bug: json.loads accepted it)
        span = index.span(path, exc.offset, exc.offset)
        doc.problems.append(Problem("SL000", f"invalid JSON: {exc}", span))
        return doc
    doc.problems.extend(parser.problems)
    if isinstance(root, Mapping):
        doc.candidates.append(Candidate(name="", root=root))
    return doc
