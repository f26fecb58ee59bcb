"""The lint cache: a file whose bytes, options and shapelint have not changed is not linted again.

Like ruff's ``.ruff_cache``, the cache lives in ``.shapelint_cache/`` in the current directory
(``$SHAPELINT_CACHE_DIR`` moves it; ``--no-cache`` skips it) and ignores itself for git. One
entry per linted file, named by a digest of everything the result depends on:

- the file's bytes, its path as reported and its kind;
- the options it was linted with (GPU figures, target, select/ignore, severity, key maps,
  baseline entries: everything in `LintOptions`, written out by `canonical`);
- shapelint itself: its version, and the size and modification time of every file of the
  installed package (an edited rule or GPU table never reads a stale entry), and Python's.

An entry holds the `FileResult` without the parsed tree (the text is kept for reports; the
fixer parses again what it fixes). Entries are written to a temporary file and renamed into
place, so concurrent runs never see half an entry; an unreadable entry is a miss. Nothing
here ever makes a run fail: a cache that cannot be written is skipped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import os
import pickle
import stat
import sys
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from shapelint import __version__
from shapelint.core.digest import digest, keyed_digest
from shapelint.engine.tree import unchanged

if TYPE_CHECKING:
    from shapelint.engine.discover import SourceFile
    from shapelint.engine.options import LintOptions
    from shapelint.engine.results import FileResult

CACHE_DIR = ".shapelint_cache"
CACHE_ENV = "SHAPELINT_CACHE_DIR"
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_GITIGNORE = "# Created by shapelint automatically.\n*\n"
# An entry larger than this is neither written nor read (a planted one is never loaded whole).
MAX_ENTRY_BYTES = 64 * 1024 * 1024
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# shapelint's lint cache (CACHEDIR.TAG)\n"


def code_fingerprint() -> str:
    """A digest of shapelint's version, the installed package's files and Python's version."""
    parts = [__version__, sys.version]
    for root, dirs, files in os.walk(_PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".json", ".yaml")):
                st = os.stat(os.path.join(root, name))
                parts.append(
                    f"{os.path.relpath(os.path.join(root, name), _PACKAGE)}:"
                    f"{st.st_size}:{st.st_mtime_ns}"
                )
    return digest("\n".join(parts).encode("utf-8"))


def lite(result: FileResult) -> FileResult:
    """``result`` without the parsed tree (candidates) and without the configs' formulas
    (functions, which only the lint itself re-evaluates): what a cache entry or a worker
    passes on."""
    doc = replace(result.doc, candidates=[])
    configs = [replace(c, formulas={}) for c in result.configs]
    return replace(result, doc=doc, configs=configs, complete=False)


def dumps(result: FileResult) -> bytes | None:
    """`lite` ``result`` pickled; None when something in it cannot be pickled."""
    try:
        return pickle.dumps(lite(result), protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None


def canonical(value: object) -> str | None:
    """A text that is equal for equal ``value``s in any process (sets sorted, mappings by key);
    None when ``value`` holds something this cannot describe (it is then not cached)."""
    if value is None or isinstance(value, (str, int, float, bool, enum.Enum)):
        return repr(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        parts = [canonical(getattr(value, f.name)) for f in dataclasses.fields(value)]
        inner = None if None in parts else ", ".join(parts)  # type: ignore[arg-type]
        return None if inner is None else f"{type(value).__qualname__}({inner})"
    if isinstance(value, (Mapping, set, frozenset)):
        items = value.items() if isinstance(value, Mapping) else ((v, "") for v in value)
        pairs = [(canonical(k), canonical(v)) for k, v in items]
        if any(k is None or v is None for k, v in pairs):
            return None
        return "{" + ", ".join(sorted(f"{k}: {v}" for k, v in pairs)) + "}"
    if isinstance(value, (list, tuple)):
        parts = [canonical(v) for v in value]
        return None if None in parts else "[" + ", ".join(parts) + "]"  # type: ignore[arg-type]
    return None


# Entries are pickles, and the cache directory sits in the linted tree, where a pull request
# could plant files: an entry is unpickled only when it carries a keyed BLAKE2 MAC made with a
# secret kept outside the tree (per user, created on first use, mode 0600). A planted entry
# fails the check and is a miss; it is never unpickled.
MAC_BYTES = 32
_SECRET: list[bytes | None] = []


def _mac(secret: bytes, payload: bytes) -> bytes:
    return keyed_digest(payload, secret, MAC_BYTES)


def secret_path() -> str:
    """Where this user's cache key lives (``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "shapelint", "cache-key")


def user_secret() -> bytes | None:
    """This user's cache key, created on first use; None when it cannot be had (no cache)."""
    if _SECRET:
        return _SECRET[0]
    from shapelint.engine.reading import read_snapshot

    path = secret_path()
    found: bytes | None = None
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(os.urandom(MAC_BYTES))
        found = read_snapshot(path, max_bytes=MAC_BYTES).data
    except OSError:  # TooLarge and NotRegular among them: no cache this run
        found = None
    if found is not None and len(found) != MAC_BYTES:
        found = None  # a key being written by another process, or damaged: no cache this run
    _SECRET.append(found)
    return found


class LintCache:
    """Cached lint results under one directory (see the module docstring).

    The directory is used only when it is a real directory (not a symlink) owned by this
    user, or when it can be created; otherwise the run goes without a cache and
    ``disabled`` says why (``-v`` prints it). Every entry is reached from it through
    directories opened without following symlinks, read with the bounded reader and written
    with the one writer (`shapelint.engine.writer`), so a ``.shapelint_cache`` committed as a
    link, or holding links, cannot make shapelint read or write anywhere else.
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self.version = "v1-" + code_fingerprint()
        self.dir = os.path.join(root, self.version)
        self._options: dict[int, tuple[LintOptions, str | None]] = {}
        self._prepared = False
        self.disabled: str | None = None
        self.hits = 0
        self.misses = 0
        self._check_root()

    @classmethod
    def default(cls) -> LintCache:
        """The cache in ``$SHAPELINT_CACHE_DIR`` or ``./.shapelint_cache``."""
        return cls(os.environ.get(CACHE_ENV) or os.path.join(os.getcwd(), CACHE_DIR))

    def _check_root(self) -> None:
        from shapelint.engine.writer import AT_DIRS

        if not AT_DIRS:  # pragma: no cover - Windows: no way to refuse links on the way
            self.disabled = "the platform cannot open directories without following links"
            return
        try:
            st = os.lstat(self.root)
        except FileNotFoundError:
            return  # made on the first write
        except (OSError, ValueError) as exc:
            self.disabled = f"{self.root}: {getattr(exc, 'strerror', None) or exc}"
            return
        if stat.S_ISLNK(st.st_mode):
            self.disabled = f"{self.root} is a symlink (a cache directory must be a real directory)"
        elif not stat.S_ISDIR(st.st_mode):
            self.disabled = f"{self.root} is not a directory"
        elif hasattr(os, "geteuid") and st.st_uid != os.geteuid():
            self.disabled = f"{self.root} belongs to another user (uid {st.st_uid})"

    def _options_digest(self, options: LintOptions) -> str | None:
        # Options objects are built once per settings file, so this runs once per settings.
        known = self._options.get(id(options))
        if known is not None and known[0] is options:
            return known[1]
        text = canonical(options)
        value = None if text is None else digest(text.encode("utf-8"))
        self._options[id(options)] = (options, value)
        return value

    def key(self, source: SourceFile, data: bytes, options: LintOptions) -> str | None:
        """The entry for ``source`` with bytes ``data`` under ``options``; None: not cacheable."""
        if self.disabled is not None:
            return None
        opts = self._options_digest(options)
        if opts is None:
            return None
        head = f"{source.path}\0{source.kind}\0{source.explicit}\0{opts}\0".encode(
            "utf-8", "surrogateescape"
        )
        return digest(head + data)

    def _path(self, key: str) -> str:
        return os.path.join(self.dir, key[:2], key)

    def _open_dir(self, key: str, create: bool) -> int:
        """The entry directory of ``key``, reached from the root without following links."""
        from shapelint.engine.writer import open_dir, open_subdir

        if create and not os.path.lexists(self.root):
            parent = os.path.dirname(os.path.abspath(self.root))
            os.makedirs(parent, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                os.mkdir(self.root)
        fd = open_dir(os.path.dirname(os.path.abspath(self.root)))
        try:
            names = (os.path.basename(os.path.abspath(self.root)), self.version, key[:2])
            for depth, name in enumerate(names):
                sub = open_subdir(fd, name, create=create)
                os.close(fd)
                fd = sub
                if depth == 0 and create and not self._prepared:
                    self._mark(fd)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _mark(self, root_fd: int) -> None:
        """Once per run: the cache root's markers (.gitignore, CACHEDIR.TAG), created only
        where no file of that name exists (never written through a link)."""
        self._prepared = True
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        for name, text in ((".gitignore", _GITIGNORE), ("CACHEDIR.TAG", _TAG)):
            try:
                fd = os.open(name, flags, 0o644, dir_fd=root_fd)
            except OSError:  # there already (or a link): left alone
                continue
            with contextlib.suppress(OSError), os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)

    def get(self, key: str, source: SourceFile) -> FileResult | None:
        """The stored result for ``key``, or None."""
        from shapelint.engine.reading import read_open

        try:
            dir_fd = self._open_dir(key, create=False)
            try:
                flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                fd = os.open(key, flags, dir_fd=dir_fd)
            finally:
                os.close(dir_fd)
            try:
                data = read_open(fd, MAX_ENTRY_BYTES).data
            finally:
                os.close(fd)
            secret = user_secret()
            mac, payload = data[:MAC_BYTES], data[MAC_BYTES:]
            if secret is None or mac != _mac(secret, payload):
                raise ValueError("not written by this user's shapelint")
            result = pickle.loads(payload)  # only bytes this user's shapelint signed
        except Exception:  # missing, unsigned, unreadable or from another Python: a miss
            self.misses += 1
            return None
        if not unchanged(result.doc.depends_on):  # a file its reading rested on changed
            self.misses += 1
            return None
        self.hits += 1
        return replace(result, source=source)  # type: ignore[no-any-return]

    def put(self, key: str, result: FileResult) -> None:
        """Store ``result`` under ``key`` atomically; a failure to write is ignored."""
        from shapelint.engine.writer import replace_in

        if self.disabled is not None:
            return
        payload = dumps(result)
        secret = user_secret()
        if payload is None or secret is None or len(payload) + MAC_BYTES > MAX_ENTRY_BYTES:
            return
        data = _mac(secret, payload) + payload
        try:
            dir_fd = self._open_dir(key, create=True)
            try:
                replace_in(dir_fd, key, data)
            finally:
                os.close(dir_fd)
        except OSError:
            return
