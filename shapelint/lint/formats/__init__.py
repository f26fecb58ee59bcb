"""File formats: each module turns bytes of one format into a `Document`.

Parsers never raise on bad input: syntax errors and undecodable bytes become an ``SL000``
problem on the document. Heavy parsers (libcst) are imported only when a file needs them.
"""

from __future__ import annotations

from shapelint.lint.source import Document, LineIndex, Problem, decode


def parse(path: str, data: bytes, kind: str) -> Document:
    """Parse ``data`` read from ``path`` as ``kind`` (json, yaml, python, toml)."""
    try:
        text, encoding, bom = decode(data)
    except UnicodeDecodeError as exc:
        doc = Document(path=path, text="", format=kind)
        span = LineIndex("").span(path, 0, 0)
        doc.problems.append(Problem("SL000", f"cannot decode file: {exc.reason}", span))
        return doc
    doc = _parse_text(path, text, kind)
    doc.encoding, doc.bom = encoding, bom
    return doc


def _parse_text(path: str, text: str, kind: str) -> Document:
    if kind == "json":
        from shapelint.lint.formats.json import parse_json

        return parse_json(path, text)
    if kind == "yaml":
        from shapelint.lint.formats.yaml import parse_yaml

        return parse_yaml(path, text)
    if kind == "python":
        from shapelint.lint.formats.python import parse_python

        return parse_python(path, text)
    if kind == "toml":
        from shapelint.lint.formats.toml import parse_toml

        return parse_toml(path, text)
    raise ValueError(f"unknown file kind {kind!r}")
