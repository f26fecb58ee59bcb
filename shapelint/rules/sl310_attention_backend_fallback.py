"""vLLM has no FlashAttention or FlashInfer kernel for this head dim and runs Triton attention.

Guideline: vLLM picks the first attention backend in its priority list that supports the
model's head size — on CUDA FlashAttention, then FlashInfer (FlashInfer first on SM100), then
Triton, then FlexAttention. FlashAttention takes head sizes that are multiples of 8 up to 256
(512 where FlashAttention 4 is installed); FlashInfer takes 64, 128, 256 and 512. Any other
head size runs the Triton kernel, with no error and only a log line naming the backend.

This is a slow path, not a refusal: the model runs. shapelint's performance model has no
cost for vLLM's Triton attention, so the finding carries no estimate.

Source: vLLM 0.34.0 ``vllm/platforms/cuda.py:153-178`` (priority), ``vllm/v1/attention/
backends/flash_attn.py:424-435`` (``supports_head_size``), ``vllm/v1/attention/backends/
flashinfer.py:692-695`` (``get_supported_head_sizes``); vLLM issue #16808 (head size 88).
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, head_dim_views, is_mla, refused_by

RULE = Rule(
    code="SL310",
    name="attention-backend-fallback",
    severity="warning",
    summary="vLLM has no FlashAttention/FlashInfer kernel for the head dim (Triton fallback)",
    source="vLLM 0.34.0 vllm/platforms/cuda.py, v1/attention/backends",
    family="engine",
)

VERIFIED = {
    "vllm": "vllm/platforms/cuda.py:153-178; vllm/v1/attention/backends/flash_attn.py:424-435; "
    "vllm/v1/attention/backends/flashinfer.py:692-695",
}

FLASHINFER_HEAD_SIZES = frozenset({64, 128, 256, 512})

EXAMPLES = [
    Example(
        '{"architectures": ["Phi3ForCausalLM"], "hidden_size": 3072, "num_attention_heads": 32,'
        ' "num_key_value_heads": 32, "intermediate_size": 8192, "num_hidden_layers": 32,'
        ' "vocab_size": 32064}\n',
        True,
        note="Phi-3-mini: head dim 96 runs FlashAttention",
    ),
    Example(
        '{"architectures": ["LlamaForCausalLM"], "hidden_size": 3200, "num_attention_heads": 32,'
        ' "intermediate_size": 8640, "num_hidden_layers": 26, "vocab_size": 32000}\n',
        False,
        note="OpenLLaMA 3B: head dim 100",
        expect=(
            Expect(
                1, "3200", "head size 100 is supported by neither FlashAttention (multiples of 8"
            ),
        ),
    ),
]


def flash_attn_supports(d: int) -> bool:
    """vLLM's FlashAttention backend without FlashAttention 4: multiples of 8 up to 256."""
    return d % 8 == 0 and d <= 256


def _check_view(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the head dim when neither FlashAttention nor FlashInfer supports it."""
    engines = engines_for(target, VERIFIED)
    head_dim, d = config.get(Dim.HEAD_DIM), config.int(Dim.HEAD_DIM)
    if not engines or head_dim is None or d is None or is_mla(config):
        return  # MLA models take vLLM's separate MLA backends
    if config.int(Dim.V_HEAD_DIM) not in (None, d):
        return
    if flash_attn_supports(d) or d in FLASHINFER_HEAD_SIZES:
        return
    extra = " (FlashAttention 4, where installed, takes it)" if d % 8 == 0 and d <= 512 else ""
    yield RULE.finding(
        config,
        head_dim,
        f"head size {d} is supported by neither FlashAttention (multiples of 8 up to 256) nor "
        f"FlashInfer (64, 128, 256, 512): attention runs the slower Triton backend{extra} "
        f"{refused_by(engines, 'in')}; no estimate (the model has no cost for that kernel)",
    )


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the head dim when neither FlashAttention nor FlashInfer supports it.
    Gemma 4's full-attention layers are checked at their own head dim (``global_head_dim``)."""
    for view in head_dim_views(config):
        yield from _check_view(view, target)
