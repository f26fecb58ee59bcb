"""Megatron-LM YAML: the experimental ``--yaml-cfg`` layout and the functional-test
``MODEL_ARGS`` blocks.

Detected by a ``language_model`` mapping holding ``hidden_size`` or ``num_layers``, by a
``MODEL_ARGS`` mapping whose keys are command-line flags (``--hidden-size``), or by the flags
of a shell launch script (`megatron_scripts`: ``torchrun pretrain_gpt.py --hidden-size …``).
``MODEL_ARGS`` blocks whose keys are dotted NeMo overrides (``model.config.hidden_size: 768``,
Megatron-LM's ``gpt-nemo`` test cases) are read with the NeMo key table (see `nemo`).

Keys (YAML layout / flag): ``language_model.hidden_size`` / ``--hidden-size``,
``num_attention_heads`` / ``--num-attention-heads``, ``num_query_groups`` /
``--num-query-groups`` (a flag only counts with ``--group-query-attention``; Megatron-DeepSpeed's
``--num-key-value-heads`` counts alone), ``kv_channels``
(with ``--multi-latent-attention``: ``--qk-head-dim + --qk-pos-emb-head-dim``, ``--v-head-dim``),
``ffn_hidden_size`` / ``--ffn-hidden-size``, ``num_layers``, ``num_moe_experts`` /
``--num-experts``, ``moe_router_topk`` (default 2; Megatron-DeepSpeed's ``--topk``, default
1, and ``--expert-interval``, default 2: `megatron_flags._moe_routing`), ``--moe-layer-freq``,
``moe_ffn_hidden_size``, MegaBlocks' ``--moe-num-experts`` (`megatron_flags._take_megablocks_moe`),
``model_parallel.tensor_model_parallel_size`` / ``--tensor-model-parallel-size``, top-level
``micro_batch_size``, ``global_batch_size``, ``seq_length`` (else ``max_position_embeddings``),
``vocab_size``, ``make_vocab_size_divisible_by`` (the vocab knob, default 128), ``bf16`` /
``fp16``; gated MLP from ``swiglu``, ``gated_linear_unit`` or ``activation_func: swiglu``.
BigScience's fork adds ``--pad-vocab-size-to`` (the padded vocab) and ``--glu-activation``
(a gated MLP whose width still defaults to ``4 · hidden``); BigCode's ``--attention-head-type
multiquery`` (one KV head). The first spellings ``--batch-size`` and ``--model-parallel-size``,
which every fork refuses, leave the micro-batch and the tensor-parallel size unknown.

Derived values, with Megatron-LM's own formulas:

- FFN width when not stated (``megatron/training/arguments.py`` ``validate_args``, and
  ``yaml_arguments.py`` for the YAML layout): ``int((4 · hidden · 2/3) / 64) · 64`` with
  SwiGLU, else ``4 · hidden``.
- Padded vocab when the vocab is stated (``megatron/training/vocab_utils.py`` and
  ``megatron/core/tokenizers/utils/build_tokenizer.py`` ``vocab_size_with_padding``):
  ``⌈v / (make_vocab_size_divisible_by · t)⌉ · make_vocab_size_divisible_by · t``.
"""

from __future__ import annotations

from shapelint.core.model import Dim, ModelConfig, Traits, Value
from shapelint.core.source import Candidate, Document, Entry, Mapping
from shapelint.dialects import megatron_scripts, nemo
from shapelint.dialects.common import (
    Builder,
    KeyAliases,
    round_up,
    settle_dims,
    take_interleaving,
    take_recompute,
    training_config,
)
from shapelint.dialects.lookup import child, derived
from shapelint.dialects.megatron_flags import take_flags, take_yaml
from shapelint.readers.hooks import ReaderHooks

NAME = "megatron-lm"
# What the readers learn from Megatron: its launch scripts' flags, and Megatron-core's config
# roots, whose defaults the key tables model (the Python reader need not read them).
READER_HOOKS = ReaderHooks(
    shell=(megatron_scripts.SCRIPTS,),
    neutral_base_paths=frozenset(
        {
            "megatron.core.transformer.transformer_config.TransformerConfig",
            "megatron.core.transformer.TransformerConfig",
            "megatron.core.model_parallel_config.ModelParallelConfig",
            "megatron.core.ModelParallelConfig",
        }
    ),
)
# Megatron-LM's MLP applies its own activation between two Transformer Engine linears unless
# ``use_te_activation_func`` or ``use_te_op_fuser`` is set (both off by default; megatron/core/
# models/gpt/gpt_layer_specs.py:532, megatron/core/transformer/transformer_config.py:1199 at
# d98e8a64), and shapelint reads neither.
TRAITS = Traits(own_mlp_activation=True, framework="megatron")


def engines(config: ModelConfig) -> tuple[str, ...]:
    """A Megatron-LM config runs on Megatron, and on Transformer Engine unless its
    ``transformer_impl`` says otherwise (``TransformerConfig.transformer_impl`` defaults to
    "transformer_engine", megatron/core/transformer/transformer_config.py:1314-1316 at
    d98e8a64; the command-line flags take that default, megatron/training/arguments.py:2373)."""
    impl = config.get(Dim.TRANSFORMER_IMPL)
    if impl is None or str(impl.value).lower() == "transformer_engine":
        return ("megatron", "transformer-engine")
    return ("megatron",)


DEFAULT_VOCAB_MULTIPLE = 128
ARGS = "MODEL_ARGS"


def _flag_keys(mapping: Mapping) -> bool:
    return any(entry.key.startswith("--") for entry in mapping.entries)


def detect(candidate: Candidate) -> bool:
    """A ``language_model`` mapping with a model key, a ``MODEL_ARGS`` flag block, or the
    flags of a launch script (``kind="shell"``)."""
    root = candidate.root
    if candidate.kind == "shell":
        return _flag_keys(root)
    args = root.get(ARGS)
    if isinstance(args, Mapping) and (
        _flag_keys(args) or any("." in entry.key for entry in args.entries)
    ):
        return True
    lm = root.get("language_model")
    return isinstance(lm, Mapping) and bool(child(lm, "hidden_size") or child(lm, "num_layers"))


def extract(doc: Document, candidate: Candidate, extra_keys: KeyAliases) -> list[ModelConfig]:
    """The one model a Megatron-LM YAML file describes (or its batch/parallel settings)."""
    args = candidate.root.get(ARGS)
    if isinstance(args, Mapping) and not _flag_keys(args):
        prefix = f"{candidate.key_prefix}.{ARGS}" if candidate.key_prefix else ARGS
        nested = Candidate(candidate.name, _nest(args), prefix, candidate.kind)
        return nemo.extract_as(doc, nested, extra_keys, NAME)
    b = Builder(candidate, doc.path, NAME, extra_keys)
    flags = "" if candidate.kind == "shell" else f"{ARGS}."  # where ``--flag`` keys sit
    if candidate.kind == "shell" or isinstance(args, Mapping):
        swiglu_width = take_flags(b, flags)
    else:
        take_yaml(b)
        swiglu_width = bool(b.gated_mlp)
    b.position_embedding = _position_embedding(b, candidate, flags)
    if b.position_embedding == "rope":
        # dim = int(kv_channels * rotary_percent) below 1.0
        # (megatron/core/models/common/embeddings/rotary_pos_embedding.py:73-74).
        b.rotary_fraction = b.lookup("rotary_percent", f"{flags}--rotary-percent")
    b.take(Dim.TRANSFORMER_IMPL, "transformer_impl", f"{flags}--transformer-impl")
    b.take(Dim.SEQUENCE_PARALLEL, "sequence_parallel", f"{flags}--sequence-parallel")
    b.take(Dim.TP_COMM_OVERLAP, "tp_comm_overlap", f"{flags}--tp-comm-overlap")
    # What the step model reads besides: the GPUs per node torchrun starts, recomputation and
    # interleaved pipeline stages.
    b.take(Dim.GPUS_PER_NODE, f"{flags}--nproc_per_node", f"{flags}--nproc-per-node")
    take_recompute(
        b,
        ("recompute_granularity", f"{flags}--recompute-granularity"),
        ("recompute_activations", f"{flags}--recompute-activations"),
    )
    take_interleaving(
        b,
        (
            "virtual_pipeline_model_parallel_size",
            "model_parallel.virtual_pipeline_model_parallel_size",
            f"{flags}--virtual-pipeline-model-parallel-size",
            "num_virtual_stages_per_pipeline_rank",
            f"{flags}--num-virtual-stages-per-pipeline-rank",
        ),
        (
            "num_layers_per_virtual_pipeline_stage",
            f"{flags}--num-layers-per-virtual-pipeline-stage",
        ),
    )
    settle_dims(b)
    _derive(b, swiglu_width)
    return training_config(b)


# ``--position-embedding-type`` values by shapelint's names (ModelConfig.position_embedding).
# Megatron-LM's choices (megatron/training/arguments.py:2397-2399 at d98e8a64): yarn and mrope
# turn queries and keys as rope does (megatron/core/models/gpt/gpt_model.py:183-215);
# "relative" (T5's attention bias) has no name here and stays unknown. BigScience's fork names
# them absolute (its default) and rotary (megatron/enums.py at 0c15c5a8), and alibi later.
POSITION_TYPES = {
    "learned_absolute": "learned",
    "rope": "rope",
    "yarn": "rope",
    "mrope": "rope",
    "none": "none",
    "absolute": "learned",
    "rotary": "rope",
    "alibi": "alibi",
}
# The trainer whose parser defaults to learned absolute positions in every Megatron fork read
# here: Megatron-LM's --position-embedding-type default 'learned_absolute'
# (megatron/training/arguments.py:2397 at d98e8a64; the embedding adds the position table
# then, megatron/core/models/common/embeddings/language_model_embedding.py:47);
# Megatron-DeepSpeed's --no-position-embedding, a store_false whose add_position_embedding
# is true unless passed (megatron/arguments.py:640-643, megatron/model/language_model.py:
# 163-164 at f4157bea); MegaBlocks' fork, which always adds one (megatron/model/
# language_model.py:159-160, 215-216 at stanford-futuredata/Megatron-LM 3a9e3d8d).
GPT_TRAINER = "pretrain_gpt.py"


def _position_embedding(b: Builder, candidate: Candidate, flags: str) -> str | None:
    """How positions enter the model, or None when unknown (the performance model then times
    rotary, as for any config that does not say).

    ``--use-rotary-position-embeddings`` means rope whatever the type (Megatron-LM
    arguments.py:1626-1627 at d98e8a64; Megatron-DeepSpeed arguments.py:316-317 at f4157bea);
    else ``--position-embedding-type`` (a value picked in a branch, or a type with no name
    here, is unknown); else ``--no-position-embedding`` alone means none (Megatron-DeepSpeed;
    Megatron-LM refuses it without rope, arguments.py:1633-1634). With none of them the
    parser's default holds: learned absolute positions, for a script whose only trainer is
    ``pretrain_gpt.py`` and for Megatron-LM's functional-test ``MODEL_ARGS``. Another program
    (Pai-Megatron-Patch's ``pretrain_mcore_llama.py``, a Hugging Face trainer) builds a model
    of its own, and the YAML layout states its settings in full: unknown there."""
    rotary = b.lookup(f"{flags}--use-rotary-position-embeddings")
    stated = b.lookup("position_embedding_type", f"{flags}--position-embedding-type")
    absent = b.lookup(f"{flags}--no-position-embedding")
    if rotary is not None and rotary.known and rotary.value is True:
        return "rope"
    if stated is not None:
        mapped = POSITION_TYPES.get(str(stated.value).lower()) if stated.known else None
        maybe_rotary = rotary is not None and not rotary.known
        return None if maybe_rotary and mapped != "rope" else mapped
    if rotary is not None and not rotary.known:
        return None
    if absent is not None:
        return "none" if absent.known and absent.value is True else None
    if candidate.kind == "shell":
        return "learned" if candidate.callee == GPT_TRAINER else None
    return "learned" if isinstance(candidate.root.get(ARGS), Mapping) else None


# Parallel sizes besides TP (the SL3xx engine rules read them).
def megatron_ffn(hidden: int, swiglu: bool) -> int:
    """Megatron-LM's FFN width when ``ffn_hidden_size`` is not set."""
    return int((4 * hidden * 2 / 3) / 64) * 64 if swiglu else 4 * hidden


def padded_vocab(vocab: int, multiple: int, tp: int) -> int:
    """Megatron-LM's padded vocab: a multiple of ``multiple · tp``."""
    return round_up(vocab, multiple * tp)


def _derive(b: Builder, swiglu_width: bool) -> None:
    hidden = b.dims.get(Dim.HIDDEN)
    h = b.int(Dim.HIDDEN)
    if Dim.FFN not in b.dims and hidden is not None and h:
        formula = "int((4 · hidden · 2/3) / 64) · 64 (SwiGLU)" if swiglu_width else "4 · hidden"
        gated = swiglu_width
        b.derive(
            Dim.FFN,
            derived(megatron_ffn(h, gated), (hidden,), formula),
            lambda get: megatron_ffn(x, gated) if (x := get(Dim.HIDDEN)) else None,
        )
    vocab = b.dims.get(Dim.VOCAB)
    v = b.int(Dim.VOCAB)
    if Dim.PADDED_VOCAB in b.dims or vocab is None or not v:
        return
    sources: tuple[Value, ...] = (vocab,)
    knob = b.dims.get(Dim.VOCAB_MULTIPLE)
    multiple = b.int(Dim.VOCAB_MULTIPLE)
    if knob is not None:
        if multiple is None:
            return
        sources += (knob,)
    tp_value = b.dims.get(Dim.TP)
    tp = b.int(Dim.TP)
    if tp_value is not None:
        if tp is None:
            return
        sources += (tp_value,)
    m, t = multiple or DEFAULT_VOCAB_MULTIPLE, tp or 1
    formula = "⌈vocab / (make_vocab_size_divisible_by · tp)⌉ · make_vocab_size_divisible_by · tp"
    b.derive(
        Dim.PADDED_VOCAB,
        derived(padded_vocab(v, m, t), sources, formula, "padded_vocab_size"),
        lambda get: (
            padded_vocab(x, get(Dim.VOCAB_MULTIPLE) or m, get(Dim.TP) or t)
            if (x := get(Dim.VOCAB))
            else None
        ),
    )


def _nest(args: Mapping) -> Mapping:
    """Dotted override keys (``model.config.hidden_size``) as nested mappings."""
    groups: dict[str, list[Entry]] = {}
    order: list[tuple[str, Entry | None]] = []
    for entry in args.entries:
        head, dot, rest = entry.key.partition(".")
        if not dot or not head or not rest:
            order.append((entry.key, entry))
            continue
        if head not in groups:
            groups[head] = []
            order.append((head, None))
        groups[head].append(Entry(rest, entry.key_span, entry.value))
    entries: list[Entry] = []
    for key, plain in order:
        if plain is not None:
            entries.append(plain)
            continue
        members = groups[key]
        inner = _nest(Mapping(tuple(members), args.span, args.shared))
        entries.append(Entry(key, members[0].key_span, inner))
    return Mapping(tuple(entries), args.span, args.shared)
