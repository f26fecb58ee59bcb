"""TensorRT-LLM refuses a head size its decoder kernels (MMHA) have no instance for.

Guideline: TensorRT-LLM's attention op (``AttentionOp``: the TRTLLM attention backend of the
PyTorch flow; the engine flow's GPT attention plugin derives from it) checks the head size
when it initializes, before any prefill or decode step: a head size its masked multi-head
attention (MMHA) decoder kernels have no instance for stops it with "Head size %d is not
supported by MMHA". Those kernels take 32, 48, 64, 80, 96, 104, 112, 128, 144, 160, 192, 224
and 256; 72 is let through (it has context FMHA kernels only). The check does not depend on
the dtype, the GPU, cross attention or whether the engine will ever decode; multi-head latent
attention (DeepSeek's MLA) skips it. So a head size of 120 or 136 is refused although it is a
multiple of 8, and so is 40, although the context FMHA kernels have a 40.
Gemma 4's full-attention layers are checked at their own head size (``global_head_dim``, 512
in the released models): refused, although its sliding-window layers' 256 passes.

TensorRT-LLM's attention also writes q, k and v (with bias and rotary embedding) into the KV
cache in vectors of 16 bytes per thread: 8 elements of a 16-bit type, 4 of fp32. Its
``invokeApplyBiasRopeUpdateKVCache`` checks ``size_per_head % x == 0`` before launching and
stops with "Size per head is not a multiple of X" otherwise (OpenLLaMA 3B's head dim of 100:
TensorRT-LLM issue #855, where the maintainers suggest padding it to 104 or 128). Every head
size the MMHA check lets through is a multiple of 8, so at the commits read that check is the
one a user meets first; the message adds the vector width when the head size misses it too.

Multi-head latent attention skips the head-size check but meets one of its own in the same
place: the op takes MLA only with ``kv_lora_rank`` 512 and ``qk_rope_head_dim`` 64 (DeepSeek-V2
and V3's values) and stops with "MLA(Deepseek v2) only support fixed kv_lora_rank(512) and
fixed qk_rope_head_dim(64) right now" otherwise: MiniCPM3-4B (256 and 32) is refused. A rank
or rope dim the config leaves unknown is not guessed. The rule runs when the target names TensorRT-LLM (``--engine
tensorrt-llm``); the PyTorch flow's other attention backends (FlashInfer, vanilla) are not
modelled.

Source: TensorRT-LLM commit 00dbe288 ``cpp/tensorrt_llm/common/attentionOp.cpp``
(``AttentionOp::initialize``: "Pre-check whether the head size is supported by MMHA", 72
skipped, ``!mIsMLAEnabled``; then ``if (mIsMLAEnabled)``: ``mMLAParams.qk_rope_head_dim == 64
&& mMLAParams.kv_lora_rank == 512``) and ``cpp/tensorrt_llm/thop/attentionOp.cpp``
(``attention_inplace``: ``op->initialize()`` for each new attention op, before its context or
generation run); commit 0ab9d17a ``cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention.cu``
(``MMHA_SUPPORTED_HEAD_SIZES``, ``mmha_supported``); commit 2340c776
``cpp/tensorrt_llm/kernels/unfusedAttentionKernels/unfusedAttentionKernels_2_template.h``
(``invokeApplyBiasRopeUpdateKVCache``: ``constexpr int x = (sizeof(T) == 4) ? 4 : 8;
TLLM_CHECK_WITH_INFO(size_per_head % x == 0, ...)``). Each file as stored at its commit (the
engine registry's c6d3bb2a is where the Python attention module was read; the KV-cache check
has stood since issues #679 and #855, 2023).
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, head_dim_views, is_mla

RULE = Rule(
    code="SL326",
    name="trtllm-head-size",
    severity="error",
    summary="TensorRT-LLM refuses a head size outside its MMHA decoder kernels' set (or MLA "
    "other than kv_lora_rank 512 / qk_rope_head_dim 64) when the attention op initializes",
    source="TensorRT-LLM 00dbe288 attentionOp.cpp; 0ab9d17a decoderMaskedMultiheadAttention.cu; "
    "2340c776 unfusedAttentionKernels_2_template.h",
    family="engine",
)

VERIFIED = {
    "tensorrt-llm": "cpp/tensorrt_llm/common/attentionOp.cpp@00dbe288: AttentionOp::initialize; "
    "cpp/tensorrt_llm/thop/attentionOp.cpp@00dbe288: attention_inplace; "
    "cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention.cu@0ab9d17a: "
    "MMHA_SUPPORTED_HEAD_SIZES; "
    "cpp/tensorrt_llm/kernels/unfusedAttentionKernels/"
    "unfusedAttentionKernels_2_template.h@2340c776: invokeApplyBiasRopeUpdateKVCache",
}

# The head sizes of the MMHA decoder kernels (decoderMaskedMultiheadAttention.cu at 0ab9d17a);
# AttentionOp::initialize lets 72 through as well (context FMHA only).
MMHA_HEAD_SIZES = (32, 48, 64, 80, 96, 104, 112, 128, 144, 160, 192, 224, 256)
TAKEN_HEAD_SIZES = frozenset({*MMHA_HEAD_SIZES, 72})

_TRTLLM: dict[str, object] = {"engines": ("tensorrt-llm",)}
_OPENLLAMA_3B = (
    '{"hidden_size": 3200, "num_attention_heads": 32, "intermediate_size": 8640,'
    ' "num_hidden_layers": 26, "vocab_size": 32000}\n'
)
EXAMPLES = [
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32}\n',
        True,
        target=_TRTLLM,
    ),
    Example(
        _OPENLLAMA_3B,
        False,
        target=_TRTLLM,
        note="OpenLLaMA 3B: 3200 / 32 = head dim 100 (TensorRT-LLM issue #855)",
        expect=(Expect(1, "3200", "Head size 100 is not supported by MMHA"),),
    ),
    Example(
        '{"hidden_size": 3840, "num_attention_heads": 32, "num_key_value_heads": 8,'
        ' "num_hidden_layers": 24, "intermediate_size": 10240, "vocab_size": 32000}\n',
        False,
        target=_TRTLLM,
        note="H2O-Danube3 4B: 3840 / 32 = head size 120, a multiple of 8 without an MMHA kernel",
        expect=(Expect(1, "3840", "Head size 120 is not supported by MMHA"),),
    ),
    Example(
        '{"hidden_size": 2560, "num_attention_heads": 40, "num_key_value_heads": 40,'
        ' "q_lora_rank": 768, "kv_lora_rank": 256, "qk_nope_head_dim": 64, "qk_rope_head_dim": 32,'
        ' "intermediate_size": 6400, "num_hidden_layers": 62, "vocab_size": 73448}\n',
        False,
        target=_TRTLLM,
        note="MiniCPM3-4B: multi-head latent attention with kv_lora_rank 256, qk_rope_head_dim 32",
        expect=(Expect(1, "256", "only support fixed kv_lora_rank(512)"),),
    ),
]


def _check_view(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report a head size that TensorRT-LLM's attention op refuses when it initializes: one
    outside the MMHA decoder kernels' set (72 aside)."""
    engines = engines_for(target, VERIFIED)
    d = config.int(Dim.HEAD_DIM)
    if not engines or not config.has_attention:
        return
    if is_mla(config):
        yield from _mla(config)
        return
    if d is None:
        return
    if d in TAKEN_HEAD_SIZES:
        return
    value = config.get(Dim.HEAD_DIM)
    assert value is not None
    shown = ", ".join(str(n) for n in MMHA_HEAD_SIZES)
    # The KV-cache kernels' vector width: 16 bytes, 8 elements of a 16-bit type, 4 of fp32.
    x = 4 if target.dtype in ("fp32", "tf32") else 8
    vector = (
        f"; nor is {d} a multiple of {x}, which its KV-cache kernels need (2340c776)"
        if d % x
        else ""
    )
    yield RULE.finding(
        config,
        value,
        f"Head size {d} is not supported by MMHA: TensorRT-LLM's attention op refuses it when "
        f"it initializes, whatever the dtype or GPU (its decoder kernels take {shown}; 72 "
        f"passes for prefill only{vector}) (TensorRT-LLM; read at 00dbe288)",
    )


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report a head size that TensorRT-LLM's attention op refuses when it initializes: one
    outside the MMHA decoder kernels' set (72 aside).
    Gemma 4's full-attention layers are checked at their own head dim (``global_head_dim``)."""
    for view in head_dim_views(config):
        yield from _check_view(view, target)


# AttentionOp::initialize (attentionOp.cpp at 00dbe288) takes MLA only with these.
MLA_KV_LORA_RANK = 512
MLA_ROPE_HEAD_DIM = 64


def _mla(config: ModelConfig) -> Iterator[Finding]:
    """MLA with a ``kv_lora_rank`` other than 512 or a ``qk_rope_head_dim`` other than 64."""
    rank, rope = config.int(Dim.KV_LORA_RANK), config.int(Dim.ROPE_HEAD_DIM)
    wrong = [
        (dim, n, want)
        for dim, n, want in (
            (Dim.KV_LORA_RANK, rank, MLA_KV_LORA_RANK),
            (Dim.ROPE_HEAD_DIM, rope, MLA_ROPE_HEAD_DIM),
        )
        if n is not None and n != want
    ]
    if not wrong:
        return
    value = config.get(wrong[0][0])
    assert value is not None
    stated = ", ".join(
        f"{name} {n}"
        for name, n in (("kv_lora_rank", rank), ("qk_rope_head_dim", rope))
        if n is not None
    )
    yield RULE.finding(
        config,
        value,
        f"MLA(Deepseek v2) only support fixed kv_lora_rank(512) and fixed qk_rope_head_dim(64): "
        f"TensorRT-LLM's attention op refuses this model's multi-head latent attention ({stated}) "
        "when it initializes (TensorRT-LLM; read at 00dbe288)",
    )
