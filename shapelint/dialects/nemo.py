"""NeMo-style training configs (NeMo 1 Hydra YAML, AWS neuronx-distributed-training confs, and
NeMo 2 ``model.config.*`` overrides).

Detected by a ``model`` mapping holding NeMo's Megatron keys (``encoder_seq_length``,
``ffn_hidden_size``, ``num_query_groups``, ``tensor_model_parallel_size``,
``make_vocab_size_divisible_by``, ``micro_batch_size``, ``global_batch_size``, or a
``model.config`` mapping with ``hidden_size``), or by ``trainer`` / ``distributed_strategy``
next to ``model.hidden_size``.

Keys: ``model[.config].hidden_size``, ``ffn_hidden_size``, ``num_attention_heads``,
``num_query_groups`` (neuronx: ``num_kv_heads``), ``kv_channels``, ``num_layers``,
``model.encoder_seq_length`` (else ``data.seq_length`` / ``model.data.seq_length`` /
``max_position_embeddings``), ``model.micro_batch_size`` or ``data.micro_batch_size``,
``model.global_batch_size`` or ``data.global_batch_size``, ``tensor_model_parallel_size`` under
``model``, ``distributed_strategy`` or ``trainer.strategy``, ``model.make_vocab_size_divisible_by``
(the vocab knob), ``trainer.precision``, ``model.activation`` (swiglu, geglu, reglu and their
``fast-`` variants are gated; NeMo 2: ``gated_linear_unit``), MoE ``model.moe.num_experts`` /
``top_k`` or ``num_moe_experts`` / ``moe_router_topk``.

``${a.b}`` and relative ``${.b}`` references are followed to the node they name inside the
file (reported there, marked shared); ``${multiply:a, b}`` of integers and references is their
product (a derived value); other resolver calls (``${oc.env:…}``) stay unknown. The vocab is
``model.override_vocab_size`` (NeMo otherwise takes it from the tokenizer), padded as
Megatron pads it (a multiple of ``make_vocab_size_divisible_by`` · tp, default 128).
``model.encoder`` / ``model.decoder`` stacks (T5, BART) are configs of their own, read by the
neutral key families; the batch and parallel settings join both, and the decoder's sequence
length is ``model.data.seq_length_dec``, else ``model.seq_length`` (NeMo's
``MegatronLMEncoderDecoderModel.max_decoder_seq_length``, `per_stack`).
A vision transformer's mapping (ViT, CLIP's ``model.vision``: ``patch_dim``, ``img_h``,
``img_w`` beside its width) runs ``(img_h // patch_dim) · (img_w // patch_dim) +
class_token_length`` tokens, not its ``encoder_seq_length``; unknown when
``class_token_length`` is not stated (`image_sequence`).
When ``model.model_config`` is a path (neuronx ``hf_*`` confs) the rest of the shape
lives in that file, so the config is marked ``shape_from_elsewhere``.
"""

from __future__ import annotations

from dataclasses import replace

from shapelint.core.model import Dim, ModelConfig, Traits, Value
from shapelint.core.source import Candidate, Document, Mapping, Scalar
from shapelint.dialects.common import (
    Builder,
    KeyAliases,
    dtype_value,
    round_up,
    settle_dims,
    take_interleaving,
    take_recompute,
    training_config,
)
from shapelint.dialects.lookup import child, derived, resolve, settle

NAME = "nemo"
# NeMo trains on Megatron-core, whose MLP applies its own activation between two Transformer
# Engine linears unless ``use_te_activation_func`` is set (megatron/core/models/gpt/
# gpt_layer_specs.py:532, transformer_config.py:1199 at d98e8a64; off by default).
ENGINES = ("megatron",)
TRAITS = Traits(own_mlp_activation=True, framework="megatron")

MODEL_MARKERS = (
    "encoder_seq_length",
    "ffn_hidden_size",
    "num_query_groups",
    "tensor_model_parallel_size",
    "make_vocab_size_divisible_by",
    "micro_batch_size",
    "global_batch_size",
)
GATED = frozenset(
    {"swiglu", "fast-swiglu", "geglu", "fast-geglu", "reglu", "fast-reglu", "fast_swiglu"}
)


# ``position_embedding_type`` values by shapelint's names (ModelConfig.position_embedding);
# NeMo's others (kerple, xpos, sandwich) have none here and stay unknown.
POSITION_TYPES = {"learned_absolute": "learned", "rope": "rope", "alibi": "alibi", "none": "none"}


def _under_model(*names: str) -> tuple[str, ...]:
    return tuple(f"{scope}.{name}" for name in names for scope in ("model", "model.config"))


def detect(candidate: Candidate) -> bool:
    """NeMo's Megatron keys inside a ``model`` mapping."""
    root = candidate.root
    model = root.get("model")
    if not isinstance(model, Mapping) or isinstance(model.get("model_config"), Mapping):
        return False  # a nested Hugging Face model_config is nanotron's
    config = model.get("config")
    if isinstance(config, Mapping) and child(config, "hidden_size"):
        return True
    if any(child(model, k) for k in MODEL_MARKERS):
        return True
    framework = any(isinstance(root.get(k), Mapping) for k in ("trainer", "distributed_strategy"))
    return framework and child(model, "hidden_size") is not None


DEFAULT_VOCAB_MULTIPLE = 128  # NeMo's make_vocab_size_divisible_by default


def _padded_vocab(b: Builder) -> None:
    """NeMo pads a stated vocab as Megatron does (``_vocab_size_with_padding``): to a multiple
    of ``make_vocab_size_divisible_by · tensor_model_parallel_size``."""
    vocab, v = b.dims.get(Dim.VOCAB), b.int(Dim.VOCAB)
    if vocab is None or not v or Dim.PADDED_VOCAB in b.dims:
        return
    knob, tp = b.dims.get(Dim.VOCAB_MULTIPLE), b.dims.get(Dim.TP)
    if (knob is not None and b.int(Dim.VOCAB_MULTIPLE) is None) or (
        tp is not None and b.int(Dim.TP) is None
    ):
        return  # a knob that is not known: the padding is unknown too
    m, t = b.int(Dim.VOCAB_MULTIPLE) or DEFAULT_VOCAB_MULTIPLE, b.int(Dim.TP) or 1
    sources = (vocab, *(s for s in (knob, tp) if s is not None))
    formula = "⌈vocab / (make_vocab_size_divisible_by · tp)⌉ · make_vocab_size_divisible_by · tp"
    b.derive(
        Dim.PADDED_VOCAB,
        derived(round_up(v, m * t), sources, formula, "padded_vocab_size"),
        lambda get: (
            round_up(x, (get(Dim.VOCAB_MULTIPLE) or m) * (get(Dim.TP) or t))
            if (x := get(Dim.VOCAB))
            else None
        ),
    )


PATCH_KEYS = ("patch_dim", "img_h", "img_w")
SEQ_KEYS = ("encoder_seq_length", "seq_length", "max_position_embeddings")


def image_sequence(b: Builder, scope: str) -> tuple[bool, Value | None]:
    """Whether the mapping at ``scope`` is a vision transformer's (``patch_dim``, ``img_h`` and
    ``img_w`` beside its width), and the sequence its layers run: one token per patch plus
    ``class_token_length`` class tokens, whatever ``encoder_seq_length`` says. Megatron-core's
    ``CLIPViTModel`` (``seq_length = num_patches + (class_token_len if add_class_token else
    0)``, ``megatron/core/models/vision/clip_vit_model.py``) and NeMo 1's ``VitBackbone`` add
    them; NeMo's CLIP adds them when ``class_token_length`` > 0, its ViT classifier defaults it
    to 8 (``vit_backbone.py``). A length the file does not state is unknown."""
    found = [b.lookup(f"{scope}.{key}") for key in PATCH_KEYS]
    if any(v is None for v in found):
        return False, None
    for name in SEQ_KEYS:  # what they say is not the length the layers run
        b.consult(f"{scope}.{name}")
    patch, h, w = (settle(b.candidate, v) for v in found if v is not None)
    stated = b.lookup(f"{scope}.class_token_length")
    if stated is None:
        return True, None
    tokens = settle(b.candidate, stated)
    p, rows, cols, n = patch.as_int, h.as_int, w.as_int, tokens.as_int
    if not (p and rows and cols) or n is None:
        return True, None
    formula = "(img_h // patch_dim) · (img_w // patch_dim) + class_token_length"
    seq = (rows // p) * (cols // p) + max(n, 0)
    return True, derived(seq, (h, w, patch, tokens), formula)


def per_stack(candidate: Candidate, config: ModelConfig) -> ModelConfig:
    """``config`` (one stack of a multi-stack model, the shared settings joined in) with the
    sequence that stack runs. T5's decoder runs ``model.data.seq_length_dec`` tokens, or
    ``model.seq_length`` when it is not set (``max_decoder_seq_length`` in NeMo's
    ``nemo/collections/nlp/models/language_modeling/megatron_lm_encoder_decoder_model.py``);
    a decoder whose shared length came from any other key has an unknown one. A CLIP vision
    stack runs its image patches (`image_sequence`)."""
    scope = config.name.removeprefix(f"{candidate.name}.") if candidate.name else config.name
    b = Builder(candidate, config.path, config.dialect)
    seq = config.dims.get(Dim.SEQ_LEN)
    if scope == "model.decoder":
        if seq is None:
            return config
        new = b.take(Dim.SEQ_LEN, "model.data.seq_length_dec")
        if new is not None:
            new = settle(candidate, new)
        elif seq.key == ".".join(filter(None, (candidate.key_prefix, "model.seq_length"))):
            return config
    else:
        vision, new = image_sequence(b, scope)
        if not vision:
            return config
    dims, sources = dict(config.dims), dict(config.sources)
    dims.pop(Dim.SEQ_LEN, None)
    sources.pop(Dim.SEQ_LEN, None)
    if new is not None:
        dims[Dim.SEQ_LEN], sources[Dim.SEQ_LEN] = new, NAME
    return replace(config, dims=dims, sources=sources, read_keys=config.read_keys | b.read_keys)


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The one model a NeMo config describes (or its batch/parallel settings)."""
    return extract_as(doc, candidate, extra_keys, NAME)


def extract_as(
    doc: Document, candidate: Candidate, extra_keys: KeyAliases, dialect: str
) -> list[ModelConfig]:
    """NeMo extraction reported under ``dialect`` (Megatron-LM's NeMo test cases use it)."""
    b = Builder(candidate, doc.path, dialect, extra_keys)
    b.take(Dim.HIDDEN, *_under_model("hidden_size"))
    b.take(Dim.HEADS, *_under_model("num_attention_heads"))
    b.take(Dim.KV_HEADS, *_under_model("num_query_groups", "num_kv_heads"))
    b.take(Dim.HEAD_DIM, *_under_model("kv_channels"))
    b.take(Dim.FFN, *_under_model("ffn_hidden_size"))
    b.take(Dim.LAYERS, *_under_model("num_layers"))
    b.take(
        Dim.SEQ_LEN,
        *_under_model("encoder_seq_length", "seq_length"),
        "data.seq_length",
        "model.data.seq_length",
        *_under_model("max_position_embeddings"),
    )
    b.take(Dim.MICRO_BATCH, "model.micro_batch_size", "data.micro_batch_size")
    b.take(Dim.GLOBAL_BATCH, "model.global_batch_size", "data.global_batch_size")
    b.take(
        Dim.TP,
        "model.tensor_model_parallel_size",
        "distributed_strategy.tensor_model_parallel_size",
        "trainer.strategy.tensor_model_parallel_size",
    )
    for dim, key in (
        (Dim.PP, "pipeline_model_parallel_size"),
        (Dim.EP, "expert_model_parallel_size"),
        (Dim.CP, "context_parallel_size"),
    ):
        b.take(dim, f"model.{key}", f"distributed_strategy.{key}", f"trainer.strategy.{key}")
    b.take(Dim.VOCAB_MULTIPLE, "model.make_vocab_size_divisible_by")
    # What the step model reads besides: the GPUs per node (Lightning's trainer.devices),
    # interleaved stages, recomputation (NeMo 1's
    # activations_checkpoint_granularity, NeMo 2's recompute_granularity) and Userbuffers
    # tensor-parallel overlap.
    b.take(Dim.GPUS_PER_NODE, "trainer.devices")
    take_interleaving(
        b,
        tuple(
            f"{where}.virtual_pipeline_model_parallel_size"
            for where in ("model", "distributed_strategy", "trainer.strategy")
        ),
    )
    take_recompute(
        b,
        (*_under_model("activations_checkpoint_granularity", "recompute_granularity"),),
    )
    b.take(Dim.TP_COMM_OVERLAP, "model.ub_tp_comm_overlap", *_under_model("tp_comm_overlap"))
    b.take(Dim.VOCAB, *_under_model("override_vocab_size"))
    b.take(Dim.EXPERTS, "model.moe.num_experts", *_under_model("num_moe_experts"))
    b.take(Dim.EXPERTS_PER_TOKEN, "model.moe.top_k", *_under_model("moe_router_topk"))
    b.take(Dim.MOE_FFN, *_under_model("moe_ffn_hidden_size"))
    b.set(Dim.DTYPE, dtype_value(b.lookup("trainer.precision")))
    activation = b.lookup(*_under_model("activation", "activation_func"))
    glu = b.lookup(*_under_model("gated_linear_unit"))
    b.gated_mlp = (activation is not None and str(activation.value).lower() in GATED) or (
        glu is not None and glu.value is True
    )
    position = b.lookup(*_under_model("position_embedding_type"))
    if position is not None and position.known:
        # a stated type only: the default when none is stated is the model class's
        b.position_embedding = POSITION_TYPES.get(str(position.value).lower())
    settle_dims(b)
    vision, image_seq = image_sequence(b, "model")
    if vision:
        b.dims.pop(Dim.SEQ_LEN, None)
        b.set(Dim.SEQ_LEN, image_seq)
    _padded_vocab(b)
    external = resolve(b.root, "model.model_config", candidate.key_prefix)
    configs = training_config(b)
    if external is not None and isinstance(external[1], Scalar) and external[1].value:
        configs = [replace(c, shape_from_elsewhere=True) for c in configs]
    if resolve(b.root, CONVERSION_SOURCE, candidate.key_prefix) is not None:
        configs = [_template(c) for c in configs]
    return configs


# NeMo-Framework-Launcher's HF -> NeMo conversion stage (``conf/conversion_hf2nemo/*.yaml``)
# runs NeMo's ``convert_llama_hf_to_nemo.py`` with the checkpoint path and the output file
# only (launcher_scripts/nemo_launcher/core/stages.py:2611-2650 at 26e42fa9); the converter
# copies the shape from the checkpoint's HF config (``load_config``,
# scripts/checkpoint_converters/convert_llama_hf_to_nemo.py:75-84 in NVIDIA/NeMo at 2fac26a8).
# The file's ``model`` block is a template whose sizes need not be the model's (the Mixtral
# 8x22B one pairs 48 heads with 32 query groups; the checkpoint has 8).
CONVERSION_SOURCE = "run.huggingface_ckpt_path"


def _template(config: ModelConfig) -> ModelConfig:
    """``config`` with every value unknown (kept, so no other reading fills them in)."""
    dims = {
        dim: replace(
            v,
            value=None,
            known=False,
            expression=f"{v.value} (the converter reads the checkpoint's)",
        )
        for dim, v in config.dims.items()
    }
    return replace(config, dims=dims, formulas={}, gated_mlp=None)
