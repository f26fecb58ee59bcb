"""Paths on the command line → the files to read, each with its format.

Directories are walked in sorted order, skipping version-control folders, virtual
environments, caches and ``node_modules``, plus anything a ``--exclude`` glob matches.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

KINDS = {
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".py": "python",
    ".toml": "toml",
}
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        "site-packages",
        ".eggs",
    }
)


@dataclass(frozen=True)
class SourceFile:
    """A file to lint: its path as the user will see it, its format, and how it was found."""

    path: str
    kind: str
    explicit: bool


def kind_of(path: str) -> str | None:
    """The format of ``path`` by its extension, or None when shapelint does not read it."""
    return KINDS.get(os.path.splitext(path)[1].lower())


def _excluded(path: str, patterns: Iterable[str]) -> bool:
    posix = Path(path).as_posix()
    name = os.path.basename(posix)
    return any(
        fnmatch.fnmatch(posix, p) or fnmatch.fnmatch(name, p) or fnmatch.fnmatch(posix, f"*/{p}")
        for p in patterns
    )


def _is_venv(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def discover(paths: Iterable[str], exclude: Iterable[str] = ()) -> Iterator[SourceFile]:
    """Yield each file to lint once, in a stable order.

    A path that does not exist raises FileNotFoundError (the CLI reports it as a usage error).
    """
    patterns = tuple(exclude)
    seen: set[str] = set()
    for raw in paths:
        if os.path.isdir(raw):
            for root, dirs, files in os.walk(raw):
                dirs[:] = sorted(
                    d
                    for d in dirs
                    if d not in SKIP_DIRS
                    and not d.endswith(".egg-info")
                    and not _is_venv(os.path.join(root, d))
                    and not _excluded(os.path.join(root, d), patterns)
                )
                for name in sorted(files):
                    full = os.path.join(root, name)
                    kind = kind_of(name)
                    if kind is None or _excluded(full, patterns):
                        continue
                    key = os.path.realpath(full)
                    if key not in seen:
                        seen.add(key)
                        yield SourceFile(os.path.normpath(full), kind, explicit=False)
        elif os.path.exists(raw):
            kind = kind_of(raw) or "json"
            key = os.path.realpath(raw)
            if key not in seen and not _excluded(raw, patterns):
                seen.add(key)
                yield SourceFile(os.path.normpath(raw), kind, explicit=True)
        else:
            raise FileNotFoundError(raw)
