"""The framework-neutral reading: key families every framework shares, wherever they sit.

Hugging Face names (``hidden_size``, ``num_key_value_heads`` …), Llama ``params.json`` names
(``n_kv_heads``), Megatron/NeMo 2 ``TransformerConfig`` names (``num_query_groups``,
``kv_channels``, ``ffn_hidden_size``, ``num_moe_experts``, ``moe_ffn_hidden_size``,
``moe_router_topk``, ``padded_vocab_size``) and nanoGPT/LitGPT names (``n_embd``, ``n_head``,
``n_query_groups``, ``head_size``, ``block_size``) are read by `hf`'s key tables. This module
applies them to a candidate's root mapping and to every mapping nested in it, under any key
and at any depth (``model:``, ``config:``, ``model_args:``, ``network:`` …), that holds a
model's shape; each reading becomes a config named by its key path. ``ModelConfig.sources``
names the family of the key each dim came from (``hf``, ``megatron-core``, ``litgpt``,
``llama-params``, ``chatglm``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from shapelint.core.model import ModelConfig
from shapelint.core.source import Candidate, Document, Mapping, Node, Sequence
from shapelint.dialects import hf
from shapelint.dialects.common import KeyAliases
from shapelint.dialects.lookup import normalize_key

NAME = "hf"
MAX_DEPTH = 8

# Keys that name a model's width; a nested mapping without one is not a model.
WIDTH_KEYS = frozenset(normalize_key(k) for k in hf.HIDDEN)


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """Every config the neutral key families find in ``candidate``, root first."""
    root = candidate.root
    pretrained = any(k in ("architectures", "_name_or_path") for k in root) or hf.weights_beside(
        doc.path
    )
    out: list[ModelConfig] = []
    for sub in _roots(candidate):
        for config in hf._extract(doc, sub, extra_keys, pretrained):
            out.append(_labelled(config))
    return out


def _labelled(config: ModelConfig) -> ModelConfig:
    sources = {
        dim: hf.FAMILIES.get(value.key.rpartition(".")[2], NAME)
        for dim, value in config.dims.items()
    }
    return replace(config, sources=sources)


def _roots(candidate: Candidate) -> Iterator[Candidate]:
    """The candidate itself, then every nested mapping (not a sub-config `hf` already reads
    from its parent) whose keys include a model width. Python candidates are flat already."""
    yield candidate
    if candidate.kind:
        return
    yield from _nested(candidate.root, candidate.key_prefix, candidate.name, 0, read=True)


def _nested(
    node: Node, prefix: str, name: str, depth: int, read: bool = False
) -> Iterator[Candidate]:
    """Nested model mappings; ``read`` says `hf` already reads ``node``'s sub-configs."""
    if depth >= MAX_DEPTH:
        return
    children: list[tuple[str, Node]] = []
    if isinstance(node, Mapping):
        children = [
            (e.key, e.value) for e in node.entries if not (read and e.key in hf.SUB_CONFIGS)
        ]
    elif isinstance(node, Sequence):
        children = [(f"[{i}]", item) for i, item in enumerate(node.items)]
    for key, value in children:
        if not isinstance(value, Mapping | Sequence):
            continue
        index = key.startswith("[")
        path = f"{prefix}{key}" if index else (f"{prefix}.{key}" if prefix else key)
        label = f"{name}{key}" if index else (f"{name}.{key}" if name else key)
        model = isinstance(value, Mapping) and has_width(value)
        if model:
            assert isinstance(value, Mapping)
            yield Candidate(label, value, path)
        yield from _nested(value, path, label, depth + 1, read=model)


def has_width(mapping: Mapping) -> bool:
    """Whether ``mapping`` names a model width in one of the neutral key families."""
    return any(normalize_key(k) in WIDTH_KEYS for k in mapping)


__all__ = ["extract", "has_width"]
