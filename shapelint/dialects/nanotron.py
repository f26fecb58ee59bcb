"""nanotron training configs (Hugging Face's 3D-parallel trainer; SmolLM2/SmolLM3 recipes).

Detected by a ``model.model_config`` mapping next to ``parallelism`` or ``tokens``.

Keys: the Hugging Face names under ``model.model_config`` (``hidden_size``,
``num_attention_heads``, ``num_key_value_heads``, ``intermediate_size``,
``num_hidden_layers``, ``vocab_size``, ``max_position_embeddings``, ``head_dim``,
``moe_config.num_experts`` / ``top_k``), ``parallelism.tp``, ``parallelism.dp``,
``tokens.micro_batch_size``, ``tokens.sequence_length``,
``tokens.batch_accumulation_per_replica``, ``model.dtype``,
``model.make_vocab_size_divisible_by`` (the vocab knob). nanotron's Llama and Qwen2 models use a
fused gate/up projection, so their MLP is gated.

Derived, with nanotron's own formulas:

- padded vocab (``src/nanotron/helpers.py`` ``_vocab_size_with_padding``, applied in
  ``trainer.py`` ``init_model``): a multiple of ``make_vocab_size_divisible_by · tp``;
- global batch = ``micro_batch_size · batch_accumulation_per_replica · dp``.
"""

from __future__ import annotations

from shapelint.core.model import Dim, ModelConfig, Value
from shapelint.core.source import Candidate, Document, Mapping
from shapelint.dialects.common import (
    Builder,
    KeyAliases,
    dtype_value,
    round_up,
    settle_dims,
    training_config,
)
from shapelint.dialects.lookup import derived

NAME = "nanotron"
ENGINES = ("nanotron",)  # a nanotron config runs on nanotron
MC = "model.model_config."


def detect(candidate: Candidate) -> bool:
    """``model.model_config`` is a mapping and ``parallelism`` or ``tokens`` is present."""
    root = candidate.root
    model = root.get("model")
    if not isinstance(model, Mapping) or not isinstance(model.get("model_config"), Mapping):
        return False
    return isinstance(root.get("parallelism"), Mapping) or isinstance(root.get("tokens"), Mapping)


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The one model a nanotron config trains."""
    b = Builder(candidate, doc.path, NAME, extra_keys)
    b.take(Dim.HIDDEN, MC + "hidden_size")
    b.take(Dim.HEADS, MC + "num_attention_heads")
    b.take(Dim.KV_HEADS, MC + "num_key_value_heads")
    b.take(Dim.HEAD_DIM, MC + "head_dim")
    b.take(Dim.FFN, MC + "intermediate_size")
    b.take(Dim.LAYERS, MC + "num_hidden_layers")
    b.take(Dim.VOCAB, MC + "vocab_size")
    b.take(Dim.SEQ_LEN, "tokens.sequence_length", MC + "max_position_embeddings")
    b.take(Dim.EXPERTS, MC + "moe_config.num_experts")
    b.take(Dim.EXPERTS_PER_TOKEN, MC + "moe_config.top_k")
    b.take(Dim.TP, "parallelism.tp")
    b.take(Dim.PP, "parallelism.pp")
    b.take(Dim.EP, "parallelism.expert_parallel_size")
    b.take(Dim.MICRO_BATCH, "tokens.micro_batch_size")
    b.take(Dim.GRAD_ACCUM, "tokens.batch_accumulation_per_replica")
    b.take(Dim.VOCAB_MULTIPLE, "model.make_vocab_size_divisible_by")
    b.set(Dim.DTYPE, dtype_value(b.lookup("model.dtype")))
    flags = [b.lookup(MC + k) for k in ("is_llama_config", "is_qwen2_config")]
    act = b.lookup(MC + "hidden_act")
    b.gated_mlp = any(f is not None and f.value is True for f in flags) or (
        act is not None and str(act.value).lower() in ("silu", "swiglu")
    )
    settle_dims(b)
    _derive(b)
    return training_config(b)


def _derive(b: Builder) -> None:
    vocab, v = b.dims.get(Dim.VOCAB), b.int(Dim.VOCAB)
    if vocab is not None and v and Dim.PADDED_VOCAB not in b.dims:
        sources: tuple[Value, ...] = (vocab,)
        multiple, tp = b.dims.get(Dim.VOCAB_MULTIPLE), b.dims.get(Dim.TP)
        m, t = b.int(Dim.VOCAB_MULTIPLE) or 1, b.int(Dim.TP) or 1
        sources += tuple(s for s in (multiple, tp) if s is not None)
        formula = (
            "⌈vocab / (make_vocab_size_divisible_by · tp)⌉ · make_vocab_size_divisible_by · tp"
        )
        padded = round_up(v, m * t)
        b.derive(
            Dim.PADDED_VOCAB,
            derived(padded, sources, formula, "padded_vocab_size"),
            lambda get: (
                round_up(x, (get(Dim.VOCAB_MULTIPLE) or m) * (get(Dim.TP) or t))
                if (x := get(Dim.VOCAB))
                else None
            ),
        )
    micro, accum = b.dims.get(Dim.MICRO_BATCH), b.dims.get(Dim.GRAD_ACCUM)
    dp = b.lookup("parallelism.dp")
    mb, ga = b.int(Dim.MICRO_BATCH), b.int(Dim.GRAD_ACCUM)
    d = dp.as_int if dp is not None else None
    if micro is not None and accum is not None and dp is not None and mb and ga and d and d > 0:
        formula = "micro_batch_size · batch_accumulation_per_replica · dp"
        b.set(Dim.GLOBAL_BATCH, derived(mb * ga * d, (micro, accum, dp), formula))
