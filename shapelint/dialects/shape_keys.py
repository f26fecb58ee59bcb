"""Model-shape keys: does a file talk about a model's shape, and which keys would map it?

Two uses:

- `holds_model_keys(text)` decides, without parsing, whether a file's text names at least two
  model-shape keys (``hidden_size``, ``num_attention_heads``, ``base_emb_dim``, ``embed_dim`` …);
  a file found by walking a directory that fails to parse is only reported when it does;
- `shape_keys(doc)` lists the shape keys of a parsed document with their key paths and spans,
  for SL009 ("model config not understood") and the settings line it suggests.

What a key means comes from one place, the key lexicon (`shapelint.dialects.lexicon`: the
words of a key, ``dims_per_head``, ``numHeads``, ``--num-q-heads``), or from a key a user
mapped in ``[tool.shapelint.keys]``. A key whose words the lexicon cannot place with
confidence (``hidden_dim``: FFN or width?) is a shape key too, listed with the dims it may
mean. In free text, where a key's value is not known yet, only keys of two or more words
and the lexicon's exact names count (``dim``, ``layers`` or ``depth`` alone say little
there, nor does ``num_blocks``, which may not be a model's at all).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from shapelint.core.model import Dim
from shapelint.core.source import Document, Mapping, Node, Scalar, Sequence, Span
from shapelint.dialects import lexicon_words
from shapelint.dialects.common import SENTINEL_KINDS, ZERO_UNSET, KeyAliases

_KEY = re.compile(r"""(?<![\w.$-])["']?(-{0,2}[A-Za-z_][\w-]*)["']?\s*[:=](?!=)""")


def normalize(name: str) -> str:
    """The form shape keys are compared in: no leading dashes, dashes as underscores."""
    return name.lstrip("-").replace("-", "_")


def key_dims(name: str, extra_keys: KeyAliases | None = None) -> tuple[Dim, ...]:
    """The dims a key name may stand for: one when the lexicon (or the user's key map) places
    it, several when its words are ambiguous, none when it is not a shape key."""
    last = name.rsplit(".", 1)[-1]
    for mapped, names in (extra_keys or {}).items():
        if any(normalize(n.rsplit(".", 1)[-1]) == normalize(last) for n in names):
            return (mapped,)
    found = lexicon_words.meaning(last)
    if found is None:
        return ()
    return tuple(r for r in found.roles if isinstance(r, Dim))


def key_dim(name: str, extra_keys: KeyAliases | None = None) -> Dim | None:
    """The dim a key name stands for (the first it may mean), or None for no shape key."""
    dims = key_dims(name, extra_keys)
    return dims[0] if dims else None


def _in_text(name: str, extra_keys: KeyAliases | None) -> bool:
    """Whether a key name found in free text counts as a shape key there."""
    if any(
        normalize(n.rsplit(".", 1)[-1]) == normalize(name)
        for v in (extra_keys or {}).values()
        for n in v
    ):
        return True
    found = lexicon_words.meaning(name)
    if found is None or not any(isinstance(r, Dim) for r in found.roles):
        return False
    if normalize(name).lower() in lexicon_words.EXACT:
        return True
    # Two or more words, and either sure or torn between dims (``hidden_dim``); a name that
    # only may be one dim (``num_blocks``, ``filter_size``) needs its value to count.
    return len(found.pattern.split()) >= 2 and (found.sure or len(found.roles) > 1)


def text_shape_keys(text: str, extra_keys: KeyAliases | None = None) -> list[str]:
    """The distinct shape-key names a file's text writes as keys (``name:``, ``name =``,
    ``"name":``, ``--name``), in order of first appearance; no parsing needed."""
    seen: dict[str, None] = {}
    for match in _KEY.finditer(text):
        name = normalize(match.group(1))
        if _in_text(name, extra_keys):
            seen.setdefault(name, None)
    return list(seen)


def holds_model_keys(text: str, extra_keys: KeyAliases | None = None) -> bool:
    """True when ``text`` names at least two distinct model-shape keys, one of them a width,
    head count or layer count: the file is about a model, so failing to parse it is worth
    reporting even when it was found by a directory walk."""
    names = text_shape_keys(text, extra_keys)
    return len(names) >= 2 and any(key_dim(n, extra_keys) in CORE for n in names)


@dataclass(frozen=True)
class ShapeKey:
    """A shape key found in a parsed document: its dotted path, the dim it names, its span."""

    path: str
    dim: Dim
    span: Span
    # The source text of a value the reader could not evaluate (``$H``, ``width``), else None.
    unknown: str | None = None
    # Every dim the key may mean when its words are ambiguous (``hidden_dim``: ffn, hidden).
    alternatives: tuple[Dim, ...] = ()
    # Whether the key counts towards "this file describes a model" (`enough_shape_keys`): a
    # key the lexicon places, or whose several words it can narrow to a few dims; a lone
    # ``mlp`` or ``dim`` in Python code says little. ``core``: evidence of a width, heads or
    # layers in more than one word (``layer`` or ``seq`` alone are enum members and loop
    # variables as often as model keys).
    evidence: bool = True
    core: bool = False

    @property
    def dims(self) -> tuple[Dim, ...]:
        """The dims the key may mean (its one dim when it is not ambiguous)."""
        return self.alternatives or (self.dim,)


# Dims that say "this is a model" on their own (a vocab and a head dim are weaker evidence:
# tokenizer settings and defaults tables have them).
CORE = frozenset({Dim.HIDDEN, Dim.HEADS, Dim.LAYERS})


def enough_shape_keys(keys: Iterable[ShapeKey]) -> bool:
    """Two or more distinct shape keys that count as evidence (`ShapeKey.evidence`), one of
    them a width, head count or layer count named by more than one word or mapped by name."""
    keys = [k for k in keys if k.evidence]
    names = {k.path.rsplit(".", 1)[-1] for k in keys}
    return len(names) >= 2 and any(k.core for k in keys)


def shape_keys(doc: Document, extra_keys: KeyAliases | None = None) -> list[ShapeKey]:
    """Every shape key in ``doc``'s candidates, in file order, each path once. Python values
    built inside a function body (candidates named ``… (in f)``) are code, not configs."""
    found: dict[str, ShapeKey] = {}
    for candidate in doc.candidates:
        if doc.format == "python" and " (in " in candidate.name:
            continue
        sentinels = candidate.kind in SENTINEL_KINDS
        zeros = candidate.kind in ("class", "init")
        walk = _walk(candidate.root, candidate.key_prefix, extra_keys, 0, sentinels, zeros)
        for key in walk:
            found.setdefault(key.path, key)
    return sorted(found.values(), key=lambda k: k.span.start)


def _walk(
    node: Node,
    prefix: str,
    extra_keys: KeyAliases | None,
    depth: int,
    sentinels: bool = False,
    zeros: bool = False,
) -> Iterator[ShapeKey]:
    """The shape keys under ``node``; with ``sentinels``, a negative size is a placeholder
    (unknown), and with ``zeros`` a width, head or layer count of 0, as `Builder.take` reads
    them."""
    if depth > 12:
        return
    entries: Iterable[tuple[str, Node, Span | None]] = ()
    if isinstance(node, Mapping):
        entries = ((e.key, e.value, e.key_span) for e in node.entries)
    elif isinstance(node, Sequence):
        entries = ((f"[{i}]", item, None) for i, item in enumerate(node.items))
    for key, value, key_span in entries:
        index = key.startswith("[")
        path = f"{prefix}{key}" if index else (f"{prefix}.{key}" if prefix else key)
        if key_span is not None and not isinstance(value, Mapping | Sequence):
            dims = key_dims(key, extra_keys)
            if dims and _states_size(key, value, extra_keys):
                dim = dims[0]
                unknown = None
                if isinstance(value, Scalar) and not value.known:
                    unknown = value.expression or "?"
                elif (
                    isinstance(value, Scalar)
                    and value.known
                    and (
                        (sentinels and _negative(value.value))
                        or (zeros and dim in ZERO_UNSET and _zero(value.value))
                    )
                ):
                    unknown = str(value.value)
                evidence, core = _strength(key, dims, extra_keys)
                alternatives = dims if len(dims) > 1 or not evidence else ()
                yield ShapeKey(path, dim, key_span, unknown, alternatives, evidence, core)
        if not index and not extra_keys and lexicon_words.foreign(key):
            continue  # a vision tower, a U-Net, a p-tuning encoder: not the model's keys
        yield from _walk(value, path, extra_keys, depth + 1, sentinels, zeros)


def _strength(key: str, dims: tuple[Dim, ...], extra_keys: KeyAliases | None) -> tuple[bool, bool]:
    """(evidence, core) of a shape key: see `ShapeKey`."""
    last = key.rsplit(".", 1)[-1]
    if any(
        normalize(n.rsplit(".", 1)[-1]) == normalize(last)
        for v in (extra_keys or {}).values()
        for n in v
    ):
        return True, dims[0] in CORE
    found = lexicon_words.meaning(last)
    if found is None:
        return False, False
    exact = normalize(last).lower() in lexicon_words.EXACT
    words = len(found.pattern.split())
    evidence = found.sure or words >= 2
    # A width, heads or layers named in two or more words with one meaning; an ambiguous key
    # (``hidden_dim``, ``num_embeddings``: nn.Embedding's vocabulary) is evidence, not core.
    core = found.sure and (exact or words >= 2) and dims[0] in CORE
    return evidence, core


def _states_size(key: str, value: Node, extra_keys: KeyAliases | None) -> bool:
    """Whether ``value`` can be the size ``key`` names: a key of one generic word (``dim``,
    ``layers``, ``vocab``) counts only with an integer or a value not known statically (a
    ``vocab: gpt2.json`` is a file); longer names count with any value, as before."""
    if not isinstance(value, Scalar) or not value.known:
        return True
    found = lexicon_words.meaning(key.rsplit(".", 1)[-1])
    mapped = any(
        normalize(n.rsplit(".", 1)[-1]) == normalize(key)
        for v in (extra_keys or {}).values()
        for n in v
    )
    if found is None or mapped or len(found.pattern.split()) >= 2:
        return True
    v = value.value
    return isinstance(v, int | float) and not isinstance(v, bool) and float(v).is_integer()


def _zero(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value == 0


def _negative(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value < 0


def matched_names(doc: Document, extra_keys: KeyAliases) -> frozenset[str]:
    """The names of a settings key map that resolve to a key in ``doc`` (a dotted name from
    a candidate's root, or a plain name anywhere in it)."""
    paths = {(k.path, k.path.rsplit(".", 1)[-1]) for k in _all_keys(doc)}
    full = {normalize(p) for p, _ in paths}
    last = {normalize(n) for _, n in paths}
    out = set()
    for names in extra_keys.values():
        for name in names:
            wanted = normalize(name)
            if "." in name:
                hit = wanted in full or any(p.endswith("." + wanted) for p in full)
            else:
                hit = wanted in last
            if hit:
                out.add(name)
    return frozenset(out)


def _all_keys(doc: Document) -> Iterator[ShapeKey]:
    """Every scalar-valued key of ``doc`` as a `ShapeKey` (dim unused)."""
    for candidate in doc.candidates:
        yield from _walk_all(candidate.root, candidate.key_prefix, 0)


def _walk_all(node: Node, prefix: str, depth: int) -> Iterator[ShapeKey]:
    if depth > 12:
        return
    if isinstance(node, Mapping):
        for e in node.entries:
            path = f"{prefix}.{e.key}" if prefix else e.key
            if not isinstance(e.value, Mapping | Sequence):
                yield ShapeKey(path, Dim.HIDDEN, e.key_span)
            yield from _walk_all(e.value, path, depth + 1)
    elif isinstance(node, Sequence):
        for i, item in enumerate(node.items):
            yield from _walk_all(item, f"{prefix}[{i}]", depth + 1)


def settings_line(keys: Iterable[ShapeKey]) -> str:
    """The ``[tool.shapelint.keys]`` lines that would map ``keys`` (first path per dim). A key
    whose words may mean several dims is offered for one no other key states, a width, heads
    or layers first (``hidden_dim`` without a width key is offered as the width)."""
    keys = list(keys)
    by_dim: dict[Dim, str] = {}
    for key in keys:
        if not key.alternatives:
            by_dim.setdefault(key.dim, key.path)
    for key in keys:
        if key.alternatives:
            # A model needs a width, heads or layers: offer those first.
            free = sorted(
                (d for d in key.alternatives if d not in by_dim), key=lambda d: d not in CORE
            )
            if free:
                by_dim[free[0]] = key.path
    order = {key.path: i for i, key in enumerate(keys)}
    pairs = "; ".join(
        f'{dim.value} = ["{path}"]'
        for dim, path in sorted(by_dim.items(), key=lambda p: order[p[1]])
    )
    return f"[tool.shapelint.keys] {pairs}"
