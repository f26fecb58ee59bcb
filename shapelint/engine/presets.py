"""Presets found in the project tree: a config that names a preset is read through it.

`shapelint.dialects.presets` says which keys name a preset and what the config is once the
preset is found; this module finds it, which is file-system work. Only for a file that yields
no config of its own: its references' names are looked up in an index of the project tree's
Python modules (the tree of `shapelint.engine.tree`, never outside it), each module that holds
the name is parsed by the Python reader (read, never imported), and a candidate of it named
as the preset (a dict entry, a function or classmethod, a ``name=`` entry) is the preset.

Bounds: the index reads at most `MAX_MODULES` ``.py`` files of at most `tree.MAX_BYTES` each
and `MAX_INDEX_BYTES` in all, skipping hidden, virtual-environment, build and cache
directories, and is built once per tree and process; a name held by more than
`MAX_HOLDERS` modules is not looked up (too common to be one preset); a name whose preset is
found in several modules with different entries is ambiguous and stays unread, however near
one of them is, unless the config names that module. The modules
read are recorded in the document's ``depends_on``, so a cached result follows their changes.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

from shapelint import dialects
from shapelint.core.limits import check_python
from shapelint.core.model import ModelConfig
from shapelint.core.source import Candidate, Document, Mapping, Node, Scalar, Sequence, decode
from shapelint.dialects import presets
from shapelint.dialects.common import KeyAliases
from shapelint.engine import tree
from shapelint.engine.reading import read_snapshot
from shapelint.readers import parse

MAX_MODULES = 5000
MAX_INDEX_BYTES = 64 * 1024 * 1024
MAX_HOLDERS = 8
SKIP_DIRS = frozenset(
    {
        "node_modules",
        "__pycache__",
        "site-packages",
        "venv",
        "env",
        "build",
        "dist",
        "third_party",
    }
)
# The names a module may define as presets: dict keys, ``name=`` values, functions, classes.
_DEFINED = re.compile(
    r"""(?:(["'])([A-Za-z0-9][A-Za-z0-9_.\-]{0,79})\1\s*:"""
    r"""|\bname\s*=\s*(["'])([A-Za-z0-9][A-Za-z0-9_.\-]{0,79})\3"""
    r"""|^[ \t]*(?:def|class)\s+([A-Za-z_]\w{0,79}))""",
    re.MULTILINE,
)


@dataclass(frozen=True)
class _Module:
    path: str
    size: int
    mtime_ns: int


@functools.lru_cache(maxsize=4)
def _index(root: str) -> dict[str, tuple[_Module, ...]]:
    """Preset-like names defined in the tree's Python modules → the modules holding them."""
    index: dict[str, list[_Module]] = {}
    modules, total = 0, 0
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            if modules >= MAX_MODULES or total >= MAX_INDEX_BYTES:
                return {k: tuple(v) for k, v in index.items()}
            path = os.path.join(directory, name)
            try:
                snap = read_snapshot(path, max_bytes=tree.MAX_BYTES)
                text = decode(snap.data)[0]
            except (OSError, UnicodeDecodeError):
                continue
            modules += 1
            total += snap.size
            module = _Module(path, snap.size, snap.mtime_ns)
            for m in _DEFINED.finditer(text):
                found = m.group(2) or m.group(4) or m.group(5)
                holders = index.setdefault(found, [])
                if not holders or holders[-1] is not module:
                    holders.append(module)
    return {k: tuple(v) for k, v in index.items()}


@functools.lru_cache(maxsize=16)
def _module(path: str, size: int, mtime_ns: int) -> Document | None:
    """The module at ``path`` parsed by the Python reader (cached while it is unchanged)."""
    try:
        data = read_snapshot(path, max_bytes=tree.MAX_BYTES).data
        text = decode(data)[0]
    except (OSError, UnicodeDecodeError):
        return None
    if check_python(text) is not None:
        return None
    doc = parse(path, data, "python")
    return doc if doc.ok else None


def _closeness(path: str, module: str) -> int:
    """How many leading directories ``module`` shares with ``path`` (nearer first)."""
    a = os.path.dirname(os.path.realpath(path)).split(os.sep)
    b = os.path.dirname(os.path.realpath(module)).split(os.sep)
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _content(node: Node) -> object:
    """A node's values without their places (two modules may write the same preset)."""
    if isinstance(node, Mapping):
        return tuple((e.key, _content(e.value)) for e in node.entries)
    if isinstance(node, Sequence):
        return tuple(_content(item) for item in node.items)
    return (node.value, node.known)


def _named(ref: presets.Reference, module: str) -> bool:
    """Whether the config names the module the preset is in: its file name is a key on the
    reference's path or a value beside it (``language_modeling.name: general_gpt`` and
    ``general_gpt.model_name: …`` for ``general_gpt.py``)."""
    stem = os.path.splitext(os.path.basename(module))[0]
    if stem in ref.prefix.split("."):
        return True
    return any(isinstance(e.value, Scalar) and e.value.value == stem for e in ref.mapping.entries)


def _find(path: str, root: str, ref: presets.Reference) -> tuple[Candidate, _Module] | None:
    """The preset ``ref`` names, in the tree: its candidate and module, or None (not found,
    too common, or ambiguous). Modules the config names come first, then the nearest ones;
    among those left, the preset must be the same everywhere."""
    name = ref.name
    holders = _index(root).get(name, ())
    if not holders or len(holders) > MAX_HOLDERS:
        return None
    found: list[tuple[tuple[bool, int], Candidate, _Module]] = []
    unread = False  # a module defines the name, but no preset of it could be read there
    for indexed in holders:
        if not tree.inside(indexed.path, root):
            continue
        try:
            st = os.stat(indexed.path)
        except OSError:
            continue
        module = _Module(indexed.path, st.st_size, st.st_mtime_ns)
        doc = _module(module.path, module.size, module.mtime_ns)
        before = len(found)
        for candidate in doc.candidates if doc is not None else ():
            if presets.names_preset(candidate.name, name):
                score = (_named(ref, module.path), _closeness(path, module.path))
                found.append((score, candidate, module))
        unread = unread or len(found) == before
    if not found:
        return None
    best = max(score for score, _, _ in found)
    if not best[0] and (unread or len({_content(c.root) for _, c, _ in found}) > 1):
        # The config names none of the modules, and they hold different presets of this
        # name (or one whose preset cannot be read, so may differ): being nearer in the tree
        # says nothing of which one the config means (torchtitan's graph_trainer tests name
        # "debugmodel", defined by seven modules; the one readable is another backend's, not
        # the Llama 3 debug model they run).
        return None
    nearest = [(c, m) for score, c, m in found if score == best]
    contents = {_content(c.root) for c, _ in nearest}
    return nearest[0] if len(contents) == 1 else None


def preset_configs(doc: Document, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The configs ``doc`` describes through the presets it names (none when it names none
    that the project tree defines); the modules read join ``doc.depends_on``."""
    refs = list(presets.references(doc.candidates))
    if not refs or not doc.path:
        return []
    root = tree.tree_root(doc.path)
    out: list[ModelConfig] = []
    read: list[tuple[str, int, int]] = []
    for ref in refs:
        hit = _find(doc.path, root, ref)
        if hit is None:
            continue
        candidate, module = hit
        view = Document(path=doc.path, text=doc.text, format=doc.format)
        view.candidates = [presets.through(ref, candidate)]
        configs = dialects.extract(view, extra_keys)
        if configs:
            out.extend(configs)
            read.append((module.path, module.size, module.mtime_ns))
    known = set(doc.depends_on)
    doc.depends_on += tuple(r for r in dict.fromkeys(read) if r not in known)
    return out


__all__ = ["MAX_HOLDERS", "MAX_INDEX_BYTES", "MAX_MODULES", "preset_configs"]
