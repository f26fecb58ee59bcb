"""TensorRT-LLM has no context FMHA kernel for this head size on this GPU: prefill runs unfused.

Guideline: TensorRT-LLM runs the context (prefill) phase of attention with precompiled fused
multi-head attention kernels (FMHA v2). ``AttentionOp::initialize`` builds an
``FmhaDispatcher`` and sets ``mEnableContextFMHA`` from its ``isSupported()``; when no kernel
matches, the dispatcher logs "Fall back to unfused MHA for ... in sm_NN" and the context phase
runs unfused: the Q·Kᵀ scores written out in full, softmax as a separate kernel, more time and
memory (issues NVIDIA/TensorRT-LLM#2122, #1516). Nothing fails.

``isSupported()`` (``FusedMHARunnerV2::isFmhaSupported`` → ``checkIfKernelExist``) looks the
head size up in the kernel table loaded for the GPU's SM and the input/output dtype. It does
not pad the head size (``padded_d`` only sizes the TMA boxes at launch), and its match is
bitwise: a kernel qualifies when the bits of the head size are all set in the kernel's head
size (``KernelExistPredicate``: ``(hash & id) == id``). The table at the commit read has, for
fp16 and bf16 on sm80, sm86, sm89 and sm90 alike, head sizes 16, 32, 40, 48, 64, 72, 80, 96,
104, 128, 160, 192 and 256 for packed QKV and for paged KV (sm90 adds its warp-specialized
kernels with the same head sizes), plus the MLA pairs (192, 128) and (576, 512); contiguous
Q/KV (cross attention, context parallelism) has only 32, 64, 72 and 128. The layout depends on
options a config does not give, so the rule reports only a head size outside the union of all
of them. It covers head sizes that TensorRT-LLM otherwise accepts:
its decoder kernels (MMHA) take 32, 48, 64, 80, 96, 104, 112, 128, 144, 160, 192, 224, 256
(and 72, exempted for FMHA) and ``initialize`` refuses any other ("Head size %d is not
supported by MMHA"), which SL326 reports. What remains: 112 (MPT-30B), 144 and 224
have a decoder kernel but no context kernel on those GPUs.

The rule runs when the target names TensorRT-LLM (``--engine tensorrt-llm``) on the GPUs
whose compute capability is one of those four (the target's GPU, the built-in default marked
as such in the report). Blackwell (sm100) runs TensorRT-LLM's separate trtllm-gen kernels,
whose table was not read: not checked. MLA models (DeepSeek) are not checked (their context
kernels are the MLA pairs). fp32/tf32 are not checked (FMHA takes fp16/bf16/fp8 only; every
head size runs unfused there). The estimate is the prefill step with unfused attention
against the same step with a fused kernel (shapelint's performance model).

Source: TensorRT-LLM commit 00dbe288 ``cpp/tensorrt_llm/common/attentionOp.cpp``
(``AttentionOp::initialize``: the MMHA pre-check, ``fmhaParams.headSize = mHeadSize``,
``mEnableContextFMHA = mIsGenerationMLA || mFmhaDispatcher->isSupported()``) and
``cpp/tensorrt_llm/kernels/contextFusedMultiHeadAttention/fmhaRunner.cpp``
(``isFmhaSupported``, ``setupLaunchParams``' ``padded_d``); commit 06875c2e
``cpp/tensorrt_llm/kernels/fmhaDispatcher.cpp`` (``FmhaDispatcher``: trtllm-gen only on
SM 100; ``isSupported``'s warning); commit 029c15cb
``.../contextFusedMultiHeadAttention/fused_multihead_attention_v2.cpp``
(``checkIfKernelExist``, ``hashID``: head size at bit 27, V head size at bit 17); commit
06255cb7 ``.../contextFusedMultiHeadAttention/fused_multihead_attention_v2.h``
(``KernelExistPredicate``); commit 03cdd5a6
``.../contextFusedMultiHeadAttention/cubin/fmha_cubin.h`` (the ``EXCLUDE_SM_80/86/89/90``
cubin declarations and the ``sMhaKernelMetaInfosV2`` rows); commit 0ab9d17a
``cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention.cu``
(``MMHA_SUPPORTED_HEAD_SIZES``). Each file as stored at its commit (the engine registry's
c6d3bb2a is where TensorRT-LLM's Python attention module was read); the log line's form as
quoted in issue #3347 ("Fall back to unfused MHA for data_type = ..., head_size = 64, ... in
sm_89").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.hardware.arch import sm
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, is_mla
from shapelint.rules.sl321_te_attention_unfused import unfused_slowdown
from shapelint.rules.sl326_trtllm_head_size import TAKEN_HEAD_SIZES

RULE = Rule(
    code="SL331",
    name="trtllm-context-fmha",
    severity="warning",
    summary="TensorRT-LLM has no context FMHA kernel for the head size on this GPU: prefill "
    "runs unfused",
    source="TensorRT-LLM 00dbe288 attentionOp.cpp, fmhaRunner.cpp; 03cdd5a6 fmha_cubin.h",
    family="engine",
)

VERIFIED = {
    "tensorrt-llm": "cpp/tensorrt_llm/common/attentionOp.cpp@00dbe288: AttentionOp::initialize; "
    "kernels/contextFusedMultiHeadAttention/fmhaRunner.cpp@00dbe288: isFmhaSupported; "
    "kernels/fmhaDispatcher.cpp@06875c2e: FmhaDispatcher::isSupported; "
    "contextFusedMultiHeadAttention/fused_multihead_attention_v2.cpp@029c15cb: "
    "checkIfKernelExist; contextFusedMultiHeadAttention/cubin/fmha_cubin.h@03cdd5a6",
}

# Head sizes of the FMHA v2 kernels for fp16/bf16 input (fmha_cubin.h at 03cdd5a6), the same on
# every SM read; (D, DV) pairs, the MLA context/generation kernels included.
FMHA_HEAD_SIZES = (16, 32, 40, 48, 64, 72, 80, 96, 104, 128, 160, 192, 256)
FMHA_PAIRS: tuple[tuple[int, int], ...] = (
    *((d, d) for d in FMHA_HEAD_SIZES),
    (192, 128),
    (576, 512),
)
# The SMs whose table was read (FusedMHARunnerV2 serves them; SM 100 goes to trtllm-gen).
FMHA_V2_SMS = frozenset({(8, 0), (8, 6), (8, 9), (9, 0)})

_TRTLLM: dict[str, object] = {"engines": ("tensorrt-llm",)}
EXAMPLES = [
    Example(
        '{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_attention_heads": 32,'
        ' "num_key_value_heads": 8, "intermediate_size": 14336, "num_hidden_layers": 32,'
        ' "vocab_size": 128256}\n',
        True,
        target=_TRTLLM,
        note="Llama 3 8B on H100: head size 128 has a context kernel",
    ),
    Example(
        '{"architectures": ["MPTForCausalLM"], "d_model": 7168, "n_heads": 64, "n_layers": 48,'
        ' "expansion_ratio": 4, "max_seq_len": 8192, "vocab_size": 50432}\n',
        False,
        target=_TRTLLM,
        note="MPT-30B on H100: head size 7168 / 64 = 112",
        expect=(Expect(1, "7168", "no context FMHA kernel for head size 112 on sm90"),),
    ),
]


def fmha_supported(d: int, dv: int) -> bool:
    """Whether ``checkIfKernelExist`` finds a kernel for head sizes (d, dv): some kernel's
    head sizes have every bit of d and of dv set (its bitwise match, not equality)."""
    return any(kd & d == d and kdv & dv == dv for kd, kdv in FMHA_PAIRS)


def prefill_cost(config: ModelConfig, target: Target) -> str:
    """``; estimated +4.1% prefill time on H100-SXM at seq 4096``, or a note that there is
    no estimate (a config whose step the performance model cannot time)."""
    prefill = replace(target, mode="prefill")
    pct = unfused_slowdown(config, prefill)
    if pct is None or pct <= 0:
        return "; cost not estimated (the step cannot be timed from this config)"
    return f"; estimated +{pct:.1f}% prefill time on {target.gpu.name} at seq {target.seq_len}"


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report a head size TensorRT-LLM takes but has no context FMHA kernel for on this GPU."""
    engines = engines_for(target, VERIFIED)
    if not engines or not config.has_attention or is_mla(config):
        return
    if target.dtype in ("fp32", "tf32"):
        return
    cc = target.gpu.compute_capability
    head_dim, d = config.get(Dim.HEAD_DIM), config.int(Dim.HEAD_DIM)
    if cc not in FMHA_V2_SMS or head_dim is None or d is None:
        return
    if config.int(Dim.V_HEAD_DIM) not in (None, d):
        return
    # A head size AttentionOp refuses is SL326's report.
    if d not in TAKEN_HEAD_SIZES or fmha_supported(d, d):
        return
    assert cc is not None
    shown = ", ".join(str(x) for x in FMHA_HEAD_SIZES)
    yield RULE.finding(
        config,
        head_dim,
        f"no context FMHA kernel for head size {d} on {sm(cc)} ({target.gpu.name}; the "
        f"kernels take {shown}): TensorRT-LLM logs 'Fall back to unfused MHA' and runs the "
        f"prefill with unfused attention{prefill_cost(config, target)} "
        "(TensorRT-LLM; kernel table read at 03cdd5a6)",
    )
