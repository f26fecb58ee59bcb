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
    path = secret_path()
    found: bytes | None = None
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            with open(path, "rb") as fh:
                found = fh.read()
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(os.urandom(MAC_BYTES))
            with open(path, "rb") as fh:
                found = fh.read()
    except OSError:
        found = None
    if found is not None and len(found) != MAC_BYTES:
        found = None  # a key being written by another process, or damaged: no cache this run
    _SECRET.append(found)
    return found


class LintCache:
    """Cached lint results under one directory (see the module docstring)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.dir = os.path.join(root, "v1-" + code_fingerprint())
        self._options: dict[int, tuple[LintOptions, str | None]] = {}
        self._made: set[str] = set()
        self.hits = 0
        self.misses = 0

    @classmethod
    def default(cls) -> LintCache:
        """The cache in ``$SHAPELINT_CACHE_DIR`` or ``./.shapelint_cache``."""
        return cls(os.environ.get(CACHE_ENV) or os.path.join(os.getcwd(), CACHE_DIR))

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
        opts = self._options_digest(options)
        if opts is None:
            return None
        head = f"{source.path}\0{source.kind}\0{source.explicit}\0{opts}\0".encode()
        return digest(head + data)

    def _path(self, key: str) -> str:
        return os.path.join(self.dir, key[:2], key)

    def get(self, key: str, source: SourceFile) -> FileResult | None:
        """The stored result for ``key``, or None."""
        try:
            with open(self._path(key), "rb") as fh:
                data = fh.read()
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
        path = self._path(key)
        payload = dumps(result)
        secret = user_secret()
        if payload is None or secret is None:
            return
        data = _mac(secret, payload) + payload
        try:
            self._prepare(os.path.dirname(path))
            # Unique per process and entry; renamed over the entry only once complete.
            tmp = f"{path}.{os.getpid()}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError:
            return

    def _prepare(self, directory: str) -> None:
        if directory in self._made:
            return
        if not self._made:  # once per run: the cache root and its markers
            os.makedirs(self.root, exist_ok=True)
            for name, text in ((".gitignore", _GITIGNORE), ("CACHEDIR.TAG", _TAG)):
                target = os.path.join(self.root, name)
                if not os.path.exists(target):
                    with contextlib.suppress(OSError), open(target, "x", encoding="utf-8") as fh:
                        fh.write(text)
        os.makedirs(directory, exist_ok=True)
        self._made.add(directory)
