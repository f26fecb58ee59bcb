"""File formats: each module turns bytes of one format into a `Document`.

Parsers never raise on bad input: syntax errors and undecodable bytes become an ``SL000``
problem on the document. Heavy parsers (libcst) are imported only when a file needs them.
"""

from __future__ import annotations

from typing import Protocol

from shapelint.core.limits import DEFAULT, Budget, check_python
from shapelint.core.source import Document, LineIndex, Problem, decode


class OtherFiles(Protocol):
    """The other files of a linted file's project that a reader may read (a script's sourced
    ``CONFIG.sh``): the engine decides which and within what bounds."""

    def read(self, name: str, beside: str) -> tuple[str, str] | None:
        """``(path, text)`` of the file ``name``, relative to the directory of the file
        ``beside``, or None when it may not or cannot be read."""
        ...


def parse(
    path: str, data: bytes, kind: str, budget: Budget = DEFAULT, files: OtherFiles | None = None
) -> Document:
    """Parse ``data`` read from ``path`` as ``kind`` (json, yaml, python, toml, shell).

    Undecodable bytes are an SL000 problem at the first bad byte's line and column; a
    Python file over ``budget`` is one SL000 problem and never reaches libcst. ``files``: the
    other files the reader may read (a shell script's sourced files); without it, none.
    """
    try:
        text, encoding, bom = decode(data)
    except UnicodeDecodeError as exc:
        return _undecodable(path, data, kind, exc)
    if kind == "python":
        over = check_python(text, budget)
        if over is not None:
            doc = Document(path=path, text=text, format=kind)
            index = LineIndex(text)
            offset = _offset(text, index, over.line, over.column)
            doc.problems.append(Problem("SL000", over.message, index.span(path, offset, offset)))
            doc.encoding, doc.bom = encoding, bom
            return doc
    doc = _parse_text(path, text, kind, files)
    doc.encoding, doc.bom = encoding, bom
    return doc


def _offset(text: str, index: LineIndex, line: int, column: int) -> int:
    try:
        return min(index.offset(line, column), len(text))
    except IndexError:
        return len(text)


def _undecodable(path: str, data: bytes, kind: str, exc: UnicodeDecodeError) -> Document:
    """SL000 at the first undecodable byte; the text is kept with U+FFFD in its place."""
    body, encoding = exc.object, exc.encoding
    text = body.decode(encoding, errors="replace")
    offset = len(body[: exc.start].decode(encoding, errors="replace"))
    if text.startswith("\ufeff"):  # a BOM the codec kept: not part of the text
        text, offset = text[1:], max(offset - 1, 0)
    doc = Document(path=path, text=text, format=kind)
    index = LineIndex(text)
    span = index.span(path, offset, offset)
    name = "UTF-16" if encoding.startswith("utf-16") else "UTF-8"
    message = f"cannot decode file as {name}: {exc.reason} (byte 0x{body[exc.start]:02x})"
    doc.problems.append(Problem("SL000", message, span))
    return doc


def _parse_text(path: str, text: str, kind: str, files: OtherFiles | None) -> Document:
    if kind == "json":
        from shapelint.readers.json import parse_json

        return parse_json(path, text)
    if kind == "yaml":
        from shapelint.readers.yaml import parse_yaml

        return parse_yaml(path, text)
    if kind == "python":
        from shapelint.readers.python import parse_python

        return parse_python(path, text)
    if kind == "toml":
        from shapelint.readers.toml import parse_toml

        return parse_toml(path, text)
    if kind == "shell":
        from shapelint.readers.shell import parse_shell

        return parse_shell(path, text, files)
    raise ValueError(f"unknown file kind {kind!r}")
