"""torchtune (pytorch/torchtune): model builders and the ``model:`` block of recipe YAMLs.

A torchtune model is built by a component builder called with keywords, either in Python
(``models/*/_model_builders.py``: ``def llama3_8b(): return llama3(vocab_size=128_256,
num_layers=32, num_heads=32, num_kv_heads=8, embed_dim=4096, max_seq_len=8192,
intermediate_dim=14336, …)``) or in a recipe YAML (``model: {_component_:
torchtune.models.llama3.llama3, embed_dim: 4096, …}``).

Detected by ``embed_dim`` with ``num_heads`` and ``num_layers`` in one mapping (at the root or
under ``model``), or a ``_component_`` naming a ``torchtune.`` builder.

Keys: ``embed_dim`` hidden, ``num_heads`` heads, ``num_kv_heads`` KV heads, ``num_layers``
layers, ``intermediate_dim`` FFN (the down projection's input), ``vocab_size``, ``head_dim``
(Gemma, Qwen3 state it; else hidden / heads), ``max_seq_len`` (a maximum context, not a
training length). A key left out is unknown: each component builder has its own default
(``llama3`` derives the FFN from ``embed_dim`` with ``multiple_of=1024``, ``llama2`` with 256),
and the builder called is not always visible here.

The MLP is gated (``FeedForward`` with ``w1``, ``w2``, ``w3``) in the decoder families whose
builders this dialect names (Llama 2/3, Code Llama, Mistral, Qwen 2/2.5/3, Gemma 1/2, Phi-3/4);
for any other builder (CLIP, T5 encoders) gating is left unknown.

A recipe block that names a builder and states no shape keys (``model: {_component_:
torchtune.models.llama3_2.lora_llama3_2_1b, lora_rank: 64, …}``; most of torchtune's own
recipes) takes that builder's shape from `torchtune_builders.BUILDERS` (torchtune 0.7.0),
each dim a framework default pointing at the ``_component_`` line, so nothing is fixed in
place; a builder not tabled (vision, Llama 4, classifiers) leaves the block unread.

A supervised recipe (its ``loss`` a cross-entropy: `PER_DEVICE_LOSSES`) adds the model's
``batch_size``, each device's micro-batch, and ``gradient_accumulation_steps``.
"""

from __future__ import annotations

from dataclasses import replace

from shapelint.core.model import Derivation, Dim, ModelConfig, Value
from shapelint.core.source import Candidate, Document, Mapping, Scalar
from shapelint.dialects import torchtune_builders
from shapelint.dialects.common import Builder, KeyAliases
from shapelint.dialects.lookup import child, derived

NAME = "torchtune"
# The losses of torchtune's supervised recipes (full, LoRA and QAT fine-tuning, knowledge
# distillation), whose ``batch_size`` is each device's micro-batch: "Total Batch Size =
# batch_size * number of GPUs * gradient accumulation steps" (recipes/full_finetune_distributed.py
# :94, the DataLoader's batch_size=cfg.batch_size over a StatefulDistributedSampler, :446 and
# :825 at bd2a0fc; the same in lora_finetune_*, qat_*, knowledge_distillation_*). A DPO recipe
# runs each example's chosen and rejected sequences in one forward (lora_dpo_single_device.py
# :457-478: 2 x batch_size rows) and PPO/GRPO recipes size their batches otherwise: not read.
PER_DEVICE_LOSSES = frozenset(
    {
        "torchtune.modules.loss.LinearCrossEntropyLoss",
        "torchtune.modules.loss.CEWithChunkedOutputLoss",
    }
)

SHAPE = ("embed_dim", "num_heads", "num_layers")
# Builder families whose decoders use torchtune's gated FeedForward (w1, w2, w3).
GATED_FAMILIES = (
    "llama",
    "code_llama",
    "mistral",
    "qwen",
    "gemma",
    "phi3",
    "phi4",
)


def _prefix(candidate: Candidate) -> str:
    """Where the model's keys sit: the root, or ``model.`` in a recipe YAML."""
    model = candidate.root.get("model")
    if isinstance(model, Mapping) and all(child(model, k) is not None for k in SHAPE):
        return "model."
    return ""


def _named_builder(block: Mapping) -> tuple[str, torchtune_builders.Shape] | None:
    """The tabled builder a block names in ``_component_`` while stating no shape key."""
    if any(child(block, k) is not None for k in SHAPE):
        return None
    hit = child(block, "_component_")
    component = hit[1] if hit is not None else None
    if not isinstance(component, Scalar) or not isinstance(component.value, str):
        return None
    return torchtune_builders.lookup(component.value)


def _blocks(candidate: Candidate) -> list[str]:
    """The top-level blocks of a recipe that each build a model (``model``; a PPO recipe's
    ``policy_model`` and ``reward_and_value_model``; a distillation recipe's
    ``teacher_model``): their keys' prefixes, ``model`` first."""
    if candidate.kind:
        return []
    found = []
    for entry in candidate.root.entries:
        block = entry.value
        if not isinstance(block, Mapping):
            continue
        if _named_builder(block) is not None:
            found.append(entry.key)
            continue
        if any(child(block, k) is None for k in SHAPE):
            continue
        hit = child(block, "_component_")
        component = hit[1] if hit is not None else None
        named = isinstance(component, Scalar) and str(component.value).startswith("torchtune.")
        if entry.key == "model" or named:
            found.append(entry.key)
    return sorted(found, key=lambda k: k != "model")


def _component(candidate: Candidate) -> str | None:
    """The ``_component_`` a recipe names for the model (at the root or under ``model``)."""
    for mapping in (candidate.root, candidate.root.get("model")):
        if isinstance(mapping, Mapping):
            found = child(mapping, "_component_")
            if found is not None and isinstance(found[1], Scalar):
                value = found[1].value
                if isinstance(value, str):
                    return value
    return None


def detect(candidate: Candidate) -> bool:
    """``embed_dim`` + ``num_heads`` + ``num_layers`` together, or a torchtune component."""
    root = candidate.root
    if all(child(root, k) is not None for k in SHAPE) or _prefix(candidate) or _blocks(candidate):
        return True
    component = _component(candidate)
    return component is not None and component.startswith("torchtune.")


def _gated(candidate: Candidate) -> bool | None:
    """True for the decoder families known to use a gated MLP, else unknown."""
    component = _component(candidate)
    name = component.rsplit(".", 1)[-1] if component else candidate.name.rsplit(" ", 1)[-1]
    name = name.rsplit(".", 1)[-1].lower()
    return True if name.startswith(GATED_FAMILIES) else None


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The model one builder call or recipe ``model:`` block states; nothing filled in. A
    recipe with several model blocks (PPO's policy and reward models) gives one config each,
    named by its block."""
    blocks = _blocks(candidate)
    if len(blocks) > 1 or (blocks and blocks[0] != "model"):
        out: list[ModelConfig] = []
        for key in blocks:
            out.extend(_extract(doc, replace(candidate, name=key), extra_keys, key + "."))
        return out
    return _extract(doc, candidate, extra_keys, "model." if blocks else _prefix(candidate))


def _extract(
    doc: Document, candidate: Candidate, extra_keys: KeyAliases, p: str
) -> list[ModelConfig]:
    b = Builder(candidate, doc.path, NAME, extra_keys)
    block = candidate.root.get(p[:-1]) if p else candidate.root
    named = _named_builder(block) if isinstance(block, Mapping) else None
    component = b.lookup(p + "_component_")
    if named is not None and component is not None:
        _builder_shape(b, component, p, *named)
        if p == "model.":
            _batch(b)
        return [b.build()]
    b.take(Dim.HIDDEN, p + "embed_dim")
    b.take(Dim.HEADS, p + "num_heads")
    b.take(Dim.KV_HEADS, p + "num_kv_heads")
    b.take(Dim.LAYERS, p + "num_layers")
    b.take(Dim.FFN, p + "intermediate_dim")
    b.take(Dim.VOCAB, p + "vocab_size")
    b.take(Dim.HEAD_DIM, p + "head_dim")
    if b.take(Dim.SEQ_LEN, p + "max_seq_len") is not None:
        b.seq_is_max_context = True
    b.gated_mlp = _gated(candidate)
    if p == "model.":
        _batch(b)
    config = b.build()
    return [config] if Dim.HIDDEN in config.dims else []


def _builder_shape(
    b: Builder, component: Value, p: str, name: str, shape: torchtune_builders.Shape
) -> None:
    """The shape of the builder ``component`` names, as torchtune's defaults for the block."""
    family, builder = name.split(".")
    where = f"{torchtune_builders.TORCHTUNE} {builder} ({family}/_model_builders.py:{shape.line})"

    def made(key: str, value: int, sources: tuple[Value, ...] = (component,)) -> Value:
        return derived(
            value, sources, f"{where}: {key}={value}", key=p + key, kind=Derivation.DEFAULT
        )

    ffn = shape.intermediate_dim
    if ffn is None:  # llama2_7b: its component builder's scale_hidden_dim_for_mlp(embed_dim)
        ffn = torchtune_builders.llama2_ffn(shape.embed_dim)
    for dim, key, value in (
        (Dim.HIDDEN, "embed_dim", shape.embed_dim),
        (Dim.HEADS, "num_heads", shape.num_heads),
        (Dim.KV_HEADS, "num_kv_heads", shape.num_kv_heads),
        (Dim.LAYERS, "num_layers", shape.num_layers),
        (Dim.FFN, "intermediate_dim", ffn),
        (Dim.VOCAB, "vocab_size", shape.vocab_size),
        (Dim.HEAD_DIM, "head_dim", shape.head_dim),
        (Dim.SEQ_LEN, "max_seq_len", shape.max_seq_len),
    ):
        if value is not None:
            b.set(dim, made(key, value))
    b.seq_is_max_context = True
    b.gated_mlp = True  # every tabled family's MLP is FeedForward(gate_proj, down_proj, up_proj)
    b.pretrained = True  # a released model's architecture: never fixed in place
    if family == "gemma2":
        window = made("sliding_window_size", torchtune_builders.GEMMA2_WINDOW)
        b.set(Dim.SLIDING_WINDOW, window)
        layers = b.dims[Dim.LAYERS]
        sliding = (shape.num_layers + 1) // 2
        b.set(
            Dim.WINDOW_LAYERS,
            derived(sliding, (window, layers), "layers with an even index (gemma2 builders)"),
        )


def _batch(b: Builder) -> None:
    """A supervised recipe's ``batch_size`` (per device) and ``gradient_accumulation_steps``."""
    loss = b.lookup("loss._component_")
    if loss is None or loss.value not in PER_DEVICE_LOSSES or b.lookup("ppo_epochs"):
        return
    b.take(Dim.MICRO_BATCH, "batch_size")
    b.take(Dim.GRAD_ACCUM, "gradient_accumulation_steps")
