"""Megatron-LM's key tables: the ``--yaml-cfg`` layout's keys (`take_yaml`) and the
command-line flags of ``MODEL_ARGS`` blocks and launch scripts (`take_flags`), with the
flags of its forks (Megatron-DeepSpeed's MoE, BigScience's, BigCode's, MegaBlocks'), FP8 and
multi-latent attention.

The dialect (detection, positions, the derived FFN width and padded vocab) is
`shapelint.dialects.megatron`, whose docstring lists the keys.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import replace

from shapelint.core.model import Derivation, Dim, Value
from shapelint.dialects.common import (
    Builder,
    set_dtype_from_flags,
)
from shapelint.dialects.lookup import derived

# Megatron-LM's defaults for --qk-head-dim, --qk-pos-emb-head-dim and --v-head-dim (MLA).
MLA_QK_HEAD_DIM, MLA_ROPE_HEAD_DIM, MLA_V_HEAD_DIM = 128, 64, 128


_PARALLEL = (
    (Dim.PP, "pipeline_model_parallel_size"),
    (Dim.EP, "expert_model_parallel_size"),
    (Dim.CP, "context_parallel_size"),
)


# Settings with which Megatron-LM sizes pipeline stages itself, skipping its even-split check
# (megatron/training/arguments.py:941-998 at d98e8a64); the account_for_* switches count only
# when true.
_LAYOUT_KEYS = (
    "pipeline_model_parallel_layout",
    "decoder_first_pipeline_num_layers",
    "decoder_last_pipeline_num_layers",
    "num_virtual_stages_per_pipeline_rank",
    "hybrid_layer_pattern",
)
_LAYOUT_SWITCHES = ("account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split")


def _take_layout(b: Builder, names: Callable[[str], tuple[str, ...]]) -> None:
    b.take(Dim.PP_LAYOUT, *(n for key in _LAYOUT_KEYS for n in names(key)))
    for key in _LAYOUT_SWITCHES:
        switch = b.lookup(*names(key))
        if switch is not None and switch.value is True:
            b.set(Dim.PP_LAYOUT, switch)


def take_yaml(b: Builder) -> None:
    lm = "language_model."
    b.take(Dim.HIDDEN, lm + "hidden_size")
    b.take(Dim.HEADS, lm + "num_attention_heads")
    b.take(Dim.KV_HEADS, lm + "num_query_groups")
    b.take(Dim.HEAD_DIM, lm + "kv_channels")
    b.take(Dim.FFN, lm + "ffn_hidden_size")
    b.take(Dim.LAYERS, lm + "num_layers")
    if (experts := b.take(Dim.EXPERTS, lm + "num_moe_experts")) is not None:
        if b.take(Dim.EXPERTS_PER_TOKEN, lm + "moe_router_topk") is None:
            default = "Megatron-LM's default moe_router_topk"
            b.set(
                Dim.EXPERTS_PER_TOKEN,
                derived(MEGATRON_TOP_K, (experts,), default, kind=Derivation.DEFAULT),
            )
        b.take(Dim.MOE_FFN, lm + "moe_ffn_hidden_size")
    else:  # MoE settings of a dense model mean nothing
        b.consult(lm + "moe_router_topk", lm + "moe_ffn_hidden_size")
    b.take(Dim.TP, "model_parallel.tensor_model_parallel_size", "tensor_model_parallel_size")
    for dim, key in _PARALLEL:
        b.take(dim, f"model_parallel.{key}", key)
    _take_layout(b, lambda key: (f"model_parallel.{key}", key))
    b.take(Dim.MICRO_BATCH, "micro_batch_size")
    b.take(Dim.GLOBAL_BATCH, "global_batch_size")
    b.take(Dim.SEQ_LEN, "seq_length", "max_position_embeddings")
    b.take(Dim.VOCAB, "vocab_size")
    b.take(Dim.VOCAB_MULTIPLE, "make_vocab_size_divisible_by")
    set_dtype_from_flags(
        b, {"bf16": ("model_parallel.bf16", "bf16"), "fp16": ("model_parallel.fp16", "fp16")}
    )
    swiglu = b.lookup("swiglu")
    glu = b.lookup(lm + "gated_linear_unit")
    act = b.lookup(lm + "activation_func")
    b.gated_mlp = (
        (swiglu is not None and swiglu.value is True)
        or (glu is not None and glu.value is True)
        or (act is not None and str(act.value).lower() == "swiglu")
    )


def take_flags(b: Builder, prefix: str) -> bool:
    """Read the flags; True when the FFN width defaults to Megatron's SwiGLU formula."""

    def flag(name: str) -> str:
        return f"{prefix}--{name}"

    b.take(Dim.HIDDEN, flag("hidden-size"))
    b.take(Dim.HEADS, flag("num-attention-heads"))
    _head_type(b, flag("attention-head-type"))
    gqa = b.lookup(flag("group-query-attention"))
    if gqa is not None and gqa.value is True:
        b.take(Dim.KV_HEADS, flag("num-query-groups"))
    elif gqa is not None and not gqa.known:
        # passed only in some branch (Pai-Megatron-Patch's ``gqa_options`` per $MODEL_SIZE):
        # KV heads are the query groups or the heads, which is unknown
        b.consult(flag("num-query-groups"))
        b.set(Dim.KV_HEADS, gqa)
    else:
        # Megatron-DeepSpeed's own GQA flag, with no switch (megatron/arguments.py:623, and
        # 444-445: heads when not given; microsoft/Megatron-DeepSpeed at f4157bea).
        b.take(Dim.KV_HEADS, flag("num-key-value-heads"))
        # --num-query-groups without --group-query-attention is ignored by Megatron: read,
        # so that no other reader (the key lexicon) takes it for the KV heads.
        b.consult(flag("num-query-groups"))
    mla = b.lookup(flag("multi-latent-attention"))
    if mla is not None and mla.value is True:
        _mla_head_dims(b, mla, prefix)
    b.take(Dim.HEAD_DIM, flag("kv-channels"))
    fork_width = None
    if b.take(Dim.FFN, flag("ffn-hidden-size")) is None:
        # Pai-Megatron-Patch's own --intermediate-size (megatron_patch/arguments.py:128 at
        # a098ca5a) is the MLP's inner width in its models (model/llama/transformer.py:110-123,
        # model/baichuan/transformer.py:107-110); whether that MLP is gated is the model
        # file's (Llama's always, Baichuan's with --swiglu), so without --swiglu it is unknown.
        fork_width = b.take(Dim.FFN, flag("intermediate-size"))
    b.take(Dim.LAYERS, flag("num-layers"))
    gated_experts = None
    experts = b.take(Dim.EXPERTS, flag("num-experts"))
    if experts is not None:
        b.take(Dim.MOE_FFN, flag("moe-ffn-hidden-size"))
        _moe_routing(b, flag, experts)
    else:
        gated_experts = _take_megablocks_moe(b, flag)
    _refused(b, flag)
    b.take(Dim.TP, flag("tensor-model-parallel-size"))
    for dim, key in _PARALLEL:
        b.take(dim, flag(key.replace("_", "-")))
    _take_layout(b, lambda key: (flag(key.replace("_", "-")),))
    deepspeed = b.lookup(flag("deepspeed"))
    no_pipe = b.lookup(flag("no-pipeline-parallel"))
    if deepspeed is not None and deepspeed.value is True and (no_pipe is None or not no_pipe.known):
        # Megatron-DeepSpeed with --deepspeed builds GPTModelPipe, whose stages DeepSpeed's
        # PipelineModule sizes (partition_method='type:transformer', one LayerSpec a layer):
        # no even split is asserted, unlike ParallelTransformer's (megatron/model/
        # transformer.py:1613-1614; pretrain_gpt.py:51-52, megatron/model/gpt_model.py:388,
        # 459-463 at f4157bea). BLOOM trained 70 layers on 12 stages so. A --no-pipeline-parallel
        # passed only in some runs leaves the split unknown: not reported either.
        b.set(Dim.PP_LAYOUT, deepspeed)
    b.take(Dim.MICRO_BATCH, flag("micro-batch-size"))
    b.take(Dim.GLOBAL_BATCH, flag("global-batch-size"))
    if b.lookup(flag("language-model-type")) is not None:
        # Megatron-LM's multimodal examples: --seq-length is the vision encoder's image
        # embeddings, the language model runs --decoder-seq-length (required there;
        # examples/multimodal/model.py:69-70, 80-82 at d98e8a64).
        b.take(Dim.SEQ_LEN, flag("decoder-seq-length"))
        b.consult(flag("seq-length"), flag("max-position-embeddings"))
    else:
        b.take(Dim.SEQ_LEN, flag("seq-length"), flag("max-position-embeddings"))
    b.take(Dim.VOCAB, flag("vocab-size"))
    b.take(Dim.VOCAB_MULTIPLE, flag("make-vocab-size-divisible-by"))
    _take_fp8(b, flag("fp8-format"), flag("fp8-recipe"))
    # BigScience's fork (bigscience-workshop/Megatron-DeepSpeed at 8387ae17): the padded vocab
    # itself (megatron/tokenizer/tokenizer.py:72-82), and GLU MLPs whose first projection is
    # 2 · ffn wide (megatron/model/transformer.py:73-76) while the FFN width still defaults to
    # 4 · hidden (megatron/arguments.py:243-244).
    b.take(Dim.PADDED_VOCAB, flag("pad-vocab-size-to"))
    for switch in (flag("fp8-format"), flag("bf16"), flag("fp16")):
        # a precision picked in a branch (Pai-Megatron-Patch: ``--fp16``, ``--bf16`` or
        # ``--fp8-format hybrid`` by $PR): the dtype is unknown, not the last one written
        value = b.lookup(switch)
        if value is not None and not value.known:
            b.set(Dim.DTYPE, value)
    set_dtype_from_flags(b, {"bf16": (flag("bf16"),), "fp16": (flag("fp16"),)})
    swiglu = b.lookup(flag("swiglu"))
    glu = b.lookup(flag("glu-activation"))
    swiglu_width = swiglu is not None and swiglu.value is True
    if swiglu is not None and not swiglu.known:
        # gated or not is unknown, and so is the FFN width Megatron would default to
        b.set(Dim.FFN, swiglu)
        b.gated_mlp = None
        return False
    if glu is not None and not glu.known:
        b.gated_mlp = None if not swiglu_width else True
    else:
        b.gated_mlp = swiglu_width or (glu is not None and isinstance(glu.value, str))
    if gated_experts is not None:  # MegaBlocks' --glu: gated experts, or unknown
        b.gated_mlp = True if gated_experts.value is True else None
    if fork_width is not None and b.gated_mlp is False:
        b.gated_mlp = None
    return swiglu_width


# Megatron-LM's first spellings of the micro-batch and the tensor-parallel size, which its
# forks still parse only to refuse: a run passing one stops at start-up ("--batch-size argument
# is no longer valid, use --micro-batch-size instead"). Megatron-LM megatron/training/
# arguments.py:591-599 (parsed at 2866-2868, 3111-3113) at d98e8a64; microsoft/Megatron-DeepSpeed
# megatron/arguments.py:126-134 at f4157bea; bigcode-project/Megatron-LM megatron/arguments.py:
# 124-132 at 7c325cd3 (parsed at 751, 1020).
REFUSED_FLAGS = {
    "batch-size": (Dim.MICRO_BATCH, "--micro-batch-size"),
    "model-parallel-size": (Dim.TP, "--tensor-model-parallel-size"),
}


def _refused(b: Builder, flag: Callable[[str], str]) -> None:
    """``--batch-size`` / ``--model-parallel-size``: what they once meant is not what a run
    gets, since every fork refuses them; the micro-batch and the tensor-parallel size are
    unknown then (the value is shown, with the flag the forks take instead)."""
    for name, (dim, instead) in REFUSED_FLAGS.items():
        old = b.lookup(flag(name))
        if old is None:
            continue
        written = old.expression or str(old.value)
        why = f"--{name} {written}: refused by Megatron-LM and its forks (they take {instead})"
        b.set(dim, _unknown(old, why))


# BigCode's fork (bigcode-project/Megatron-LM at 7c325cd3): ``--attention-head-type``, one of
# ``multihead`` and ``multiquery`` (megatron/arguments.py:575-578). Multi-query attention
# projects the queries per head but keys and values once, ``2 · kv_channels`` wide, shared by
# every head (megatron/model/transformer.py:627-641; one head in the core attention, line
# 732): one KV head. Multi-head projects all three per head (lines 618-625).
HEAD_TYPE_KV = {"multiquery": "one KV head shared by all heads (multi-query attention)"}


def _head_type(b: Builder, key: str) -> None:
    """KV heads from BigCode's ``--attention-head-type``: 1 for ``multiquery``; ``multihead``
    keeps the default (the heads); a type picked in a branch leaves them unknown."""
    kind = b.lookup(key)
    if kind is None:
        return
    if not kind.known:
        b.set(Dim.KV_HEADS, kind)
        return
    written = str(kind.value)
    if written in HEAD_TYPE_KV:
        formula = f"{kind.key} {written}: {HEAD_TYPE_KV[written]}"
        b.set(Dim.KV_HEADS, derived(1, (kind,), formula, kind=Derivation.CONVERSION))


# Flags only Megatron-DeepSpeed's MoE has (megatron/arguments.py:606-620, 1159 in
# microsoft/Megatron-DeepSpeed at f4157bea), and only Megatron-LM's: the two read
# ``--num-experts`` with different routing defaults.
DEEPSPEED_MOE_FLAGS = (
    "topk",
    "expert-interval",
    "mlp-type",
    "moe-expert-parallel-size",
    "moe-train-capacity-factor",
    "moe-min-capacity",
    "disable-moe-token-dropping",
    "moe-loss-coeff",
    "deepspeed",
)
MEGATRON_MOE_FLAGS = ("moe-router-topk", "moe-layer-freq", "expert-model-parallel-size")
# Megatron-LM's moe_router_topk default (megatron/core/transformer/transformer_config.py:760
# at d98e8a64); Megatron-DeepSpeed's --topk and --expert-interval defaults
# (megatron/arguments.py:612-615 at f4157bea).
MEGATRON_TOP_K = 2
DEEPSPEED_TOP_K, DEEPSPEED_EXPERT_INTERVAL = 1, 2


def _unknown(value: Value, expression: str) -> Value:
    return replace(value, value=None, known=False, expression=expression)


def _moe_routing(b: Builder, flag: Callable[[str], str], experts: Value) -> None:
    """Top-k and which layers are MoE, by the fork the flags belong to.

    Megatron-LM: ``--moe-router-topk`` (default 2) and ``--moe-layer-freq``, an int N (every
    N-th layer from the first, default 1) or a list expression (``"([0]*3+[1]*58)"``: read as
    unknown). Megatron-DeepSpeed: ``--topk`` (default 1) and ``--expert-interval`` (default
    2): layer n (from 1) is MoE when n % interval == 0 (megatron/model/transformer.py:
    1650-1658), so layers not a multiple of the interval are not timed; ``--mlp-type
    residual`` (PR-MoE, a dense MLP beside the experts) is not timed either. A script with
    neither fork's flags leaves the top-k unknown."""
    deepspeed = any(b.lookup(flag(name)) is not None for name in DEEPSPEED_MOE_FLAGS)
    megatron = any(b.lookup(flag(name)) is not None for name in MEGATRON_MOE_FLAGS)
    if megatron and not deepspeed:
        if b.take(Dim.EXPERTS_PER_TOKEN, flag("moe-router-topk")) is None:
            default = "Megatron-LM's default moe_router_topk"
            b.set(
                Dim.EXPERTS_PER_TOKEN,
                derived(MEGATRON_TOP_K, (experts,), default, kind=Derivation.DEFAULT),
            )
        freq = b.lookup(flag("moe-layer-freq"))
        if freq is not None and freq.as_int is None:
            _layer_pattern(b, freq)
        else:
            b.take(Dim.MOE_LAYER_FREQ, flag("moe-layer-freq"))
        return
    if not deepspeed:
        what = "Megatron-LM's default 2 or Megatron-DeepSpeed's 1: no fork's MoE flag"
        b.set(Dim.EXPERTS_PER_TOKEN, _unknown(experts, what))
        return
    if b.take(Dim.EXPERTS_PER_TOKEN, flag("topk")) is None:
        default = "Megatron-DeepSpeed's default --topk"
        b.set(
            Dim.EXPERTS_PER_TOKEN,
            derived(DEEPSPEED_TOP_K, (experts,), default, kind=Derivation.DEFAULT),
        )
    interval = b.take(Dim.MOE_LAYER_FREQ, flag("expert-interval"))
    if interval is None:
        default = "Megatron-DeepSpeed's default --expert-interval"
        interval = derived(DEEPSPEED_EXPERT_INTERVAL, (experts,), default, kind=Derivation.DEFAULT)
        b.set(Dim.MOE_LAYER_FREQ, interval)
    layers, every = b.int(Dim.LAYERS), interval.as_int
    if layers and every and layers % every:
        b.untimed = (
            f"MoE layers every {every}th counted from layer {every} ({interval.key}), "
            f"not from the first, in {layers} layers"
        )
    mlp_type = b.lookup(flag("mlp-type"))
    if mlp_type is not None and (not mlp_type.known or mlp_type.value != "standard"):
        b.untimed = f"residual MoE layers ({mlp_type.key} {mlp_type.expression or mlp_type.value})"


def _layer_pattern(b: Builder, freq: Value) -> None:
    """``--moe-layer-freq "([0]*3+[1]*58)"``: Megatron-LM evaluates the list expression, one 0
    (dense) or 1 (MoE) a layer (megatron/training/arguments.py:327-347 at d98e8a64). Read
    here when it is ``first`` dense layers then every ``f``-th one MoE (``i % f == 0``, as an
    int frequency: megatron/core/models/gpt/gpt_layer_specs.py:649), else unknown."""
    text = str(freq.value).strip().strip("'\"")
    pattern = _int_list(text)
    layers = b.int(Dim.LAYERS)
    if pattern is None or 1 not in pattern or (layers and len(pattern) != layers):
        b.set(Dim.MOE_LAYER_FREQ, _unknown(freq, text))
        return
    first = pattern.index(1)
    for every in range(1, len(pattern) + 1):
        if all(p == (1 if i >= first and i % every == 0 else 0) for i, p in enumerate(pattern)):
            formula = f"{text}: every {every}th layer from layer {first}"
            b.set(Dim.MOE_LAYER_FREQ, derived(every, (freq,), formula))
            b.set(Dim.DENSE_LAYERS, derived(first, (freq,), formula))
            return
    b.set(Dim.MOE_LAYER_FREQ, _unknown(freq, text))


def _int_list(text: str) -> list[int] | None:
    """A list expression of int literals, ``+`` and ``*`` (``([1]*3+[0]*1)*3``), or None."""
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None

    def value(node: ast.expr, depth: int = 0) -> list[int] | int | None:
        if depth > 32:
            return None
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.List):
            items = [value(e, depth + 1) for e in node.elts]
            return (
                [i for i in items if isinstance(i, int)]
                if all(isinstance(i, int) for i in items)
                else None
            )
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
            left, right = value(node.left, depth + 1), value(node.right, depth + 1)
            if isinstance(node.op, ast.Add) and isinstance(left, list) and isinstance(right, list):
                return left + right if len(left) + len(right) <= MAX_PATTERN else None
            if isinstance(node.op, ast.Mult):
                seq, n = (left, right) if isinstance(left, list) else (right, left)
                if (
                    isinstance(seq, list)
                    and isinstance(n, int)
                    and 0 <= n * len(seq) <= MAX_PATTERN
                ):
                    return seq * n
        return None

    result = value(tree)
    return result if isinstance(result, list) else None


# Longest layer pattern evaluated (no model has more layers; hostile input must stay small).
MAX_PATTERN = 4096


# MegaBlocks' Megatron-LM fork (stanford-futuredata/Megatron-LM at 3a9e3d8d, the submodule
# databricks/megablocks pins): --moe-top-k defaults to 1 (megatron/arguments.py:479-481).
MEGABLOCKS_TOP_K = 1


def _take_megablocks_moe(b: Builder, flag: Callable[[str], str]) -> Value | None:
    """MegaBlocks' fork names its MoE flags ``--moe-num-experts`` (unset: every MLP dense),
    ``--moe-top-k`` (default 1) and ``--moe-capacity-factor`` (default 0); every layer's MLP
    is a MoE layer then (megatron/model/transformer.py:710-718 at 3a9e3d8d). Each expert is
    ``--ffn-hidden-size`` wide, 4 · hidden by default (megatron/arguments.py:245-246), as
    ``from_megatron`` copies that field into MegaBlocks' ``Arguments``
    (megablocks/layers/arguments.py:95-99 at 78eea65f): the FFN width read is the experts'.
    Returns the fork's ``--glu`` switch (gated experts, added at 85f95aef) when passed.

    A capacity factor above 0 picks the token-dropping ``MoE`` layer, whose experts compute
    batches padded to ``capacity_factor · top_k · tokens / experts`` rows
    (megablocks/layers/moe.py:133-136); the performance model times dropless routing only,
    so such a model (or one whose factor is unknown) is not timed. ``--moe-use-megatron-switch``
    (argparse ``type=bool``: any word but an empty one is true) routes each token to one
    expert (the fork's ``SwitchMLP``, transformer.py:150-151). ``--moe-expert-model-parallelism``
    shards the experts over the data-parallel group (transformer.py:194-195), whose size no
    flag states, and MegaBlocks splits each expert's width when that group outnumbers the
    experts (megablocks/layers/mpu.py:65-93): no expert-parallel size is read from it."""
    knobs = (flag("moe-top-k"), flag("moe-capacity-factor"), flag("moe-use-megatron-switch"))
    experts = b.take(Dim.EXPERTS, flag("moe-num-experts"))
    if experts is None:
        b.consult(*knobs)  # MoE settings of a dense model mean nothing
        return None
    b.consult(*knobs, flag("moe-expert-model-parallelism"))
    switch = b.lookup(flag("moe-use-megatron-switch"))
    if switch is not None and not switch.known:
        b.set(Dim.EXPERTS_PER_TOKEN, switch)  # one expert, or --moe-top-k: unknown
    elif switch is not None and switch.value not in ("", False):
        b.set(Dim.EXPERTS_PER_TOKEN, derived(1, (switch,), "SwitchMLP: one expert a token"))
    if b.take(Dim.EXPERTS_PER_TOKEN, flag("moe-top-k")) is None:
        default = derived(
            MEGABLOCKS_TOP_K, (experts,), "MegaBlocks' default moe_top_k", kind=Derivation.DEFAULT
        )
        b.set(Dim.EXPERTS_PER_TOKEN, default)
    capacity = b.lookup(flag("moe-capacity-factor"))
    dropping = capacity is not None and (not capacity.known or capacity.value != 0)
    if dropping and (switch is None or not switch.known or switch.value in ("", False)):
        assert capacity is not None
        written = capacity.expression or str(capacity.value)
        b.untimed = (
            f"token-dropping MoE layers ({capacity.key} {written}), whose experts compute "
            "capacity-padded batches"
        )
    return b.lookup(flag("glu"))


# Megatron-LM's FP8 recipes (``TransformerConfig.fp8_recipe``, default "delayed":
# megatron/core/transformer/transformer_config.py:587-599 at d98e8a64) by shapelint's names
# (`FP8_RECIPES`); "blockwise" and "custom" have none here and stay unknown.
FP8_RECIPE_NAMES = {"delayed": "delayed", "tensorwise": "current", "mxfp8": "mxfp8"}


def _take_fp8(b: Builder, format_key: str, recipe_key: str) -> None:
    """``--fp8-format e4m3|hybrid`` trains the linear layers in FP8 through Transformer Engine
    (the dtype, ahead of ``--bf16``, which then only sets the other layers' precision), with
    ``--fp8-recipe`` (default delayed scaling)."""
    fmt = b.lookup(format_key)
    if fmt is None or str(fmt.value).lower() not in ("e4m3", "hybrid"):
        return
    b.set(Dim.DTYPE, derived("fp8", (fmt,), f"{fmt.key} {fmt.value}", kind=Derivation.CONVERSION))
    recipe = b.lookup(recipe_key)
    if recipe is None:
        b.set(
            Dim.FP8_RECIPE,
            derived("delayed", (fmt,), "Megatron-LM's default fp8_recipe", kind=Derivation.DEFAULT),
        )
        return
    name = FP8_RECIPE_NAMES.get(str(recipe.value).lower())
    if name is not None:
        b.set(
            Dim.FP8_RECIPE,
            derived(name, (recipe,), f"{recipe.key} {recipe.value}", kind=Derivation.CONVERSION),
        )


def _mla_head_dims(b: Builder, mla: Value, prefix: str) -> None:
    """Multi-latent attention: query/key heads are ``qk_head_dim + qk_pos_emb_head_dim`` wide
    (Megatron-LM's defaults 128 and 64), value heads ``v_head_dim`` (default 128)."""
    qk = b.lookup(f"{prefix}--qk-head-dim")
    rope = b.lookup(f"{prefix}--qk-pos-emb-head-dim")
    qk_dim = qk.as_int if qk is not None else MLA_QK_HEAD_DIM
    rope_dim = rope.as_int if rope is not None else MLA_ROPE_HEAD_DIM
    if qk_dim is not None and rope_dim is not None:
        sources = tuple(v for v in (qk, rope) if v is not None) or (mla,)
        formula = "qk_head_dim + qk_pos_emb_head_dim (multi-latent attention)"
        b.set(Dim.HEAD_DIM, derived(qk_dim + rope_dim, sources, formula))
    if b.take(Dim.V_HEAD_DIM, f"{prefix}--v-head-dim") is None:
        b.set(Dim.V_HEAD_DIM, derived(MLA_V_HEAD_DIM, (mla,), "v_head_dim default 128 (MLA)"))
