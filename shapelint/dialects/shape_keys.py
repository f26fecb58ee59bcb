"""Model-shape keys: does a file talk about a model's shape, and which keys would map it?

Two uses:

- `holds_model_keys(text)` decides, without parsing, whether a file's text names at least two
  model-shape keys (``hidden_size``, ``num_attention_heads``, ``base_emb_dim``, ``embed_dim`` …);
  a file found by walking a directory that fails to parse is only reported when it does;
- `shape_keys(doc)` lists the shape keys of a parsed document with their key paths and spans,
  for SL009 ("model config not understood") and the settings line it suggests.

A key counts when its name, with dashes and underscores alike and leading ``--`` dropped
(Megatron flags), is one of the key families the dialects read or a common name for the same
dims that no built-in dialect reads (``model_dim``, ``mlp_dim``, ``num_query_heads``,
``num_decoder_layers`` …), or one a user mapped in
``[tool.shapelint.keys]``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from shapelint.core.model import Dim
from shapelint.core.source import Document, Mapping, Node, Scalar, Sequence, Span
from shapelint.dialects.common import SENTINEL_KINDS, ZERO_UNSET, KeyAliases

# Key names the dialects read, by the dim they name (the common, framework-neutral ones).
KNOWN: dict[str, Dim] = {
    **dict.fromkeys(
        ("hidden_size", "n_embd", "d_model", "dim", "base_emb_dim", "emb_dim"), Dim.HIDDEN
    ),
    **dict.fromkeys(
        (
            "num_attention_heads",
            "n_head",
            "n_heads",
            "num_heads",
            "base_num_query_heads",
            "num_query_heads",
        ),
        Dim.HEADS,
    ),
    **dict.fromkeys(
        (
            "num_key_value_heads",
            "num_kv_heads",
            "n_kv_heads",
            "n_head_kv",
            "num_query_groups",
            "n_query_groups",
            "base_num_kv_heads",
            "multi_query_group_num",
        ),
        Dim.KV_HEADS,
    ),
    **dict.fromkeys(
        (
            "intermediate_size",
            "ffn_hidden_size",
            "n_inner",
            "ffn_dim",
            "d_ff",
            "base_mlp_dim",
            "mlp_dim",
            "intermediate_dim",
            "hidden_dim",
            "mlp_hidden_size",
        ),
        Dim.FFN,
    ),
    **dict.fromkeys(
        (
            "num_hidden_layers",
            "num_layers",
            "n_layer",
            "n_layers",
            "base_num_decoder_layers",
            "num_decoder_layers",
        ),
        Dim.LAYERS,
    ),
    **dict.fromkeys(("head_dim", "kv_channels", "head_size", "d_kv"), Dim.HEAD_DIM),
    **dict.fromkeys(("vocab_size", "padded_vocab_size", "n_vocab"), Dim.VOCAB),
    **dict.fromkeys(
        ("embed_dim", "model_dim", "dim_model", "n_embed", "embedding_dim"), Dim.HIDDEN
    ),
}
# Names too generic to count on their own in free text (``dim`` is also a tensor axis); they
# count inside a parsed mapping next to another shape key.
TEXT_EXCLUDED = frozenset({"dim", "hidden_dim", "embedding_dim", "head_size"})

_KEY = re.compile(r"""(?<![\w.$-])["']?(-{0,2}[A-Za-z_][\w-]*)["']?\s*[:=](?!=)""")


def normalize(name: str) -> str:
    """The form shape keys are compared in: no leading dashes, dashes as underscores."""
    return name.lstrip("-").replace("-", "_")


def key_dim(name: str, extra_keys: KeyAliases | None = None) -> Dim | None:
    """The dim a key name stands for, or None when it is not a shape key."""
    last = name.rsplit(".", 1)[-1]
    dim = KNOWN.get(normalize(last))
    if dim is not None:
        return dim
    for mapped, names in (extra_keys or {}).items():
        if any(normalize(n.rsplit(".", 1)[-1]) == normalize(last) for n in names):
            return mapped
    return None


def text_shape_keys(text: str, extra_keys: KeyAliases | None = None) -> list[str]:
    """The distinct shape-key names a file's text writes as keys (``name:``, ``name =``,
    ``"name":``, ``--name``), in order of first appearance; no parsing needed."""
    seen: dict[str, None] = {}
    for match in _KEY.finditer(text):
        name = normalize(match.group(1))
        if name in TEXT_EXCLUDED:
            continue
        if key_dim(name, extra_keys) is not None:
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


# Dims that say "this is a model" on their own (a vocab and a head dim are weaker evidence:
# tokenizer settings and defaults tables have them).
CORE = frozenset({Dim.HIDDEN, Dim.HEADS, Dim.LAYERS})


def enough_shape_keys(keys: Iterable[ShapeKey]) -> bool:
    """Two or more distinct shape keys, one of them a width, head count or layer count."""
    keys = list(keys)
    names = {k.path.rsplit(".", 1)[-1] for k in keys}
    return len(names) >= 2 and any(k.dim in CORE for k in keys)


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
            dim = key_dim(key, extra_keys)
            if dim is not None:
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
                yield ShapeKey(path, dim, key_span, unknown)
        yield from _walk(value, path, extra_keys, depth + 1, sentinels, zeros)


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
    """The ``[tool.shapelint.keys]`` lines that would map ``keys`` (first path per dim)."""
    by_dim: dict[Dim, str] = {}
    for key in keys:
        by_dim.setdefault(key.dim, key.path)
    pairs = "; ".join(f'{dim.value} = ["{path}"]' for dim, path in by_dim.items())
    return f"[tool.shapelint.keys] {pairs}"
