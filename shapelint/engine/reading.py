"""The one way shapelint reads a file it lints, explains, suggests for or fixes.

Regular files only, opened without blocking (a FIFO or device named like a config is refused
by the ``fstat`` of the open file instead of hanging the run), at most the size budget's
bytes (a file over it is refused without being read). Every command reads through here.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass

from shapelint.core.limits import DEFAULT as DEFAULT_BUDGET
from shapelint.core.limits import Budget

_PREAD = hasattr(os, "pread")


class Unreadable(OSError):
    """A file shapelint refuses to read (not a regular file, over the size limit); its
    ``strerror`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EINVAL, reason)


class NotRegular(Unreadable):
    """The path is a FIFO, a device or another special file."""


class TooLarge(Unreadable):
    """The file is larger than the limit."""


@dataclass(frozen=True)
class Snapshot:
    """A file's bytes with the size and modification time they were read at."""

    data: bytes
    mtime_ns: int
    size: int


def read_snapshot(
    path: str, budget: Budget = DEFAULT_BUDGET, *, max_bytes: int | None = None
) -> Snapshot:
    """The bytes of the regular file at ``path`` and the stat of the same open file.

    At most ``max_bytes`` (default: the budget's ``max_file_bytes``) are read; a larger file,
    or one that grows past it while being read, raises `TooLarge`; a file that is not regular
    raises `NotRegular`; any other failure is the OS's OSError.
    """
    fd = _open(path)
    try:
        return read_open(fd, budget.max_file_bytes if max_bytes is None else max_bytes, budget)
    finally:
        os.close(fd)


def read_open(fd: int, limit: int, budget: Budget = DEFAULT_BUDGET) -> Snapshot:
    """`read_snapshot` of the file already open as ``fd``, from its start (the descriptor
    stays open)."""
    st = _require_regular(fd)
    if st.st_size > limit:
        raise TooLarge(_too_large(st.st_size, budget))
    chunks = []
    size = 0
    if not _PREAD:  # pragma: no cover - Windows
        os.lseek(fd, 0, os.SEEK_SET)
    while size <= limit:
        want = min(1 << 20, limit + 1 - size)
        # pread: from the start whatever the descriptor's position, without moving it.
        chunk = os.pread(fd, want, size) if _PREAD else os.read(fd, want)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > limit:  # it grew while being read
        raise TooLarge(_too_large(size, budget))
    return Snapshot(b"".join(chunks), st.st_mtime_ns, st.st_size)


def read_text(path: str, budget: Budget = DEFAULT_BUDGET) -> str:
    """The UTF-8 text (a byte-order mark dropped) of the regular file at ``path``, read as
    `read_snapshot` reads it: settings, baselines and GPU files come through here. A file that
    is not UTF-8 raises `Unreadable` saying where."""
    data = read_snapshot(path, budget).data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        line = data.count(b"\n", 0, exc.start) + 1
        raise Unreadable(f"not UTF-8 text (byte 0x{bad} on line {line})") from None


def read_head(path: str, size: int) -> bytes:
    """The first ``size`` bytes of the regular file at ``path`` (to tell its format by its
    content); `NotRegular` or the OS's OSError as `read_snapshot` raises them."""
    fd = _open(path)
    try:
        _require_regular(fd)
        return os.read(fd, size)
    finally:
        os.close(fd)


def read_source(path: str, budget: Budget = DEFAULT_BUDGET) -> bytes:
    """The bytes of the regular file at ``path`` (`read_snapshot`, without the stat)."""
    return read_snapshot(path, budget).data


def _open(path: str) -> int:
    if "\0" in path:  # os.open's ValueError, as the OS's own kind of refusal
        raise Unreadable("the path contains a NUL character")
    # Without blocking: opening a FIFO for reading would wait for a writer.
    return os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))


def _require_regular(fd: int) -> os.stat_result:
    """The stat of the open file ``fd``; `NotRegular` unless it is a regular file."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        if stat.S_ISDIR(st.st_mode):
            raise NotRegular("it is a directory")
        kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device or other special file"
        raise NotRegular(f"it is {kind}, not a regular file")
    return st


def _too_large(size: int, budget: Budget) -> str:
    return (
        f"the file is {size / 1048576:.1f} MB, over the limit of {budget.max_file_size_mb} MB "
        "(the setting max-file-size-mb raises it); not read"
    )


def read_failure(path: str, exc: OSError) -> str:
    """Why ``path`` could not be read, as the SL000 finding says it."""
    reason = exc.strerror or str(exc)
    if not isinstance(exc, Unreadable) and os.path.islink(path) and not os.path.exists(path):
        reason += f" (a symlink to {os.readlink(path)!r}, which does not exist)"
    return f"cannot read file: {reason}"


__all__ = [
    "NotRegular",
    "Snapshot",
    "TooLarge",
    "Unreadable",
    "read_failure",
    "read_head",
    "read_open",
    "read_snapshot",
    "read_source",
    "read_text",
]
