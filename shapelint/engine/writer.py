"""Write a fixed file safely: atomically, in place, or not at all.

The new bytes go to a temporary file in the target's own directory, are flushed to disk, get
the original's permission bits and replace the original with one ``os.replace`` — so a crash
or a full disk leaves either the old file or the new one, never half of each, and no
temporary file behind. A file is refused (`WriteRefused`, reported to the user, nothing
written) when it is read-only, when it changed on disk since shapelint read it, when it is not
a regular file, or when it is a symlink whose target lies outside the paths named on the
command line. A symlink inside the linted tree is written through: its target is replaced,
the link itself is kept.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Sequence

from shapelint.engine.reading import NotRegular, Snapshot, TooLarge, read_snapshot


class WriteRefused(Exception):
    """A fixed file that was not written; the message says why."""


def linted_roots(paths: Iterable[str]) -> list[str]:
    """Real directories a fix may write in: each named directory, each named file's directory."""
    roots: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            roots.append(os.path.realpath(p))
        else:
            roots.append(os.path.realpath(os.path.dirname(os.path.abspath(p))))
    return roots


def _inside(path: str, roots: Sequence[str]) -> bool:
    for root in roots:
        try:
            if os.path.commonpath([path, root]) == root:
                return True
        except ValueError:  # different drives on Windows
            continue
    return False


def _read_only(st: os.stat_result, path: str) -> bool:
    # The owner's write bit as well as access(): root may write a chmod 444 file, but a user
    # who made it read-only meant it.
    return not st.st_mode & stat.S_IWUSR or not os.access(path, os.W_OK)


def target_of(path: str, roots: Sequence[str]) -> str:
    """The real file a write to ``path`` replaces; refused outside ``roots``."""
    real = os.path.realpath(path)
    if not _inside(real, roots):
        raise WriteRefused(f"it is a symlink to {real}, outside the paths being linted")
    return real


def write_atomic(path: str, data: bytes, snapshot: Snapshot, roots: Sequence[str]) -> None:
    """Replace the file at ``path`` with ``data``, or raise `WriteRefused` and leave it intact.

    ``snapshot`` is what was read; the file must still be exactly that (bytes, size and
    modification time) right before it is replaced.
    """
    real = target_of(path, roots)
    try:
        st = os.stat(real)
    except OSError as exc:
        raise WriteRefused(f"cannot stat file: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise WriteRefused("it is not a regular file")
    if _read_only(st, real):
        raise WriteRefused("the file is read-only")
    _check_unchanged(real, snapshot)
    folder = os.path.dirname(real)
    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{os.path.basename(real)}.", suffix=".shapelint.tmp", dir=folder
        )
    except OSError as exc:
        raise WriteRefused(f"cannot create a temporary file in {folder}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        _check_unchanged(real, snapshot)
        os.replace(tmp, real)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise WriteRefused(f"cannot write file: {exc.strerror or exc}") from None
        raise
    _sync_dir(folder)


def _check_unchanged(path: str, snapshot: Snapshot) -> None:
    try:
        # No more bytes than were read: a file that grew has changed.
        now = read_snapshot(path, max_bytes=snapshot.size)
    except TooLarge:
        raise WriteRefused("the file changed on disk since it was read") from None
    except NotRegular:
        raise WriteRefused("cannot read file again: it is no longer a regular file") from None
    except OSError as exc:
        raise WriteRefused(f"cannot read file again: {exc.strerror}") from None
    if (now.mtime_ns, now.size, now.data) != (snapshot.mtime_ns, snapshot.size, snapshot.data):
        raise WriteRefused("the file changed on disk since it was read")


def _sync_dir(folder: str) -> None:
    """Make the rename durable where the platform allows opening a directory."""
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
