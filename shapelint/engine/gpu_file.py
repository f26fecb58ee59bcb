"""A user's GPU file (``--gpu-file``, settings ``gpu-file``), read as configs are read.

The file is read with the bounded reader (`shapelint.engine.reading`: regular files only,
opened without blocking, the size limit) and parsed with the YAML reader configs go through
(`shapelint.readers.yaml`: safe tags only, nesting and alias expansion within the limits of
`shapelint.core.limits`), so a FIFO, ``/dev/zero``, a 762-byte alias bomb or a 5,000-digit
number is one line naming the file, never a hang, a crash or a multi-megabyte message. Its
data is then validated and merged by `shapelint.hardware.gpus.load_table`.
"""

from __future__ import annotations

from collections.abc import Mapping as MappingABC
from typing import TYPE_CHECKING, Any

from shapelint.core.source import Mapping, Node, Scalar, Sequence
from shapelint.core.text import one_line, shown_path
from shapelint.hardware import gpus
from shapelint.hardware.gpus import GPUTable, GPUTableError

if TYPE_CHECKING:  # pathlib (with urllib.parse) is not imported to look up a built-in GPU
    from pathlib import Path


def _plain(node: Node, label: str) -> Any:
    """The YAML tree ``node`` as plain data (dicts, lists, scalars); its depth and size are
    within the reader's limits already, so this recursion is bounded."""
    if isinstance(node, Mapping):
        return {entry.key: _plain(entry.value, label) for entry in node.entries}
    if isinstance(node, Sequence):
        return [_plain(item, label) for item in node.items]
    assert isinstance(node, Scalar)
    if not node.known:
        where = f"{label}:{node.span.line}:{node.span.column}"
        raise GPUTableError(f"{where}: a value with a tag shapelint does not read")
    return node.value


def data_of(text: str, label: str) -> dict[str, Any]:
    """The data of a GPU file's ``text``; `GPUTableError` (one line) when it is not YAML
    within the limits, or not a mapping."""
    from shapelint.readers.yaml import parse_yaml
    from shapelint.rules.sl001_duplicate_key import RULE as DUPLICATE_KEY

    doc = parse_yaml(label, text)
    for problem in doc.problems:
        if problem.code == DUPLICATE_KEY.code:  # the last one counts, as in PyYAML
            continue
        message = problem.message.removeprefix("invalid YAML: ")
        where = f"{label}:{problem.span.line}:{problem.span.column}"
        raise GPUTableError(f"{where}: not valid YAML: {one_line(message)}")
    roots = [c.root for c in doc.candidates]
    if len(roots) != 1:
        raise GPUTableError(f"{label}: expected one YAML document, a mapping with a 'gpus' key")
    data = _plain(roots[0], label)
    if not isinstance(data, MappingABC):  # pragma: no cover - candidates are mappings
        raise GPUTableError(f"{label}: expected a mapping with a 'gpus' key")
    return dict(data)


def load_table(extra_file: str | Path | None = None) -> GPUTable:
    """The built-in GPU table, with the entries of the GPU file ``extra_file`` merged over it
    (`shapelint.hardware.gpus.load_table`)."""
    if extra_file is None:
        return gpus.load_table()
    from shapelint.engine.reading import read_text

    path = str(extra_file)
    label = shown_path(path)
    try:
        text = read_text(path)
    except OSError as exc:
        raise GPUTableError(f"{label}: cannot read GPU table: {exc.strerror or exc}") from None
    return gpus.load_table(data_of(text, label), label)


def lookup(name: str, extra_file: str | Path | None = None) -> gpus.GPU:
    """Look up one GPU by name or alias (see `load_table`)."""
    return load_table(extra_file).lookup(name)


__all__ = ["data_of", "load_table", "lookup"]
