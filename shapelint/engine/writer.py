"""The one way shapelint writes a file: fixes, ``--output-file``, ``--write-baseline``, the cache.

A regular file is replaced atomically: the new bytes go to a temporary file in the same
directory, are flushed to disk, get the original's permission bits, owner and group (where
this process may set them) and extended attributes (POSIX ACLs among them), and replace the
original with one rename — so a crash, a signal or a full disk leaves either the old file or
the new one, never half of each, and no temporary file behind.

Everything is resolved through directory file descriptors (``openat``): the directory that
holds the file is opened once, and the checks, the temporary file and the rename all happen
in that open directory, so a directory renamed or swapped for a symlink meanwhile cannot send
the write anywhere else. Where the platform has no ``dir_fd`` support (Windows), paths are
used as before.

Fixes (`write_atomic`) write only inside the paths named on the command line: every directory
from the named root down to the file is opened with ``O_NOFOLLOW``, so a directory replaced
by a symlink to ``../outside`` between the walk and the write is refused, not followed. A
fixed file is refused (`WriteRefused`, reported, nothing written) when it is read-only, when
it changed on disk since shapelint read it, when it is not a regular file, when it is a
symlink whose target lies outside the named paths, or when it has more than one hard link:
replacing it would split the links (the other names keeping the old bytes) and writing into
it in place would both change a file elsewhere, possibly outside the tree, and give up
atomicity — so shapelint asks the user to decide. A symlink inside the tree is written
through: its target is replaced, the link itself is kept.

Outputs the user names (`write_output`: ``--output-file``, ``--write-baseline``) are written
where the name points: a regular file is replaced atomically as above (through a symlink, the
target is replaced and the link kept); a device, a FIFO or a socket (``/dev/null``,
``/dev/stdout`` on a pipe or terminal) is opened and written to, never replaced; a regular
file that is this process's own standard output or error (``/dev/stdout`` redirected to a
file) is appended to, so the shell's redirection keeps working.

The cache (`shapelint.engine.cache`) writes its entries with `replace_in` in directories it
opened itself with `open_subdir` (``O_NOFOLLOW``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence

from shapelint.engine.reading import NotRegular, Snapshot, TooLarge, read_open

# openat/renameat/unlinkat and O_NOFOLLOW: POSIX. Elsewhere the paths themselves are used.
AT_DIRS = (
    os.open in os.supports_dir_fd
    and os.rename in os.supports_dir_fd  # os.replace takes the same dir_fd arguments
    and os.unlink in os.supports_dir_fd
    and os.stat in os.supports_dir_fd
    and hasattr(os, "O_NOFOLLOW")
    and hasattr(os, "O_DIRECTORY")
)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)
TEMP_SUFFIX = ".shapelint.tmp"


class WriteRefused(Exception):
    """A file that was not written; the message says why."""


class NoTemporaryFile(OSError):
    """The temporary file could not be created (a read-only or full directory)."""


def linted_roots(paths: Iterable[str]) -> list[str]:
    """Real directories a fix may write in: each named directory, each named file's directory."""
    roots: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            roots.append(os.path.realpath(p))
        else:
            roots.append(os.path.realpath(os.path.dirname(os.path.abspath(p))))
    return roots


def _inside(path: str, roots: Sequence[str]) -> str | None:
    """The longest of ``roots`` that holds ``path``, or None."""
    best: str | None = None
    for root in roots:
        try:
            if os.path.commonpath([path, root]) == root and (best is None or len(root) > len(best)):
                best = root
        except ValueError:  # different drives on Windows
            continue
    return best


def target_of(path: str, roots: Sequence[str]) -> str:
    """The real file a write to ``path`` replaces; refused outside ``roots``."""
    real = os.path.realpath(path)
    if _inside(real, roots) is None:
        raise WriteRefused(f"it is a symlink to {real}, outside the paths being linted")
    return real


# -- directories -------------------------------------------------------------------------------


@contextlib.contextmanager
def _closing(fd: int) -> Iterator[int]:
    try:
        yield fd
    finally:
        os.close(fd)


def open_dir(path: str) -> int:
    """An open file descriptor of the directory ``path`` (symlinks in ``path`` followed: the
    caller named it)."""
    return os.open(path, os.O_RDONLY | _DIRECTORY | _CLOEXEC)


def open_subdir(parent: int, name: str, *, create: bool = False) -> int:
    """The directory ``name`` inside the open directory ``parent``, never through a symlink;
    created (mode 0o777 less the umask) when ``create`` and missing. OSError when it is a
    symlink (ELOOP/ENOTDIR) or anything but a directory."""
    flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
    try:
        return os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    with contextlib.suppress(FileExistsError):  # another process made it first
        os.mkdir(name, 0o777, dir_fd=parent)
    return os.open(name, flags, dir_fd=parent)


def _open_in_tree(directory: str, roots: Sequence[str]) -> int:
    """The real directory ``directory`` (inside one of ``roots``), opened from that root one
    component at a time without following symlinks."""
    root = _inside(directory, roots)
    if root is None:  # pragma: no cover - target_of checked it
        raise WriteRefused(f"{directory} is outside the paths being linted")
    fd = open_dir(root)
    try:
        rel = os.path.relpath(directory, root)
        for part in [] if rel == "." else rel.split(os.sep):
            try:
                sub = open_subdir(fd, part)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                    raise WriteRefused(
                        f"the directory {os.path.join(root, part)} changed on disk "
                        "(replaced or turned into a symlink) since the file was read"
                    ) from None
                raise
            os.close(fd)
            fd = sub
            root = os.path.join(root, part)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _sync(fd: int) -> None:
    with contextlib.suppress(OSError):  # not every file system syncs a directory
        os.fsync(fd)


# -- the atomic replacement ------------------------------------------------------------------------


def _temp_names(name: str) -> Iterator[str]:
    """Names for a temporary file beside ``name``: hidden, random, ending in `TEMP_SUFFIX`."""
    import secrets  # here: a lint that writes nothing need not import it (hmac, hashlib)

    for _ in range(100):
        yield f".{name[:100]}.{secrets.token_hex(8)}{TEMP_SUFFIX}"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _copy_attributes(src: int, dst: int, like: os.stat_result) -> None:
    """Owner, group and extended attributes of the open file ``src`` onto ``dst``, as far as
    this process may set them (the mode is set afterwards by the caller)."""
    if hasattr(os, "fchown") and (like.st_uid, like.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.fchown(dst, like.st_uid, like.st_gid)
        except OSError:
            # Not root: a user may still give the file a group they belong to.
            with contextlib.suppress(OSError):
                os.fchown(dst, -1, like.st_gid)
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(src)
    except OSError:
        return
    for attr in names:
        # One that cannot be copied (security.* without the privilege) is left out, as
        # `cp --preserve=xattr` does; the file is still written.
        with contextlib.suppress(OSError):
            os.setxattr(dst, attr, os.getxattr(src, attr))


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def replace_in(
    dir_fd: int,
    name: str,
    data: bytes,
    *,
    like: int | None = None,
    check: Callable[[], None] | None = None,
) -> None:
    """Replace (or create) ``name`` in the open directory ``dir_fd`` with ``data`` atomically.

    ``like`` is an open descriptor of the file being replaced: its mode, owner, group and
    extended attributes are kept; without it the new file gets 0o666 less the umask.
    ``check`` is called right before the rename: it raises to cancel the write. OSError
    (`NoTemporaryFile` when none could be made) on any failure, the temporary file removed;
    an interrupt or signal removes it too.
    """
    # The temporary file's name is known before it exists, and its creation is inside the
    # block that removes it: an interrupt (a signal's handler raises between any two
    # bytecodes) after the file was made, even before ``open`` returned its descriptor,
    # finds it by name. A name whose creation failed is forgotten before the next try, so a
    # file of that name that is not this call's is never removed.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | _BINARY
    tmp: str | None = None
    fd: int | None = None
    try:
        for tmp in _temp_names(name):
            try:
                fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
                break
            except FileExistsError:
                tmp = None
            except OSError as exc:
                tmp = None
                raise NoTemporaryFile(exc.errno, exc.strerror) from None
        if fd is None or tmp is None:
            tmp = None
            raise NoTemporaryFile(errno.EEXIST, "no unused temporary file name")
        try:
            _write_all(fd, data)
            os.fsync(fd)
            if like is not None:
                st = os.fstat(like)
                _copy_attributes(like, fd, st)
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
            else:
                os.fchmod(fd, _new_file_mode())
        finally:
            os.close(fd)
        if check is not None:
            check()
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        tmp = None
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
        raise
    _sync(dir_fd)


# -- fixes -----------------------------------------------------------------------------------------


def _read_only(st: os.stat_result, name: str, dir_fd: int | None) -> bool:
    # The owner's write bit as well as access(): root may write a chmod 444 file, but a user
    # who made it read-only meant it.
    if not st.st_mode & stat.S_IWUSR:
        return True
    if dir_fd is None:
        return not os.access(name, os.W_OK)
    try:
        return not os.access(name, os.W_OK, dir_fd=dir_fd, follow_symlinks=False)
    except NotImplementedError:  # pragma: no cover - faccessat without AT_SYMLINK_NOFOLLOW
        return not os.access(name, os.W_OK, dir_fd=dir_fd)


def _hard_links(st: os.stat_result) -> None:
    if st.st_nlink > 1:
        raise WriteRefused(
            f"it has {st.st_nlink} hard links: replacing it would leave the other names with "
            "the old bytes, and writing into it would change them too; break the link "
            "(cp FILE tmp && mv tmp FILE) to fix it here"
        )


def _open_unchanged(name: str, dir_fd: int | None, snapshot: Snapshot) -> int:
    """The file ``name``, opened without following a symlink, checked to hold exactly
    ``snapshot`` (bytes, size and modification time); `WriteRefused` otherwise."""
    flags = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC | _BINARY
    try:
        fd = os.open(name, flags, dir_fd=dir_fd) if dir_fd is not None else os.open(name, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WriteRefused("the file changed on disk since it was read") from None
        raise WriteRefused(f"cannot read file again: {exc.strerror}") from None
    try:
        _check_unchanged(fd, snapshot)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_unchanged(fd: int, snapshot: Snapshot) -> None:
    try:
        # No more bytes than were read: a file that grew has changed.
        now = read_open(fd, snapshot.size)
    except TooLarge:
        raise WriteRefused("the file changed on disk since it was read") from None
    except NotRegular:
        raise WriteRefused("cannot read file again: it is no longer a regular file") from None
    except OSError as exc:
        raise WriteRefused(f"cannot read file again: {exc.strerror}") from None
    if (now.mtime_ns, now.size, now.data) != (snapshot.mtime_ns, snapshot.size, snapshot.data):
        raise WriteRefused("the file changed on disk since it was read")


def _recheck(name: str, dir_fd: int | None, snapshot: Snapshot) -> Callable[[], None]:
    """The check right before the rename (see `replace_in`): still exactly ``snapshot``."""

    def check() -> None:
        os.close(_open_unchanged(name, dir_fd, snapshot))

    return check


def write_atomic(path: str, data: bytes, snapshot: Snapshot, roots: Sequence[str]) -> None:
    """Replace the file at ``path`` with ``data``, or raise `WriteRefused` and leave it intact.

    ``snapshot`` is what was read; the file must still be exactly that (bytes, size and
    modification time) right before it is replaced. ``roots`` are the real directories the
    write must stay in (`linted_roots`).
    """
    real = target_of(path, roots)
    folder, name = os.path.split(real)
    if not AT_DIRS:  # pragma: no cover - Windows
        _write_atomic_by_path(real, data, snapshot)
        return
    dir_fd = _open_in_tree(folder, roots)
    try:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as exc:
            raise WriteRefused(f"cannot stat file: {exc.strerror}") from None
        if stat.S_ISLNK(st.st_mode):
            raise WriteRefused("the file changed on disk since it was read")
        if not stat.S_ISREG(st.st_mode):
            raise WriteRefused("it is not a regular file")
        _hard_links(st)
        if _read_only(st, name, dir_fd):
            raise WriteRefused("the file is read-only")
        original = _open_unchanged(name, dir_fd, snapshot)
        try:
            _hard_links(os.fstat(original))
            replace_in(dir_fd, name, data, like=original, check=_recheck(name, dir_fd, snapshot))
        except NoTemporaryFile as exc:
            raise WriteRefused(
                f"cannot create a temporary file in {folder}: {exc.strerror}"
            ) from None
        except OSError as exc:
            raise WriteRefused(f"cannot write file: {exc.strerror or exc}") from None
        finally:
            os.close(original)
    finally:
        os.close(dir_fd)


def _write_atomic_by_path(real: str, data: bytes, snapshot: Snapshot) -> None:  # pragma: no cover
    """`write_atomic` where directories cannot be opened (Windows): by path."""
    import tempfile

    try:
        st = os.stat(real)
    except OSError as exc:
        raise WriteRefused(f"cannot stat file: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise WriteRefused("it is not a regular file")
    _hard_links(st)
    if _read_only(st, real, None):
        raise WriteRefused("the file is read-only")
    os.close(_open_unchanged(real, None, snapshot))
    folder = os.path.dirname(real)
    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{os.path.basename(real)}.", suffix=TEMP_SUFFIX, dir=folder
        )
    except OSError as exc:
        raise WriteRefused(f"cannot create a temporary file in {folder}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        os.close(_open_unchanged(real, None, snapshot))
        os.replace(tmp, real)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise WriteRefused(f"cannot write file: {exc.strerror or exc}") from None
        raise


# -- outputs the user names ----------------------------------------------------------------------


def _is_own_stream(st: os.stat_result) -> bool:
    """True when ``st`` is the file this process's standard output or error writes to."""
    for fd in (1, 2):
        try:
            own = os.fstat(fd)
        except OSError:
            continue
        if (own.st_dev, own.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False


def _write_through(path: str, data: bytes, st: os.stat_result) -> None:
    """Write ``data`` into the existing non-regular file (or own stream) at ``path``."""
    flags = os.O_WRONLY | _CLOEXEC | _BINARY | getattr(os, "O_NOCTTY", 0)
    if stat.S_ISREG(st.st_mode):
        flags |= os.O_APPEND  # our own redirected output: after what is already there
    fd = os.open(path, flags)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _replace_output(path: str, data: bytes) -> None:
    """Replace the regular file at ``path`` (or create it) atomically in its directory."""
    folder, name = os.path.split(os.path.abspath(path))
    if not AT_DIRS:  # pragma: no cover - Windows
        _replace_output_by_path(path, data)
        return
    dir_fd = open_dir(folder)
    try:
        try:
            fd: int | None = os.open(
                name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=dir_fd
            )
        except FileNotFoundError:
            fd = None
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # became a symlink meanwhile: start again
                raise WriteRefused("it changed on disk while being written") from None
            raise
        try:
            if fd is not None:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise WriteRefused("it changed on disk while being written")
                _hard_links(st)
            replace_in(dir_fd, name, data, like=fd)
        finally:
            if fd is not None:
                os.close(fd)
    finally:
        os.close(dir_fd)


def _replace_output_by_path(path: str, data: bytes) -> None:  # pragma: no cover - Windows
    import tempfile

    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".shapelint-", suffix=TEMP_SUFFIX, dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _new_file_mode())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_output(path: str, data: bytes) -> None:
    """Write ``data`` to the output file the user named (see the module docstring).

    `WriteRefused` for a directory, a dangling symlink or a hard-linked file; the OS's
    OSError when it cannot be written (nothing half-written is left behind).
    """
    if "\0" in path:
        raise WriteRefused("the path contains a NUL character")
    try:
        lst: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        lst = None
    if lst is None:
        _replace_output(path, data)
        return
    st = lst
    if stat.S_ISLNK(lst.st_mode):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise WriteRefused(
                f"it is a symlink to {os.readlink(path)!r}, which does not exist"
            ) from None
    if stat.S_ISDIR(st.st_mode):
        raise WriteRefused("it is a directory")
    if not stat.S_ISREG(st.st_mode) or _is_own_stream(st):
        _write_through(path, data, st)  # a device, a FIFO, a socket, our own output
        return
    _hard_links(st)
    # Through a symlink the target is replaced and the link kept.
    _replace_output(os.path.realpath(path) if stat.S_ISLNK(lst.st_mode) else path, data)


__all__ = [
    "AT_DIRS",
    "TEMP_SUFFIX",
    "NoTemporaryFile",
    "WriteRefused",
    "linted_roots",
    "open_dir",
    "open_subdir",
    "replace_in",
    "target_of",
    "write_atomic",
    "write_output",
]
