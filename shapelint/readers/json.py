"""JSON reader with exact positions.

A small recursive-descent pass walks the text to record the `Span` of every key and value;
values are built with the same primitives ``json.loads`` uses (``scanstring``, the same
number grammar and constants), so they compare equal to its result. When it refuses a text,
the standard library is asked why, so a syntax error's message, line and column are what
users see from ``python -m json.tool``. Bulk data (a container past `_MAX_ENTRIES`
entries) is decoded by the standard library's C scanner as one value, so a large file costs
about what ``json.load`` does.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]  # untyped in typeshed

from shapelint.core.source import (
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


# Bulk data (a long list of token ids, an id2label table) is no model config: a container
# past this many entries, or any container once the file has this many nodes, is read by
# the standard library's C scanner as one opaque value with one span (no spans inside it,
# no duplicate-key check inside it). Keeps a 20 MB file's read near json.load's time.
_MAX_ENTRIES = 1_000
_MAX_NODES = 100_000
# The top-level object is the config: it is read entry by entry up to this many keys (a
# config.json with 1,200 keys is still a config); a larger one (a tokenizer's vocab.json) is
# read as bulk data, and the file is reported as not read as a config rather than passed.
_MAX_ROOT_ENTRIES = 10_000


class _Bulk(Exception):
    """A container too big to index node by node."""


class _Parser:
    def __init__(self, text: str, path: str, index: LineIndex) -> None:
        self.text = text
        self.path = path
        self.index = index
        self.problems: list[Problem] = []
        self.nodes = 0
        self.decoder = json.JSONDecoder()

    def bulk(self, start: int) -> tuple[Scalar, int]:
        """The container at ``start`` as one opaque scalar, decoded at C speed."""
        value, end = self.decoder.raw_decode(self.text, start)
        return Scalar(value, self.span(start, end)), end

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
        self.nodes += 1
        if ch in ("{", "["):
            if self.nodes > _MAX_NODES:
                return self.bulk(pos)
            problems = len(self.problems)
            try:
                return (
                    self.obj(pos, key_path, depth)
                    if ch == "{"
                    else self.array(pos, key_path, depth)
                )
            except _Bulk:
                del self.problems[problems:]
                return self.bulk(pos)
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
            if len(entries) > (_MAX_ENTRIES if depth else _MAX_ROOT_ENTRIES):
                raise _Bulk
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
            if len(items) > _MAX_ENTRIES:
                raise _Bulk
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
    parser = _Parser(text, path, index)
    try:
        root, end = parser.value(parser.skip(0), "", 0)
        end = parser.skip(end)
        if end != len(text):
            raise _Invalid("extra data", end)
    except (_Invalid, ValueError, RecursionError) as exc:  # ValueError: JSONDecodeError
        doc.problems.append(_syntax_problem(path, text, index, exc))
        return doc
    doc.problems.extend(parser.problems)
    if isinstance(root, Mapping):
        doc.candidates.append(Candidate(name="", root=root))
    elif isinstance(root, Scalar) and isinstance(root.value, dict):  # read as bulk data
        message = (
            f"too large to read as a config: {len(root.value)} keys at the top level "
            f"(at most {_MAX_ROOT_ENTRIES} are read one by one)"
        )
        doc.problems.append(Problem("SL000", message, root.span))
    return doc


def _syntax_problem(path: str, text: str, index: LineIndex, exc: Exception) -> Problem:
    """SL000 for text the parser refused: json.loads's own message and position where it
    refuses the text too (what ``python -m json.tool`` shows), else the parser's limit."""
    message, offset = "nesting too deep", 0
    if isinstance(exc, _Invalid):
        message, offset = str(exc), exc.offset
    elif isinstance(exc, json.JSONDecodeError):
        message, offset = exc.msg, exc.pos
    try:
        json.loads(text)
    except json.JSONDecodeError as err:
        message, offset = err.msg, err.pos
    except RecursionError:
        message, offset = "nesting too deep", 0
    except ValueError:  # an integer over Python's digit limit: the parser said where
        pass
    offset = min(max(offset, 0), len(text))
    return Problem("SL000", f"invalid JSON: {message}", index.span(path, offset, offset))
