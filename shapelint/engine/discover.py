"""Paths on the command line → the files to read, each with its format.

Directories are walked in sorted order, skipping version-control folders, virtual
environments, caches and ``node_modules``, plus anything a ``--exclude`` glob matches.
A walk yields regular files only (a FIFO named ``x.json`` would block the read forever) and
never follows a symlink to a directory, so a link loop cannot make it run forever; a symlink
to a file is yielded (a dangling one too: reading it gives the OS's reason as a finding).

Files named on the command line are ``explicit`` — a parse failure there is always reported —
except under pre-commit (which sets ``PRE_COMMIT=1``), where the files are the repository's,
chosen by type, just as a walk would find them.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

KINDS = {
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".py": "python",
    ".toml": "toml",
    ".sh": "shell",
    ".slurm": "shell",  # SLURM batch scripts: bash with #SBATCH comments (BigScience's tr*)
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


@dataclass(frozen=True)
class Skipped:
    """A file a walk found but does not read, and why (``-v`` lists them)."""

    path: str
    reason: str


def kind_of(path: str) -> str | None:
    """The format of ``path`` by its extension, or None when shapelint does not read it."""
    return KINDS.get(os.path.splitext(path)[1].lower())


def as_posix(path: str) -> str:
    """``pathlib.Path(path).as_posix()`` without importing pathlib (~3 ms with urllib.parse)
    on POSIX systems: empty and ``.`` parts dropped, ``//`` kept only as a leading pair."""
    if os.sep != "/" or (os.altsep and os.altsep in path):  # pragma: no cover - Windows
        import pathlib

        return pathlib.Path(path).as_posix()
    root = ""
    if path.startswith("/"):
        root = "//" if path.startswith("//") and not path.startswith("///") else "/"
    parts = [p for p in path.split("/") if p and p != "."]
    return root + "/".join(parts) or "."


def _excluded(path: str, patterns: Iterable[str]) -> bool:
    posix = as_posix(path)
    name = os.path.basename(posix)
    return any(
        fnmatch.fnmatch(posix, p) or fnmatch.fnmatch(name, p) or fnmatch.fnmatch(posix, f"*/{p}")
        for p in patterns
    )


def _is_venv(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def _not_regular(path: str) -> str | None:
    """Why the walked entry at ``path`` is not read, or None for a file (or a link to one)."""
    try:
        st = os.stat(path)
    except OSError:
        return None  # a dangling link or a vanished file: the read reports the OS's reason
    if stat.S_ISREG(st.st_mode):
        return None
    if stat.S_ISFIFO(st.st_mode):
        return "a FIFO, not a regular file"
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        return "a device, not a regular file"
    if stat.S_ISSOCK(st.st_mode):
        return "a socket, not a regular file"
    if stat.S_ISDIR(st.st_mode):
        return "a symlink to a directory (links are not followed)"
    return "not a regular file"


UNKNOWN_FORMAT = (
    "not a config format shapelint reads (.json, .yaml, .yml, .toml, .py by name, "
    "or JSON by content)"
)


def _sniff(path: str) -> str | None:
    """The format of a named file whose extension says nothing: JSON when its text opens with
    ``{`` or ``[``; None for any other text (a README is not a config). What is not a regular
    file is left to the reader, which refuses it with the OS's reason without blocking."""
    from shapelint.engine.reading import read_head

    if not os.path.isfile(path):
        return "json"
    try:
        head = read_head(path, 512)
    except OSError:
        return "json"  # the read fails again in the runner, as an SL000 naming the reason
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return "json" if text[:1] in (b"{", b"[") else None


def _under_pre_commit() -> bool:
    return os.environ.get("PRE_COMMIT") == "1"


def discover(
    paths: Iterable[str],
    exclude: Iterable[str] = (),
    skipped: list[Skipped] | None = None,
    unreadable: list[Skipped] | None = None,
) -> Iterator[SourceFile]:
    """Yield each file to lint once, in a stable order.

    A path that does not exist raises FileNotFoundError (the CLI reports it as a usage error);
    a dangling symlink named on the command line exists for this purpose (its read fails).
    Entries of a walk that are not regular files are appended to ``skipped``; directories the
    walk cannot list (permission denied), with the OS's reason, to ``unreadable``: the files
    in them were not linted, which the run must say.
    """
    patterns = tuple(exclude)
    seen: set[str] = set()
    named = not _under_pre_commit()

    def cannot_list(exc: OSError) -> None:
        if unreadable is not None:
            where = os.path.normpath(exc.filename) if exc.filename else "."
            unreadable.append(Skipped(where, exc.strerror or str(exc)))

    for raw in paths:
        if os.path.isdir(raw):
            for root, dirs, files in os.walk(raw, onerror=cannot_list):
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
                    why = _not_regular(full)
                    if why is not None:
                        if skipped is not None:
                            skipped.append(Skipped(os.path.normpath(full), why))
                        continue
                    key = os.path.realpath(full)
                    if key not in seen:
                        seen.add(key)
                        yield SourceFile(os.path.normpath(full), kind, explicit=False)
        elif os.path.lexists(raw):
            kind = kind_of(raw) or _sniff(raw)
            if kind is None:
                if skipped is not None:
                    skipped.append(Skipped(os.path.normpath(raw), UNKNOWN_FORMAT))
                continue
            key = os.path.realpath(raw)
            if key not in seen and not _excluded(raw, patterns):
                seen.add(key)
                yield SourceFile(os.path.normpath(raw), kind, explicit=named)
        else:
            raise FileNotFoundError(raw)
