"""OLMo (allenai/OLMo) training configs, and the ``config.json`` of its checkpoints.

Detected by a ``model`` mapping with ``d_model`` and an OLMo-only model key (``mlp_ratio``,
``mlp_hidden_size``, ``embedding_size``, ``block_type``, ``activation_type``,
``max_sequence_length``, ``n_kv_heads``, ``weight_tying``, ``init_fn``), and no llm-foundry
``name`` / ``expansion_ratio`` / ``attn_config``; or by ``model_type: hf_olmo`` with
``d_model`` at the top: OLMo's own Hugging Face wrapper (``hf_olmo/configuration_olmo.py``,
the format of allenai/OLMo-1B and OLMo-7B), whose keys are OLMo's ``ModelConfig`` fields,
flat, read by the same model code; there ``max_sequence_length`` is the model's context, not
a training length.

Keys: ``model.d_model``, ``model.n_heads``, ``model.n_kv_heads`` (``multi_query_attention:
true`` means 1), ``model.n_layers``, ``model.vocab_size``, ``model.embedding_size`` (the padded
vocab the embedding and logit GEMMs use), ``model.max_sequence_length``,
``device_train_microbatch_size``, ``global_train_batch_size``, ``precision`` (``amp_bf16`` …).

A config that leaves ``model.embedding_size`` out gets OLMo's default, 50304
(``ModelConfig.embedding_size`` in ``olmo/config.py``, unchanged since 2023): the embedding and
logit GEMMs run ``embedding_size or vocab_size`` rows (``olmo/model.py``), so a config stating
only ``vocab_size: 50257`` still trains on 50304 — unless its vocab is larger, which OLMo
rejects, and the padded vocab stays unknown.

FFN width, as ``OLMoBlock`` in ``olmo/model.py`` computes it: the first projection is
``mlp_hidden_size`` wide, or ``mlp_ratio · d_model`` (``mlp_ratio`` defaults to 4); the
activation's ``output_multiplier`` (0.5 for SwiGLU, which splits that projection into gate and
up halves, 1 otherwise) gives the down projection's input::

    ffn = int(output_multiplier · (mlp_hidden_size or mlp_ratio · d_model))

``activation_type`` defaults to swiglu (``olmo/config.py``), so OLMo-7B's
``mlp_hidden_size: 22016`` is an FFN of 11008.
"""

from __future__ import annotations

from collections.abc import Callable

from shapelint.core.model import Dim, ModelConfig, Value
from shapelint.core.source import Candidate, Document, Mapping, Scalar
from shapelint.dialects.common import Builder, KeyAliases, dtype_value, settle_dims, training_config
from shapelint.dialects.defaults import anchor, default
from shapelint.dialects.lookup import child, derived

NAME = "olmo"

MARKERS = (
    "mlp_ratio",
    "mlp_hidden_size",
    "embedding_size",
    "block_type",
    "activation_type",
    "max_sequence_length",
    "n_kv_heads",
    "weight_tying",
    "init_fn",
)
FOUNDRY_KEYS = ("name", "expansion_ratio", "attn_config")
DEFAULT_MLP_RATIO = 4
DEFAULT_EMBEDDING_SIZE = 50304  # olmo/config.py ModelConfig.embedding_size


def _prefix(candidate: Candidate) -> str | None:
    """Where the model keys are: ``model.`` in a training config, the top of an ``hf_olmo``
    checkpoint config, or None when this is neither."""
    model_type = candidate.root.get("model_type")
    if isinstance(model_type, Scalar) and model_type.value == "hf_olmo":
        return "" if child(candidate.root, "d_model") is not None else None
    return "model." if _training(candidate) else None


def detect(candidate: Candidate) -> bool:
    """``model.d_model`` next to an OLMo-only model key, or an ``hf_olmo`` config."""
    return _prefix(candidate) is not None


def _training(candidate: Candidate) -> bool:
    model = candidate.root.get("model")
    if not isinstance(model, Mapping) or child(model, "d_model") is None:
        return False
    if any(child(model, k) for k in FOUNDRY_KEYS):
        return False
    return any(child(model, k) for k in MARKERS)


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The one model an OLMo config describes."""
    m = _prefix(candidate) or ""
    b = Builder(candidate, doc.path, NAME, extra_keys)
    b.take(Dim.HIDDEN, f"{m}d_model")
    b.take(Dim.HEADS, f"{m}n_heads")
    if b.take(Dim.KV_HEADS, f"{m}n_kv_heads") is None:
        mqa = b.lookup(f"{m}multi_query_attention")
        if mqa is not None and mqa.value is True:
            b.set(Dim.KV_HEADS, derived(1, (mqa,), "multi_query_attention: true → 1 KV head"))
    b.take(Dim.LAYERS, f"{m}n_layers")
    b.take(Dim.VOCAB, f"{m}vocab_size")
    if b.take(Dim.PADDED_VOCAB, f"{m}embedding_size") is None:
        _default_embedding_size(b, m)
    b.take(Dim.SEQ_LEN, f"{m}max_sequence_length")
    b.seq_is_max_context = not m  # a checkpoint's context length
    b.take(Dim.MICRO_BATCH, "device_train_microbatch_size")
    b.take(Dim.GLOBAL_BATCH, "global_train_batch_size")
    b.set(Dim.DTYPE, dtype_value(b.lookup("precision")))
    activation = b.lookup(f"{m}activation_type")
    b.gated_mlp = activation is None or str(activation.value).lower() == "swiglu"
    settle_dims(b)
    _ffn(b, activation, m)
    return training_config(b)


def _default_embedding_size(b: Builder, m: str) -> None:
    """OLMo's default ``embedding_size`` when the key is absent (not when it is null or unknown)."""
    if b.lookup(f"{m}embedding_size") is not None:
        return
    vocab = b.dims.get(Dim.VOCAB)
    if vocab is not None and (vocab.as_int is None or vocab.as_int > DEFAULT_EMBEDDING_SIZE):
        return
    source = anchor(b, f"{m}vocab_size", f"{m}d_model")
    prefix = ".".join(p for p in (b.candidate.key_prefix, m.rstrip(".")) if p)
    made = default(source, "embedding_size", DEFAULT_EMBEDDING_SIZE, NAME, prefix)
    b.set(Dim.PADDED_VOCAB, made)


def _ffn(b: Builder, activation: Value | None, m: str) -> None:
    if Dim.FFN in b.dims:
        return
    gated = bool(b.gated_mlp)
    width = b.lookup(f"{m}mlp_hidden_size")
    sources: tuple[Value, ...]
    per_hidden: int | None = None  # the ratio when the width follows d_model
    if width is not None and width.as_int:
        base, sources, formula = width.as_int, (width,), "mlp_hidden_size"
        if not gated:
            b.set(Dim.FFN, width)
            return
    else:
        hidden = b.dims.get(Dim.HIDDEN)
        h = b.int(Dim.HIDDEN)
        ratio = b.lookup(f"{m}mlp_ratio")
        if hidden is None or not h:
            return
        if ratio is None:
            per_hidden = DEFAULT_MLP_RATIO
            base, sources, formula = DEFAULT_MLP_RATIO * h, (hidden,), "4 · d_model"
        elif ratio.as_int:
            per_hidden = ratio.as_int
            base, sources, formula = ratio.as_int * h, (hidden, ratio), "mlp_ratio · d_model"
        else:
            return
    if gated:
        formula = f"({formula}) / 2 (SwiGLU splits the projection into gate and up)"
        base = base // 2
        sources += (activation,) if activation is not None else ()
    fixed = base

    def recompute(get: Callable[[Dim], int | None]) -> int | None:
        if per_hidden is None:
            return fixed
        x = get(Dim.HIDDEN)
        if x is None:
            return None
        return per_hidden * x // 2 if gated else per_hidden * x

    b.derive(Dim.FFN, derived(base, sources, formula), recompute)
