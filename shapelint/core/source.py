"""Source positions and the format-neutral tree every parser produces.

A parser (JSON, YAML, Python) turns a file into a `Document`: the decoded text plus a tree
of `Mapping` / `Sequence` / `Scalar` nodes, each carrying the `Span` of its text. Dialects
read this tree and never look at the text again, and the fixer replaces exactly the
characters a `Span` covers.
"""

from __future__ import annotations

import bisect
import operator
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate


@dataclass(frozen=True)
class Span:
    """Where a value sits in a file.

    Lines and columns are 1-based and count characters of the decoded text (not bytes);
    ``end_line``/``end_column`` point one past the last character, as SARIF's ``endColumn``.
    ``start``/``end`` are 0-based character offsets into ``Document.text`` (end exclusive),
    so ``text[start:end]`` is exactly the value as written.
    """

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    start: int
    end: int


class LineIndex:
    """Converts character offsets to 1-based (line, column) pairs for one text.

    Lazy, because building every line start of a 20 MB file costs more than parsing it while
    a reader asks for the positions of a few thousand values: each answer is counted (C
    speed, ``str.count``) from the nearest position answered before it, and remembered. Only
    when those counts add up to more than twice the text is the full table of line starts
    built, so no pattern of questions costs more than a few passes over the text.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._starts: list[int] | None = None
        # Positions answered so far, in increasing offset order: offset, line, line start.
        self._offsets = [0]
        self._lines = [1]
        self._line_starts = [0]
        self._scanned = 0

    def _table(self) -> list[int]:
        if self._starts is None:
            text = self._text
            # Line k starts after the lengths of lines 0..k-1 and their k newlines.
            lengths = accumulate(map(len, text.split("\n")), initial=0)
            self._starts = list(map(operator.add, lengths, range(text.count("\n") + 1)))
        return self._starts

    def position(self, offset: int) -> tuple[int, int]:
        """Return the 1-based line and column of a 0-based character offset."""
        if self._starts is None:
            k = len(self._offsets) - 1
            if offset < self._offsets[k]:
                k = bisect.bisect_right(self._offsets, offset) - 1
            base = self._offsets[k]
            self._scanned += offset - base
            if self._scanned <= 2 * len(self._text) + 65536:
                text = self._text
                line, line_start = self._lines[k], self._line_starts[k]
                newlines = text.count("\n", base, offset)
                if newlines:
                    line += newlines
                    line_start = text.rfind("\n", base, offset) + 1
                if k == len(self._offsets) - 1 and offset > base:
                    self._offsets.append(offset)
                    self._lines.append(line)
                    self._line_starts.append(line_start)
                return line, offset - line_start + 1
        starts = self._table()
        line = bisect.bisect_right(starts, offset) - 1
        return line + 1, offset - starts[line] + 1

    def offset(self, line: int, column: int) -> int:
        """Return the 0-based offset of a 1-based line and column."""
        return self._table()[line - 1] + column - 1

    def span(self, path: str, start: int, end: int) -> Span:
        """Build the `Span` of ``text[start:end]``."""
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        return Span(path, line, column, end_line, end_column, start, end)


@dataclass(frozen=True)
class Scalar:
    """A leaf value: number, string, bool or null, as the format's own loader returns it.

    ``shared`` is set when the node is reached through a YAML alias (editing it changes every
    key that shares the anchor); ``expression`` holds the source text when the value was
    computed from an expression (``4096 * 32``) rather than written as a literal; ``known``
    is False when the parser could not evaluate the value statically.
    """

    value: object
    span: Span
    shared: bool = False
    expression: str | None = None
    known: bool = True


@dataclass(frozen=True)
class Entry:
    """One ``key: value`` pair of a mapping, with the span of the key itself."""

    key: str
    key_span: Span
    value: Node


@dataclass(frozen=True)
class Mapping:
    """An ordered mapping (JSON object, YAML mapping, Python call keywords / class body)."""

    entries: tuple[Entry, ...]
    span: Span
    shared: bool = False

    def get(self, key: str) -> Node | None:
        """Return the value of the last entry named ``key`` (what json.loads keeps)."""
        found: Node | None = None
        for entry in self.entries:
            if entry.key == key:
                found = entry.value
        return found

    def keys(self) -> Iterator[str]:
        """Iterate over entry keys in file order (duplicates included)."""
        return (entry.key for entry in self.entries)

    def __iter__(self) -> Iterator[str]:
        """Iterate over entry keys, as a dict does."""
        return self.keys()


@dataclass(frozen=True)
class Sequence:
    """An ordered list of nodes."""

    items: tuple[Node, ...]
    span: Span
    shared: bool = False


Node = Scalar | Mapping | Sequence


@dataclass(frozen=True)
class Problem:
    """A problem the parser found in the text itself (syntax error, duplicate key, unsafe tag).

    The runner turns each one into a finding with ``code``; parsers never raise on bad input.
    """

    code: str
    message: str
    span: Span
    key: str = ""


@dataclass(frozen=True)
class Candidate:
    """A node that may hold a model config, with the name it is reported under.

    JSON and YAML files give one candidate (the root mapping); a Python file gives one per
    class body, call, dict literal or module namespace that looks like a config.
    ``key_prefix`` is prepended to every key path reported from it; ``callee`` is what a call
    candidate calls. ``open_bases`` names the
    base classes of a Python class that could not be read: any dim the candidate does not
    state may come from them, so none is derived or defaulted (unknown, never guessed).
    A value inherited from a class in another file has that file in its ``Span.path``: it is
    read, never fixed from this file.
    """

    name: str
    root: Mapping
    key_prefix: str = ""
    kind: str = ""
    open_bases: tuple[str, ...] = ()
    # What a ``kind="call"`` candidate calls, as written (``LlamaConfig``, ``m.GPTConfig``); for
    # a ``kind="shell"`` one, the training/inference programs the script runs
    # (``pretrain_gpt.py``, space-separated).
    callee: str = ""


@dataclass
class Document:
    """A parsed file: its decoded text, the candidate configs it holds, and parse problems.

    ``encoding``, ``bom`` and ``newline`` record how the file was stored so that the fixer can
    write it back byte-for-byte outside the edited values.
    """

    path: str
    text: str
    format: str
    candidates: list[Candidate] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    encoding: str = "utf-8"
    bom: bool = False
    # Comments that suppress findings, by 1-based line: the codes, or an empty set for all.
    suppressions: dict[int, frozenset[str]] = field(default_factory=dict)
    # Other files the reading rested on (a sourced script, a preset's module), each with the
    # size and modification time it was read at: a cached result is stale when one changed.
    depends_on: tuple[tuple[str, int, int], ...] = ()

    @property
    def ok(self) -> bool:
        """True when the file parsed (problems such as duplicate keys may still exist)."""
        return not any(p.code == "SL000" for p in self.problems)


def decode(data: bytes) -> tuple[str, str, bool]:
    """Decode file bytes as UTF-8 (with or without BOM), falling back to UTF-16 by BOM.

    Returns (text, encoding, had_bom). Raises UnicodeDecodeError for undecodable bytes.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8"), "utf-8", True
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16"), "utf-16", True
    return data.decode("utf-8"), "utf-8", False


def encode(text: str, encoding: str, bom: bool) -> bytes:
    """Inverse of `decode`: the bytes to write for ``text``."""
    if encoding == "utf-16":
        return text.encode("utf-16")  # Python writes the BOM for utf-16
    data = text.encode(encoding)
    return b"\xef\xbb\xbf" + data if bom else data


# ``# shapelint: ignore`` or ``# shapelint: ignore[SL101, SL102]`` in a comment, optionally
# followed by a reason: ``# shapelint: ignore[SL102] -- checkpoint fixed``.
SUPPRESSION = re.compile(r"#\s*shapelint:\s*ignore\b(?:\[([^\]]*)\])?")
_REASON = re.compile(r"\s*--\s*([^#\n]*?)\s*(?=#|$)", re.M)
# ``# shapelint: disable-file`` (or ``disable-file[SL101]``) on a line of its own.
DISABLE_FILE = re.compile(r"^[ \t]*#\s*shapelint:\s*disable-file\b(?:\[([^\]]*)\])?", re.M)


def _listed(codes: str | None) -> frozenset[str]:
    if codes is None:
        return frozenset()
    return frozenset(c.strip().upper() for c in codes.split(",") if c.strip())


def suppression_reason(text: str, line: int) -> str:
    """The reason written after ``--`` in the ``# shapelint: ignore`` comment on ``line``
    (1-based) of ``text``; empty when there is none."""
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return ""
    row = lines[line - 1]
    reasons = []
    for m in SUPPRESSION.finditer(row):
        found = _REASON.match(row, m.end())
        if found and found.group(1):
            reasons.append(found.group(1))
    return "; ".join(reasons)


def file_disables(text: str) -> tuple[frozenset[str], int, str] | None:
    """A ``# shapelint: disable-file[...]`` comment on a line of its own: the codes it names
    (empty: every rule), its 1-based line and its reason; None when the file has none."""
    m = DISABLE_FILE.search(text)
    if m is None:
        return None
    line = text.count("\n", 0, m.start()) + 1
    found = _REASON.match(text, m.end())
    return _listed(m.group(1)), line, found.group(1) if found else ""


def parse_suppression(comment: str) -> frozenset[str] | None:
    """The codes ``# shapelint: ignore[...]`` comments name; empty set = all; None = none."""
    found: frozenset[str] | None = None
    for m in SUPPRESSION.finditer(comment):
        listed = m.group(1)
        codes = (
            frozenset()
            if listed is None
            else frozenset(c.strip().upper() for c in listed.split(",") if c.strip())
        )
        found = merge_suppressions(found, codes)
    return found


def merge_suppressions(previous: frozenset[str] | None, codes: frozenset[str]) -> frozenset[str]:
    """Combine two suppressions on one line (an empty set, meaning all rules, absorbs codes)."""
    if previous is None:
        return codes
    if not previous or not codes:
        return frozenset()
    return previous | codes
