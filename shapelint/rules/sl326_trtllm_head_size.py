"""TensorRT-LLM refuses a head dim that is not a multiple of 8 (4 in fp32).

Guideline: TensorRT-LLM's attention writes q, k and v (with bias and rotary embedding) into
the KV cache in vectors of 16 bytes per thread: 8 elements of a 16-bit type, 4 of fp32. Its
``invokeApplyBiasRopeUpdateKVCache`` checks ``size_per_head % x == 0`` before launching and
stops with "Size per head is not a multiple of X" otherwise (OpenLLaMA 3B's head dim of 100:
TensorRT-LLM issue #855, where the maintainers suggest padding it to 104 or 128). The rule runs
when the target names TensorRT-LLM (``--engine tensorrt-llm``).

Source: TensorRT-LLM 2340c776
``cpp/tensorrt_llm/kernels/unfusedAttentionKernels/unfusedAttentionKernels_2_template.h``
(``invokeApplyBiasRopeUpdateKVCache``: ``constexpr int x = (sizeof(T) == 4) ? 4 : 8;
TLLM_CHECK_WITH_INFO(size_per_head % x == 0, ...)``), the kernel header as stored at that
commit (the engine registry's c6d3bb2a is where the Python attention module was read; the
check has stood since issues #679 and #855, 2023).
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.lint.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for

RULE = Rule(
    code="SL326",
    name="trtllm-head-size",
    severity="error",
    summary="TensorRT-LLM refuses a head dim that is not a multiple of 8 (4 in fp32)",
    source="TensorRT-LLM 2340c776 unfusedAttentionKernels_2_template.h",
)

VERIFIED = {
    "tensorrt-llm": "cpp/tensorrt_llm/kernels/unfusedAttentionKernels/"
    "unfusedAttentionKernels_2_template.h@2340c776: invokeApplyBiasRopeUpdateKVCache",
}

_OPENLLAMA_3B = (
    '{"hidden_size": 3200, "num_attention_heads": 32, "intermediate_size": 8640,'
    ' "num_hidden_layers": 26, "vocab_size": 32000}\n'
)
EXAMPLES = [
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32}\n',
        True,
        target={"engines": ("tensorrt-llm",)},
    ),
    Example(
        _OPENLLAMA_3B,
        False,
        target={"engines": ("tensorrt-llm",)},
        note="OpenLLaMA 3B: 3200 / 32 = head dim 100 (TensorRT-LLM issue #855)",
        expect=(Expect(1, "3200", "Size per head is not a multiple of X: head dim 100"),),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the head dim when the KV-cache kernels' vector width does not divide it."""
    engines = engines_for(target, VERIFIED)
    d = config.int(Dim.HEAD_DIM)
    if not engines or not config.has_attention or d is None:
        return
    x = 4 if target.dtype in ("fp32", "tf32") else 8
    if d % x == 0:
        return
    value = config.get(Dim.HEAD_DIM)
    assert value is not None
    yield RULE.finding(
        config,
        value,
        f"Size per head is not a multiple of X: head dim {d}, X = {x} for {target.dtype} "
        "(refused by TensorRT-LLM; kernel read at 2340c776)",
    )
