"""TOML reader with exact positions.

``tomllib`` (``tomli`` before Python 3.11) decides validity and gives the values; it keeps no
positions, so a small scanner walks the same text to find where every key and value is written
— table headers (``[a.b]``, ``[[a]]``), dotted keys, strings of all four kinds, numbers, bools,
dates, arrays and inline tables, with their inner spans — and takes each value from tomllib's
result by its path, so values always equal tomllib's. A scalar's span covers the value as
written (quotes included). A table's span is its header (the whole file for the root table).

Invalid TOML is an SL000 problem at tomllib's line and column. Comments
``# shapelint: ignore[...]`` fill ``Document.suppressions``.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

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
    merge_suppressions,
    parse_suppression,
)

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
# A value that is neither string, array nor inline table runs to one of these characters.
_BARE_VALUE = re.compile(r"[^,\]\}#\r\n]*")
_ERROR_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|x([0-9A-Fa-f]{2})|(.))", re.S)
_SIMPLE_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", "e": "\x1b"}


class _Mismatch(Exception):
    """The scanner and tomllib disagree: a bug in the scanner, reported, never raised out."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass
class _Table:
    """A table while the file is scanned; frozen into a `Mapping` at the end."""

    span: Span
    data: dict[str, object]
    entries: dict[str, tuple[Span, _Table | _TableArray | Node]] = field(default_factory=dict)


@dataclass
class _TableArray:
    """An array of tables (``[[name]]``)."""

    span: Span
    data: list[object]
    tables: list[_Table] = field(default_factory=list)


def _unescape(raw: str) -> str:
    def sub(m: re.Match[str]) -> str:
        code = m.group(1) or m.group(2) or m.group(3)
        if code:
            return chr(int(code, 16))
        ch = m.group(4)
        return _SIMPLE_ESCAPES.get(ch, ch)

    return _ESCAPE.sub(sub, raw)


class _Scanner:
    def __init__(self, text: str, path: str, data: dict[str, object]) -> None:
        self.text = text
        self.path = path
        self.index = LineIndex(text)
        self.pos = 0
        self.root = _Table(self.span(0, len(text)), data)
        self.suppressions: dict[int, frozenset[str]] = {}

    def span(self, start: int, end: int) -> Span:
        return self.index.span(self.path, start, end)

    def fail(self, message: str) -> _Mismatch:
        return _Mismatch(message, self.pos)

    # -- whitespace and comments -------------------------------------------------------

    def blanks(self) -> None:
        """Skip spaces and tabs."""
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        self.pos = pos

    def comment(self) -> None:
        """Skip a comment if one starts here, recording a suppression."""
        if self.text.startswith("#", self.pos):
            start = self.pos
            eol = self.text.find("\n", start)
            end = len(self.text) if eol == -1 else eol
            codes = parse_suppression(self.text[start:end])
            if codes is not None:
                line = self.index.position(start)[0]
                self.suppressions[line] = merge_suppressions(self.suppressions.get(line), codes)
            self.pos = end

    def blank_lines(self) -> None:
        """Skip whitespace, newlines and comments."""
        while True:
            self.blanks()
            self.comment()
            if self.pos < len(self.text) and self.text[self.pos] in "\r\n":
                self.pos += 1
                continue
            return

    def end_of_line(self) -> None:
        self.blanks()
        self.comment()
        if self.text.startswith("\r\n", self.pos):
            self.pos += 2
        elif self.pos < len(self.text):
            if self.text[self.pos] != "\n":
                raise self.fail("expected the end of the line")
            self.pos += 1

    # -- keys ----------------------------------------------------------------------

    def simple_key(self) -> tuple[str, Span]:
        text, start = self.text, self.pos
        ch = text[start : start + 1]
        if ch == '"':
            end = self.basic_string_end(start)
            key = _unescape(text[start + 1 : end - 1])
        elif ch == "'":
            end = text.find("'", start + 1) + 1
            if end == 0:
                raise self.fail("unterminated key")
            key = text[start + 1 : end - 1]
        else:
            m = _BARE_KEY.match(text, start)
            if m is None:
                raise self.fail("expected a key")
            end = m.end()
            key = m.group()
        self.pos = end
        return key, self.span(start, end)

    def dotted_key(self) -> list[tuple[str, Span]]:
        parts = [self.simple_key()]
        while True:
            save = self.pos
            self.blanks()
            if self.text.startswith(".", self.pos):
                self.pos += 1
                self.blanks()
                parts.append(self.simple_key())
            else:
                self.pos = save
                return parts

    # -- values ----------------------------------------------------------------------

    def basic_string_end(self, start: int) -> int:
        text, pos = self.text, start + 1
        while pos < len(text):
            ch = text[pos]
            if ch == "\\":
                pos += 2
            elif ch == '"':
                return pos + 1
            else:
                pos += 1
        raise _Mismatch("unterminated string", start)

    def multiline_end(self, start: int, quote: str) -> int:
        """End of a multi-line string starting with three ``quote`` characters at ``start``."""
        text, pos = self.text, start + 3
        while pos < len(text):
            ch = text[pos]
            if ch == "\\" and quote == '"':
                pos += 2
            elif text.startswith(quote * 3, pos):
                run = pos
                while run < len(text) and text[run] == quote and run - pos < 5:
                    run += 1
                return run
            else:
                pos += 1
        raise _Mismatch("unterminated string", start)

    def value(self, data: object) -> Node:
        text, start = self.text, self.pos
        ch = text[start : start + 1]
        if ch in ('"', "'"):
            if text.startswith(ch * 3, start):
                end = self.multiline_end(start, ch)
            elif ch == '"':
                end = self.basic_string_end(start)
            else:
                end = text.find("'", start + 1) + 1
                if end == 0:
                    raise self.fail("unterminated string")
            if not isinstance(data, str):
                raise self.fail("expected a string")
            self.pos = end
            return Scalar(data, self.span(start, end))
        if ch == "[":
            return self.array(data)
        if ch == "{":
            return self.inline_table(data)
        m = _BARE_VALUE.match(text, start)
        raw = m.group() if m else ""
        end = start + len(raw.rstrip(" \t"))
        if end == start or isinstance(data, list | dict):
            raise self.fail("expected a value")
        self.pos = end
        return Scalar(data, self.span(start, end))

    def array(self, data: object) -> Sequence:
        if not isinstance(data, list):
            raise self.fail("expected an array")
        start = self.pos
        self.pos += 1
        items: list[Node] = []
        while True:
            self.blank_lines()
            if self.text.startswith("]", self.pos):
                break
            if len(items) >= len(data):
                raise self.fail("more array items than tomllib found")
            items.append(self.value(data[len(items)]))
            self.blank_lines()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if not self.text.startswith("]", self.pos):
                raise self.fail("expected ',' or ']'")
            break
        self.pos += 1
        if len(items) != len(data):
            raise self.fail("fewer array items than tomllib found")
        return Sequence(tuple(items), self.span(start, self.pos))

    def inline_table(self, data: object) -> Mapping:
        if not isinstance(data, dict):
            raise self.fail("expected an inline table")
        start = self.pos
        self.pos += 1
        table = _Table(self.span(start, start + 1), data)
        while True:
            self.blank_lines()
            if self.text.startswith("}", self.pos):
                break
            self.key_value(table)
            self.blank_lines()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if not self.text.startswith("}", self.pos):
                raise self.fail("expected ',' or '}'")
            break
        self.pos += 1
        table.span = self.span(start, self.pos)
        return _freeze(table)

    # -- tables and lines ------------------------------------------------------------

    def descend(self, table: _Table, key: str, key_span: Span) -> _Table:
        """The sub-table ``key`` of ``table``, created (implicitly) when absent."""
        entry = table.entries.get(key)
        found = entry[1] if entry is not None else None
        if isinstance(found, _TableArray):
            if not found.tables:
                raise self.fail("empty array of tables")
            return found.tables[-1]
        if isinstance(found, _Table):
            return found
        if found is not None:
            raise self.fail(f"key {key!r} is not a table")
        data = table.data.get(key)
        if isinstance(data, list) and data and isinstance(data[-1], dict):
            data = data[-1]
        if not isinstance(data, dict):
            raise self.fail(f"tomllib has no table {key!r}")
        sub = _Table(key_span, data)
        table.entries[key] = (key_span, sub)
        return sub

    def key_value(self, table: _Table) -> None:
        parts = self.dotted_key()
        for key, key_span in parts[:-1]:
            table = self.descend(table, key, key_span)
        self.blanks()
        if not self.text.startswith("=", self.pos):
            raise self.fail("expected '='")
        self.pos += 1
        self.blanks()
        key, key_span = parts[-1]
        if key not in table.data:
            raise self.fail(f"tomllib has no key {key!r}")
        table.entries[key] = (key_span, self.value(table.data[key]))

    def header(self) -> _Table:
        start = self.pos
        is_array = self.text.startswith("[[", start)
        self.pos += 2 if is_array else 1
        self.blanks()
        parts = self.dotted_key()
        self.blanks()
        close = "]]" if is_array else "]"
        if not self.text.startswith(close, self.pos):
            raise self.fail("expected the end of a table header")
        self.pos += len(close)
        header_span = self.span(start, self.pos)
        table = self.root
        for key, key_span in parts[:-1]:
            table = self.descend(table, key, key_span)
        key, key_span = parts[-1]
        if not is_array:
            sub = self.descend(table, key, key_span)
            sub.span = header_span
            return sub
        entry = table.entries.get(key)
        found = entry[1] if entry is not None else None
        if found is None:
            data = table.data.get(key)
            if not isinstance(data, list):
                raise self.fail(f"tomllib has no array of tables {key!r}")
            found = _TableArray(key_span, data)
            table.entries[key] = (key_span, found)
        if not isinstance(found, _TableArray) or len(found.tables) >= len(found.data):
            raise self.fail(f"{key!r} is not an array of tables")
        item = found.data[len(found.tables)]
        if not isinstance(item, dict):
            raise self.fail(f"{key!r} is not an array of tables")
        sub = _Table(header_span, item)
        found.tables.append(sub)
        return sub

    def document(self) -> Mapping:
        table = self.root
        while True:
            self.blank_lines()
            if self.pos >= len(self.text):
                break
            if self.text.startswith("[", self.pos):
                table = self.header()
            else:
                self.key_value(table)
            self.end_of_line()
        return _freeze(self.root)


def _freeze(table: _Table) -> Mapping:
    entries: list[Entry] = []
    for key, (key_span, value) in table.entries.items():
        node: Node
        if isinstance(value, _Table):
            node = _freeze(value)
        elif isinstance(value, _TableArray):
            node = Sequence(tuple(_freeze(t) for t in value.tables), value.span)
        else:
            node = value
        entries.append(Entry(key, key_span, node))
    return Mapping(tuple(entries), table.span)


def _load(text: str) -> dict[str, object]:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib.loads(text)
    # Python 3.10: tomli, the same parser (a dependency there only).
    loads: Callable[[str], dict[str, object]] = importlib.import_module("tomli").loads
    return loads(text)


def _error_offset(exc: Exception, index: LineIndex, text: str) -> int:
    line = getattr(exc, "lineno", None)
    column = getattr(exc, "colno", None)
    if not (isinstance(line, int) and isinstance(column, int)):
        m = _ERROR_POSITION.search(str(exc))
        if m is None:
            return len(text)  # "at end of document"
        line, column = int(m.group(1)), int(m.group(2))
    try:
        return min(index.offset(line, column), len(text))
    except IndexError:
        return len(text)


def parse_toml(path: str, text: str) -> Document:
    """Parse TOML text into a `Document`; invalid TOML is an SL000 problem, never a raise."""
    doc = Document(path=path, text=text, format="toml")
    index = LineIndex(text)
    try:
        data = _load(text)
    except ValueError as exc:  # TOMLDecodeError is a ValueError
        offset = _error_offset(exc, index, text)
        message = _ERROR_POSITION.sub("", str(exc)).strip()
        doc.problems.append(
            Problem("SL000", f"invalid TOML: {message}", index.span(path, offset, offset))
        )
        return doc
    except RecursionError:
        doc.problems.append(
            Problem("SL000", "invalid TOML: nesting too deep", index.span(path, 0, 0))
        )
        return doc
    scanner = _Scanner(text, path, data)
    try:
        root = scanner.document()
    except (_Mismatch, RecursionError) as exc:
        offset = exc.offset if isinstance(exc, _Mismatch) else 0
        span = index.span(path, offset, offset)
        message = f"shapelint could not locate the values of this valid TOML file ({exc})"
        doc.problems.append(Problem("SL000", message, span))
        doc.suppressions = scanner.suppressions
        return doc
    doc.suppressions = scanner.suppressions
    doc.candidates.append(Candidate(name="", root=root))
    return doc
