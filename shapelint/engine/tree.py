"""The project tree a linted file belongs to, and what of it shapelint may read.

A config can lean on other files of its project: a launch script sources ``CONFIG.sh`` from
its own directory, a YAML names a preset that a Python module of the same repository defines.
What may be read of them is decided here, once, for every reader:

- the tree is the nearest directory at or above the file that holds ``.git``,
  ``pyproject.toml``, ``setup.py`` or ``setup.cfg`` (the file's own directory when none does);
  nothing outside it is read, and a path is resolved (``..`` and symlinks) before that check;
- regular files only, read through the one bounded reader (`shapelint.engine.reading`), each
  at most `MAX_BYTES`, and at most `MAX_FILES` per linted file;
- every file read is recorded with its size and modification time (`TreeFiles.consulted`), so
  that the lint cache can tell a result that rests on a changed file.
"""

from __future__ import annotations

import os

from shapelint.core.limits import DEFAULT as DEFAULT_BUDGET
from shapelint.core.limits import Budget
from shapelint.core.source import Document, decode
from shapelint.engine.reading import read_snapshot
from shapelint.readers import parse

ROOT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")
# Other files read while linting one file, and the largest one read.
MAX_FILES = 16
MAX_BYTES = 1_000_000


def tree_root(path: str) -> str:
    """The project tree of the file at ``path``: the nearest directory at or above it holding
    one of `ROOT_MARKERS`, else the file's own directory (absolute, resolved)."""
    start = os.path.dirname(os.path.realpath(path))
    directory = start
    while True:
        if any(os.path.exists(os.path.join(directory, m)) for m in ROOT_MARKERS):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return start
        directory = parent


def inside(path: str, root: str) -> bool:
    """Whether ``path`` (resolved) is ``root`` or under it."""
    real = os.path.realpath(path)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


class TreeFiles:
    """The other files of one linted file's tree that its readers may read (see the module
    docstring); a reader asks by a name relative to the file that names it."""

    def __init__(self, path: str, budget: Budget = DEFAULT_BUDGET) -> None:
        self.path = path
        self.budget = budget
        self._root: str | None = None
        self._read: dict[str, tuple[str, str] | None] = {}
        # (path, size, mtime_ns) of every file read, in order.
        self.consulted: list[tuple[str, int, int]] = []

    @property
    def root(self) -> str:
        """The tree's directory (found on first use)."""
        if self._root is None:
            self._root = tree_root(self.path)
        return self._root

    def read(self, name: str, beside: str) -> tuple[str, str] | None:
        """``(path, text)`` of the file ``name``, relative to the directory of the file
        ``beside``, when it is a regular file in the tree within the limits; else None."""
        if not name or os.path.isabs(name) or "\0" in name:
            return None
        path = os.path.normpath(os.path.join(os.path.dirname(beside), name))
        key = os.path.realpath(path)
        if key in self._read:
            return self._read[key]
        found = self._load(path) if len(self._read) < MAX_FILES else None
        self._read[key] = found
        return found

    def _load(self, path: str) -> tuple[str, str] | None:
        if not inside(path, self.root) or not os.path.isfile(path):
            return None
        try:
            snap = read_snapshot(path, self.budget, max_bytes=MAX_BYTES)
            text = decode(snap.data)[0]
        except (OSError, UnicodeDecodeError):
            return None
        self.consulted.append((path, snap.size, snap.mtime_ns))
        return path, text


def parse_in_tree(path: str, data: bytes, kind: str, budget: Budget = DEFAULT_BUDGET) -> Document:
    """``data`` read from ``path`` parsed as ``kind``, its readers allowed the other files of
    its tree (`TreeFiles`); the document records the files it rested on."""
    files = TreeFiles(path, budget)
    doc = parse(path, data, kind, budget, files)
    doc.depends_on = tuple(files.consulted)
    return doc


def unchanged(consulted: tuple[tuple[str, int, int], ...]) -> bool:
    """Whether every file in ``consulted`` still has the size and modification time it was
    read at."""
    for path, size, mtime in consulted:
        try:
            st = os.stat(path)
        except OSError:
            return False
        if st.st_size != size or st.st_mtime_ns != mtime:
            return False
    return True


__all__ = [
    "MAX_BYTES",
    "MAX_FILES",
    "ROOT_MARKERS",
    "TreeFiles",
    "inside",
    "parse_in_tree",
    "tree_root",
    "unchanged",
]
