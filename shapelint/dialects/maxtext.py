"""MaxText (AI-Hypercomputer/maxtext) model YAMLs (``configs/models/*.yml``) and training
configs that override them.

Detected by MaxText's scaled base keys at the top level: ``base_emb_dim``,
``base_num_query_heads``, ``base_num_kv_heads``, ``base_mlp_dim``, ``base_num_decoder_layers``
(two of them, or one next to ``decoder_block``).

A model YAML is an overlay on ``configs/base.yml``: a key it leaves out takes base.yml's value,
and ``configs/types.py`` scales the base dims by ``global_parameter_scale`` (default 1; a power
of two 2^k, split by ``get_individual_scales`` into emb/head/mlp/layer scales)::

    emb_dim            = 2^emb_scale   · base_emb_dim
    num_query_heads    = 2^head_scale  · base_num_query_heads
    num_kv_heads       = 2^head_scale  · base_num_kv_heads
    mlp_dim            = 2^mlp_scale   · base_mlp_dim
    moe_mlp_dim        = 2^mlp_scale   · base_moe_mlp_dim
    num_decoder_layers = 2^layer_scale · base_num_decoder_layers

Keys: the base dims above, ``head_dim`` (base.yml: 128 — not emb_dim / heads), MLA
(``attention_type: mla``): query/key heads ``qk_nope_head_dim + qk_rope_head_dim`` (base.yml 128
and 64), value heads ``v_head_dim`` (128); MoE ``num_experts`` (>1), ``num_experts_per_tok``,
``base_moe_mlp_dim``; ``vocab_size`` (base.yml 32000); ``max_target_length`` (training
sequence); ``ici_tensor_parallelism``; ``dtype``; ``mlp_activations`` (two entries, e.g.
``["silu", "linear"]`` — base.yml's default — is a gated MLP). ``decoder_block: gemma2`` merges
a local and a global attention layer into one MaxText layer, so the model has
``2 · num_decoder_layers`` layers. A MaxText model YAML describes a
released model's architecture, so its fixes are unsafe.
"""

from __future__ import annotations

import math

from shapelint.core.model import Derivation, Dim, ModelConfig, Traits, Value
from shapelint.core.source import Candidate, Document, Scalar, Sequence
from shapelint.dialects.common import Builder, KeyAliases, dtype_value, settle_dims, training_config
from shapelint.dialects.lookup import child, derived

NAME = "maxtext"
# A JAX/XLA program: the step is compiled by XLA.
TRAITS = Traits(framework="jax")

BASE_KEYS = (
    "base_emb_dim",
    "base_num_query_heads",
    "base_num_kv_heads",
    "base_mlp_dim",
    "base_num_decoder_layers",
)
# configs/base.yml values a model YAML inherits.
BASE_DEFAULTS: dict[str, int] = {
    "head_dim": 128,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "vocab_size": 32000,
}


# Decoder blocks whose one MaxText layer is two transformer layers.
MERGED_LAYER_BLOCKS = frozenset({"gemma2"})


def detect(candidate: Candidate) -> bool:
    """Two MaxText base keys, or one next to ``decoder_block``."""
    root = candidate.root
    found = sum(1 for k in BASE_KEYS if child(root, k) is not None)
    return found >= 2 or (found == 1 and child(root, "decoder_block") is not None)


def scales(global_scale: int) -> tuple[int, int, int, int] | None:
    """MaxText's ``get_individual_scales``: (emb, head, mlp, layer) exponents, or None when the
    scale is not a power of two (MaxText refuses it)."""
    if global_scale <= 0:
        return None
    log2 = math.floor(math.log2(global_scale))
    if 2**log2 != global_scale:
        return None
    base, rem = divmod(log2, 3)
    heads = base + int(rem > 0)
    return base + int(rem > 1), heads, heads, base


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The one model a MaxText YAML describes."""
    b = Builder(candidate, doc.path, NAME, extra_keys)
    b.pretrained = True
    scale = b.lookup("global_parameter_scale")
    exps = scales(scale.as_int or 0) if scale is not None else (0, 0, 0, 0)
    emb_e, head_e, mlp_e, layer_e = exps if exps is not None else (0, 0, 0, 0)
    for dim, key, e in (
        (Dim.HIDDEN, "base_emb_dim", emb_e),
        (Dim.HEADS, "base_num_query_heads", head_e),
        (Dim.KV_HEADS, "base_num_kv_heads", head_e),
        (Dim.FFN, "base_mlp_dim", mlp_e),
        (Dim.LAYERS, "base_num_decoder_layers", layer_e),
    ):
        _scaled(b, dim, key, e, scale if exps is not None else None)
    _merged_layers(b)
    experts = b.lookup("num_experts")
    if experts is not None and experts.as_int is not None and experts.as_int > 1:
        b.set(Dim.EXPERTS, experts)
        b.take(Dim.EXPERTS_PER_TOKEN, "num_experts_per_tok")
        _scaled(b, Dim.MOE_FFN, "base_moe_mlp_dim", mlp_e, scale if exps is not None else None)
    else:
        b.consult("num_experts_per_tok", "base_moe_mlp_dim")
    _head_dims(b)
    _default(b, Dim.VOCAB, "vocab_size")
    b.take(Dim.SEQ_LEN, "max_target_length")
    b.take(Dim.TP, "ici_tensor_parallelism")
    b.set(Dim.DTYPE, dtype_value(b.lookup("dtype")))
    b.gated_mlp = _gated(b)
    b.has_lm_head = True  # MaxText decoders always project to the vocab (tied or not)
    settle_dims(b)
    return training_config(b)


def _merged_layers(b: Builder) -> None:
    """``decoder_block: gemma2``: each MaxText layer is a local and a global attention layer
    (``Gemma2DecoderLayer``), so the model has twice ``num_decoder_layers`` layers."""
    block = b.lookup("decoder_block")
    layers = b.dims.get(Dim.LAYERS)
    if block is None or str(block.value) not in MERGED_LAYER_BLOCKS or layers is None:
        return
    n = layers.as_int
    if n is None:
        return
    formula = "2 · num_decoder_layers (Gemma2DecoderLayer: local + global attention)"
    b.dims[Dim.LAYERS] = derived(2 * n, (layers, block), formula)


def _scaled(b: Builder, dim: Dim, key: str, exponent: int, scale: Value | None) -> None:
    value = b.lookup(key)
    if value is None or exponent == 0:
        if value is not None and value.value is not None:
            b.set(dim, value)
        return
    n = value.as_int
    if n is None or scale is None:
        return
    factor = 2**exponent
    b.derive(
        dim,
        derived(n * factor, (value, scale), f"2^{exponent} · {key} (global_parameter_scale)"),
        lambda get: None,
    )


def _default(b: Builder, dim: Dim, key: str) -> None:
    """``key`` as stated, else base.yml's value."""
    if b.take(dim, key) is not None or b.lookup(key) is not None:
        return
    source = _anchor(b)
    value = BASE_DEFAULTS[key]
    b.set(
        dim,
        derived(
            value,
            (source,),
            f"MaxText base.yml {key}: {value}",
            key=_path(b, key),
            kind=Derivation.DEFAULT,
        ),
    )


def _head_dims(b: Builder) -> None:
    attention = b.lookup("attention_type")
    if attention is not None and str(attention.value).lower() == "mla":
        parts = [b.lookup(k) for k in ("qk_nope_head_dim", "qk_rope_head_dim")]
        ints = [
            p.as_int if p is not None else BASE_DEFAULTS[k]
            for p, k in zip(parts, ("qk_nope_head_dim", "qk_rope_head_dim"), strict=True)
        ]
        if all(n is not None for n in ints):
            nope, rope = ints
            assert nope is not None and rope is not None
            sources = tuple(p for p in parts if p is not None) or (attention,)
            formula = "qk_nope_head_dim + qk_rope_head_dim (MLA)"
            b.derive(Dim.HEAD_DIM, derived(nope + rope, sources, formula), lambda get: None)
        _default(b, Dim.V_HEAD_DIM, "v_head_dim")
        b.consult("head_dim")  # not used by MLA layers
        return
    _default(b, Dim.HEAD_DIM, "head_dim")


def _gated(b: Builder) -> bool | None:
    hit = child(b.root, "mlp_activations")
    if hit is None:
        return True  # base.yml: ["silu", "linear"]
    node = hit[1]
    if isinstance(node, Sequence):
        return len(node.items) > 1
    if isinstance(node, Scalar):
        return None
    return None


def _anchor(b: Builder) -> Value:
    for key in ("decoder_block", *BASE_KEYS):
        found = b.lookup(key)
        if found is not None:
            return found
    candidate = b.candidate
    return Value(candidate.name, candidate.key_prefix, candidate.root.span)


def _path(b: Builder, key: str) -> str:
    prefix = b.candidate.key_prefix
    return f"{prefix}.{key}" if prefix else key
