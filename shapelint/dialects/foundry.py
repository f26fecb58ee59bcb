"""MosaicML llm-foundry training YAMLs (MPT models and ``hf_causal_lm`` wrappers).

Detected by a ``model`` mapping with a ``name`` (the foundry model registry), or MPT's
``expansion_ratio`` / ``attn_config``, next to a foundry training key
(``global_train_batch_size``, ``device_train_microbatch_size``, ``train_loader``); or by
``model.name: mpt_causal_lm`` with a ``d_model`` alone (the inference benchmark YAMLs).

Keys: ``model.d_model``, ``model.n_heads``, ``model.n_layers``, ``model.expansion_ratio``
(default 4), ``model.ffn_config.ffn_hidden_size`` / ``ffn_type`` (``mptglu`` is gated),
``model.max_seq_len`` (else top-level ``max_seq_len``), ``model.vocab_size``,
``model.attn_config.kv_n_heads`` (counts only with ``attn_type: grouped_query_attention``;
``multiquery_attention`` is 1 KV head), ``device_train_microbatch_size`` (``auto`` is unknown),
``global_train_batch_size``, ``precision``. ``${variables.x}`` references are followed.

FFN width, as ``resolve_ffn_hidden_size`` in ``llmfoundry/models/layers/ffn.py`` computes it:
``ffn_hidden_size`` when set, else ``int(d_model · expansion_ratio)``. An ``hf_causal_lm``
model takes its shape from the hub (``pretrained_model_name_or_path``), so only the batch dims
are read and the config is marked ``shape_from_elsewhere``.
"""

from __future__ import annotations

from shapelint.core.model import Derivation, Dim, ModelConfig, Traits
from shapelint.core.source import Candidate, Document, Mapping, Scalar
from shapelint.dialects.common import (
    Builder,
    KeyAliases,
    dtype_value,
    mpt_ffn,
    settle_dims,
    training_config,
)
from shapelint.dialects.lookup import child, derived

NAME = "llm-foundry"
# Composer runs the step: PyTorch FSDP, eager (the whole-step calibration's reference runs).
TRAITS = Traits(framework="foundry")

MODEL_MARKERS = ("name", "expansion_ratio", "attn_config")
TRAIN_MARKERS = ("global_train_batch_size", "device_train_microbatch_size", "train_loader")


def detect(candidate: Candidate) -> bool:
    """A foundry model mapping next to a foundry training key."""
    root = candidate.root
    model = root.get("model")
    if not isinstance(model, Mapping) or not any(child(model, k) for k in MODEL_MARKERS):
        return False
    name = child(model, "name")
    if (
        name is not None
        and isinstance(name[1], Scalar)
        and str(name[1].value).startswith("mpt_causal_lm")
        and child(model, "d_model") is not None
    ):
        return True  # MPT's registry name says it (the inference benchmark YAMLs have no trainer)
    return any(child(root, k) for k in TRAIN_MARKERS)


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The one model (or batch settings) an llm-foundry training YAML describes."""
    b = Builder(candidate, doc.path, NAME, extra_keys)
    b.take(Dim.HIDDEN, "model.d_model")
    b.take(Dim.HEADS, "model.n_heads")
    attn_type = b.lookup("model.attn_config.attn_type")
    kind = str(attn_type.value) if attn_type is not None else ""
    if kind == "grouped_query_attention":
        b.take(Dim.KV_HEADS, "model.attn_config.kv_n_heads")
    elif kind == "multiquery_attention" and attn_type is not None:
        b.set(Dim.KV_HEADS, derived(1, (attn_type,), "multiquery_attention → 1 KV head"))
    b.consult("model.attn_config.kv_n_heads")  # meaningless without GQA
    b.take(Dim.LAYERS, "model.n_layers")
    b.take(Dim.VOCAB, "model.vocab_size")
    b.take(Dim.SEQ_LEN, "model.max_seq_len", "max_seq_len")
    b.take(Dim.MICRO_BATCH, "device_train_microbatch_size")
    b.take(Dim.GLOBAL_BATCH, "global_train_batch_size")
    b.take(Dim.FFN, "model.ffn_config.ffn_hidden_size")
    b.set(Dim.DTYPE, dtype_value(b.lookup("precision")))
    # FSDP's activation checkpointing wraps every block (Composer's fsdp_config).
    checkpointing = b.lookup("fsdp_config.activation_checkpointing")
    if checkpointing is not None and checkpointing.known and isinstance(checkpointing.value, bool):
        mode = "full" if checkpointing.value else "none"
        formula = f"{checkpointing.key}: {mode}"
        b.set(
            Dim.RECOMPUTE,
            derived(mode, (checkpointing,), formula, kind=Derivation.CONVERSION),
        )
    settle_dims(b)
    mpt_ffn(b, "model.")
    return training_config(b)
