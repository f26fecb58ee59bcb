"""Levanter (stanford-crfm/levanter, also used by Marin) training YAMLs.

A Levanter run config has a ``model:`` block whose ``type`` names a registered `LmConfig`
subclass (``gpt2``, ``llama``, ``mistral``, ``mixtral``, ``qwen``, ``qwen3``, ``olmo2``,
``gemma``/``gemma2``/``gemma3``) and a ``trainer:`` block::

    model:
      type: llama
      hidden_dim: 4096
      intermediate_dim: 14336
      num_heads: 32
      num_kv_heads: 8
      num_layers: 32
      seq_len: 4096
    trainer:
      model_axis_size: 1
      per_device_parallelism: 4

Detected by ``model.type`` naming one of those types next to a Levanter shape key
(``hidden_dim``, ``num_heads``, ``num_layers``) or a ``trainer`` block; in Python, by a call
of one of Levanter's config classes (`CLASSES`: ``LlamaConfig(hidden_dim=2048, num_heads=16,
…)``, as Marin's experiments write them) with Levanter's ``hidden_dim`` and ``num_heads``
(Hugging Face's ``LlamaConfig`` takes ``hidden_size``). Newer releases name the sequence
``max_seq_len``: it is read as the model's maximum context, not the training length.

A key the block leaves out is unknown, not a class default: the defaults change between
Levanter releases and a YAML does not say which release it is for (``LlamaConfig`` had no
``num_kv_heads`` in 1.1, so a Llama was multi-head; in 1.2 its default is 32 whatever
``num_heads`` is). What is read is what the block states, and Levanter's own formulas of it:
GPT-2's MLP is ``hidden_dim · mlp_scale`` wide (``Gpt2Config.Mlp``; ``mlp_scale`` is 4 unless
stated, in 1.1 and 1.2 alike) and GPT-2 and Backpack attention is multi-head; the other types
state ``intermediate_dim`` and have a gated MLP (SwiGLU or GeGLU); the head dim is
``head_dim`` when stated, else ``hidden_dim / num_heads`` — except Gemma, whose class default
(256) is not that split, so its head dim is then unknown. Mixtral's ``intermediate_dim`` is
each expert's width. The vocabulary comes from the tokenizer (not in the config) unless
``vocab_size`` is stated. ``seq_len`` is the training sequence length;
``trainer.model_axis_size`` the tensor-parallel size; ``trainer.per_device_parallelism`` the
micro-batch when positive (``-1``, the default, derives it from the batch and the device
count).

``initialize_from_hf`` (a name, or ``true`` with ``model.reference_checkpoint``) and
``initialize_from_checkpoint_path`` load trained weights: fixes are then unsafe. With
``use_hf_model_config: true`` the shape comes from the Hugging Face checkpoint and the block is
ignored by Levanter, so no config is read from it.
"""

from __future__ import annotations

from dataclasses import replace

from shapelint.core.model import Derivation, Dim, ModelConfig, Traits, Value
from shapelint.core.source import Candidate, Document, Mapping, Scalar
from shapelint.dialects.common import Builder, KeyAliases
from shapelint.dialects.defaults import default
from shapelint.dialects.lookup import child, derived

NAME = "levanter"
# A JAX/XLA program: the step is compiled by XLA.
TRAITS = Traits(framework="jax")
FRAMEWORK = "Levanter"

# Registered ``LmConfig`` types (levanter/models/*.py, 1.1 and 1.2.dev1644) read here.
GATED_TYPES = frozenset(
    {"llama", "mistral", "mixtral", "qwen", "qwen3", "olmo2", "gemma", "gemma2", "gemma3"}
)
MHA_TYPES = frozenset({"gpt2", "backpack"})  # no num_kv_heads field: every head has its KV
TYPES = GATED_TYPES | MHA_TYPES
# Gpt2Config.mlp_scale's default (the same in 1.1 and 1.2.dev1644).
GPT2_MLP_SCALE = 4
SHAPE_KEYS = ("hidden_dim", "num_heads", "num_layers")

_DIMS: tuple[tuple[Dim, str], ...] = (
    (Dim.HIDDEN, "hidden_dim"),
    (Dim.HEADS, "num_heads"),
    (Dim.KV_HEADS, "num_kv_heads"),
    (Dim.LAYERS, "num_layers"),
    (Dim.HEAD_DIM, "head_dim"),
    (Dim.FFN, "intermediate_dim"),
    (Dim.VOCAB, "vocab_size"),
    (Dim.SEQ_LEN, "seq_len"),
    (Dim.EXPERTS, "n_routed_experts"),
    (Dim.EXPERTS_PER_TOKEN, "num_experts_per_tok"),
)


# Levanter's config classes, called in Python (Marin's ``experiments/*.py``:
# ``llama_1_4b = LlamaConfig(max_seq_len=4096, hidden_dim=2048, …)``), by registered type.
CLASSES = {
    "Gpt2Config": "gpt2",
    "BackpackConfig": "backpack",
    "LlamaConfig": "llama",
    "MistralConfig": "mistral",
    "MixtralConfig": "mixtral",
    "QwenConfig": "qwen",
    "Qwen3Config": "qwen3",
    "Olmo2Config": "olmo2",
    "GemmaConfig": "gemma",
    "Gemma2Config": "gemma2",
    "Gemma3Config": "gemma3",
}


def _model(candidate: Candidate) -> Mapping | None:
    if candidate.kind == "call":
        return candidate.root
    model = candidate.root.get("model")
    return model if isinstance(model, Mapping) else None


def _prefix(candidate: Candidate) -> str:
    return "" if candidate.kind == "call" else "model."


def model_type(candidate: Candidate) -> str | None:
    """``model.type`` when it is a string, or the type of the Levanter class a call builds
    (a call must use Levanter's own key names: Hugging Face's ``LlamaConfig`` has none)."""
    if candidate.kind == "call":
        kind = CLASSES.get(candidate.callee.rsplit(".", 1)[-1])
        root = candidate.root
        if kind is None or not all(child(root, k) is not None for k in SHAPE_KEYS[:2]):
            return None
        return kind
    if candidate.kind:
        return None
    model = _model(candidate)
    found = child(model, "type") if model is not None else None
    if found is None or not isinstance(found[1], Scalar) or not isinstance(found[1].value, str):
        return None
    return found[1].value.strip().lower()


def detect(candidate: Candidate) -> bool:
    """``model.type`` of a Levanter type next to a shape key or a ``trainer`` block."""
    kind = model_type(candidate)
    if kind is None or kind not in TYPES:
        return False
    if candidate.kind == "call":
        return True
    model = _model(candidate)
    assert model is not None
    trainer = candidate.root.get("trainer")
    return isinstance(trainer, Mapping) or any(child(model, k) is not None for k in SHAPE_KEYS)


def _truthy(value: Value | None) -> bool:
    if value is None or not value.known:
        return False
    v = value.value
    return (
        bool(v.strip()) and v.strip().lower() not in ("null", "false")
        if isinstance(v, str)
        else v is True
    )


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The model one Levanter run config states, with Levanter's formulas of it."""
    kind = model_type(candidate)
    if kind is None:
        return []
    b = Builder(candidate, doc.path, NAME, extra_keys)
    if _truthy(b.lookup("use_hf_model_config")):
        return []  # Levanter takes the shape from the HF checkpoint, not from this block
    b.pretrained = _truthy(b.lookup("initialize_from_hf")) or _truthy(
        b.lookup("initialize_from_checkpoint_path")
    )
    p = _prefix(candidate)
    anchor = b.lookup("model.type") if p else b.lookup("hidden_dim")
    assert anchor is not None
    for dim, key in _DIMS:
        b.take(dim, p + key)
    if Dim.SEQ_LEN not in b.dims and b.take(Dim.SEQ_LEN, p + "max_seq_len") is not None:
        b.seq_is_max_context = True  # newer Levanter: the model's maximum, not the batch's
    if kind == "gpt2":
        _gpt2_mlp(b, anchor)
    b.gated_mlp = kind in GATED_TYPES
    if kind == "mixtral" and Dim.FFN in b.dims:
        b.dims[Dim.MOE_FFN] = b.dims.pop(Dim.FFN)  # every MLP is an expert
    b.take(Dim.TP, "trainer.model_axis_size")
    micro = b.lookup("trainer.per_device_parallelism")
    if micro is not None and (micro.as_int or 0) > 0:
        b.set(Dim.MICRO_BATCH, micro)
    config = b.build()
    # The shared derivations that are not Levanter's: KV heads = heads (a Llama-family type's
    # left-out num_kv_heads is a class default), and Gemma's head dim = hidden / heads.
    dropped = {Derivation.KV_FROM_HEADS} if kind in GATED_TYPES else set()
    if kind.startswith("gemma"):
        dropped.add(Derivation.HEAD_DIM_SPLIT)
    config = _without(config, dropped)
    return [config] if Dim.HIDDEN in config.dims and Dim.HEADS in config.dims else []


def _without(config: ModelConfig, kinds: set[Derivation]) -> ModelConfig:
    """``config`` less the dims derived in one of ``kinds`` ways."""
    gone = {d for d, v in config.dims.items() if v.kind in kinds}
    if not gone:
        return config
    return replace(
        config,
        dims={d: v for d, v in config.dims.items() if d not in gone},
        sources={d: s for d, s in config.sources.items() if d not in gone},
        formulas={d: f for d, f in config.formulas.items() if d not in gone},
    )


def _gpt2_mlp(b: Builder, anchor: Value) -> None:
    """``Gpt2Config.Mlp``: hidden_dim · mlp_scale (default 4)."""
    hidden, h = b.dims.get(Dim.HIDDEN), b.int(Dim.HIDDEN)
    scale = b.lookup(_prefix(b.candidate) + "mlp_scale")
    if scale is None:
        scale = default(anchor, "mlp_scale", GPT2_MLP_SCALE, FRAMEWORK, "model")
    s = scale.as_int if scale.known else None
    if hidden is None or h is None or s is None or s <= 0:
        return
    b.derive(
        Dim.FFN,
        derived(h * s, (hidden, scale), "hidden_dim × mlp_scale"),
        lambda get: (x * s) if (x := get(Dim.HIDDEN)) else None,
    )
