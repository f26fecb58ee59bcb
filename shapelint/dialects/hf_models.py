"""Readings of transformers configs particular to one model family: Llama's FFN knobs,
ChatGLM's KV groups, Gemma 4's global head dim, Llama 4's dense and MoE widths, mamba_ssm's
padded vocabulary and Qwen (v1)'s halved FFN.

The Hugging Face dialect (`shapelint.dialects.hf`) applies each after reading the keys every
config shares.
"""

from __future__ import annotations

from shapelint.core.model import Derivation, Dim
from shapelint.core.source import Scalar, Sequence
from shapelint.dialects.common import (
    Builder,
    llama_ffn,
    round_up,
)
from shapelint.dialects.lookup import derived, resolve


def take_llama_ffn(b: Builder) -> None:
    """Llama's ``FeedForward`` width when only its knobs are stated (``multiple_of``,
    ``ffn_dim_multiplier``, or keys a user mapped to them): the mapped keys go through the
    same formula as ``params.json``."""
    multiple = b.take(Dim.FFN_MULTIPLE, "multiple_of")
    mult = b.take(Dim.FFN_MULTIPLIER, "ffn_dim_multiplier")
    hidden, h = b.dims.get(Dim.HIDDEN), b.int(Dim.HIDDEN)
    if Dim.FFN in b.dims or multiple is None or hidden is None or not h:
        return
    m = multiple.as_int
    factor = mult.value if mult is not None and isinstance(mult.value, int | float) else None
    if factor is not None and isinstance(factor, bool):
        return
    if m is None or m <= 0 or (mult is not None and factor is None and mult.value is not None):
        return
    sources = (hidden, multiple) + ((mult,) if mult is not None else ())
    formula = "multiple_of · ⌈int(ffn_dim_multiplier · int(8·dim/3)) / multiple_of⌉"
    b.derive(
        Dim.FFN,
        derived(llama_ffn(h, m, factor), sources, formula),
        lambda get: (
            llama_ffn(x, get(Dim.FFN_MULTIPLE) or 1, factor) if (x := get(Dim.HIDDEN)) else None
        ),
    )
    b.gated_mlp = True


def chatglm_groups(b: Builder) -> None:
    """ChatGLM: ``multi_query_group_num`` KV heads when ``multi_query_attention`` is true
    (``SelfAttention`` in modeling_chatglm.py); without it every head has its own KV."""
    groups = b.lookup("multi_query_group_num")
    if groups is None:
        return
    flag = b.lookup("multi_query_attention")
    if flag is not None and flag.value is True:
        b.set(Dim.KV_HEADS, groups)
    elif flag is not None and flag.value is False:
        b.consult("multi_query_group_num")  # unused: plain multi-head attention


# Text configs whose class gives its full-attention layers a head dim of their own,
# ``global_head_dim`` (512 when left out): Gemma4TextConfig.__post_init__
# (configuration_gemma4.py:205-218 at transformers 5.25.0) and the same lines in
# Gemma4UnifiedTextConfig, DiffusionGemmaTextConfig and EmbeddingGemma2TextConfig.
GLOBAL_HEAD_DIM_TYPES = frozenset(
    {"gemma4_text", "gemma4_unified_text", "diffusion_gemma_text", "embedding_gemma2_text"}
)
GLOBAL_HEAD_DIM_DEFAULT = 512


def global_head_dim(b: Builder) -> None:
    """Gemma 4: every ``"full_attention"`` layer of ``layer_types`` (by default every sixth
    and the last) attends with ``global_head_dim``-wide heads; the sliding-window layers with
    ``head_dim`` (``per_layer_config[i].head_dim``, which ``Gemma4TextAttention`` takes,
    modeling_gemma4.py:1152-1153). A config that states ``per_layer_config`` itself overrides
    that (the class then ignores ``global_head_dim``): unknown. The step model times one head
    dim for every layer, so a model whose two head dims differ is not timed."""
    model_type = b.lookup("model_type")
    kind = str(model_type.value).lower() if model_type is not None else ""
    if model_type is None or kind not in GLOBAL_HEAD_DIM_TYPES:
        return
    overrides = resolve(b.root, "per_layer_config", b.candidate.key_prefix)
    if overrides is not None:
        b.read_keys.add(overrides[0])
        b.untimed = "per-layer overrides (per_layer_config)"
        return
    stated = b.take(Dim.GLOBAL_HEAD_DIM, "global_head_dim")
    if stated is None:
        prefix = b.candidate.key_prefix
        b.set(
            Dim.GLOBAL_HEAD_DIM,
            derived(
                GLOBAL_HEAD_DIM_DEFAULT,
                (model_type,),
                f"transformers {kind} default global_head_dim={GLOBAL_HEAD_DIM_DEFAULT}",
                key=f"{prefix}.global_head_dim" if prefix else "global_head_dim",
                kind=Derivation.DEFAULT,
            ),
        )
    g, d = b.int(Dim.GLOBAL_HEAD_DIM), b.int(Dim.HEAD_DIM)
    if g is not None and g == d:
        return
    listed = resolve(b.root, "layer_types", b.candidate.key_prefix)
    full = ""
    if listed is not None and isinstance(listed[1], Sequence):
        kinds = [i.value for i in listed[1].items if isinstance(i, Scalar)]
        full = f"{sum(1 for k in kinds if k == 'full_attention')} of {len(kinds)} "
    b.untimed = (
        f"{full}layers (full_attention) attend with head dim {g if g is not None else '?'}, "
        f"the others with {d if d is not None else '?'} (global_head_dim)"
    )


def llama4_text(b: Builder) -> None:
    """Llama 4 (``model_type: llama4_text``, modeling_llama4.py): a MoE layer's experts and
    its always-present shared expert are ``intermediate_size`` wide; the dense layers between
    MoE layers (``interleave_moe_layer_step`` > 1, Maverick) are ``intermediate_size_mlp``
    wide. Every ``interleave_moe_layer_step``-th layer is MoE."""
    model_type = b.lookup("model_type")
    if model_type is None or model_type.value != "llama4_text" or Dim.EXPERTS not in b.dims:
        return
    if Dim.FFN in b.dims and Dim.MOE_FFN not in b.dims:
        b.dims[Dim.MOE_FFN] = b.dims.pop(Dim.FFN)
    b.take(Dim.FFN, "intermediate_size_mlp")
    b.take(Dim.MOE_LAYER_FREQ, "interleave_moe_layer_step")
    if Dim.SHARED_EXPERTS not in b.dims:
        b.set(Dim.SHARED_EXPERTS, derived(1, (model_type,), "Llama4TextMoe.shared_expert"))


def mamba_ssm_vocab(b: Builder) -> None:
    """state-spaces/mamba's ``MambaConfig`` (no ``model_type``): ``MambaLMHeadModel`` pads the
    vocabulary up to ``pad_vocab_size_multiple`` (8 by default) before building the embedding
    and the LM head. transformers' Mamba keeps the key but not the padding (its embedding is
    ``vocab_size`` wide), so a config with a ``model_type`` is not padded here."""
    multiple = b.lookup("pad_vocab_size_multiple")
    vocab = b.dims.get(Dim.VOCAB)
    if multiple is None or vocab is None or b.lookup("model_type") is not None:
        return
    b.take(Dim.VOCAB_MULTIPLE, "pad_vocab_size_multiple")
    v, m = b.int(Dim.VOCAB), b.int(Dim.VOCAB_MULTIPLE)
    if v and m and Dim.PADDED_VOCAB not in b.dims:
        b.derive(
            Dim.PADDED_VOCAB,
            derived(
                round_up(v, m), (vocab, multiple), "vocab_size padded to pad_vocab_size_multiple"
            ),
            lambda get: (
                round_up(x, get(Dim.VOCAB_MULTIPLE) or 1) if (x := get(Dim.VOCAB)) else None
            ),
        )


def qwen1_ffn(b: Builder) -> None:
    """Qwen (v1, ``model_type: qwen``): ``QWenMLP`` builds ``w1``/``w2`` of width
    ``intermediate_size // 2`` each (modeling_qwen.py), so the down projection sees half."""
    model_type = b.lookup("model_type")
    stated = b.lookup("intermediate_size")
    if model_type is None or model_type.value != "qwen" or stated is None:
        return
    width = stated.as_int
    if width is None or width <= 0:
        return
    b.derive(
        Dim.FFN,
        derived(width // 2, (stated,), "intermediate_size // 2 (Qwen QWenMLP)"),
        lambda get: None,
    )
