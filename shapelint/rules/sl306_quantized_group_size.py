"""A quantized checkpoint's group size does not divide a layer's inputs on each rank.

Guideline: AWQ and GPTQ checkpoints store one scale per ``group_size`` input features. A
row-parallel layer (``o_proj``, ``down_proj``, the experts' ``down_proj``) gives each of t
ranks 1/t of its inputs; when that share is not a whole number of groups the group would
straddle two GPUs, and vLLM, SGLang and TGI refuse the checkpoint at load time. The message
offers the largest tensor-parallel size that fits (a target change; nothing is written).

Qwen2-72B's ``intermediate_size`` 29568 is 231 groups of 128, so its AWQ checkpoint loads only
at TP 1 (vLLM issue #21695); Qwen2.5-72B-Instruct-AWQ pads it to 29696 for that reason.

Source: vLLM 0.34.0 ``vllm/model_executor/layers/quantization/auto_awq.py:814-826`` (AWQ) and
``vllm/distributed/utils.py:150-165`` (``verify_group_size_divides_partition``, GPTQ via
Marlin); SGLang 0.5.23 ``sglang/srt/layers/quantization/awq/schemes/awq_linear.py:39-44`` and
``gptq/schemes/gptq_linear.py:47-52``; TGI db931fcf
``server/text_generation_server/layers/marlin/gptq.py:324-327``.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import (
    Linear,
    engines_for,
    quant_method,
    refused_by,
    sharded_linears,
)
from shapelint.rules.quant_tp import largest_tp, tp_hint

RULE = Rule(
    code="SL306",
    name="quantized-group-size",
    severity="error",
    summary="AWQ/GPTQ group size does not divide a layer's per-rank input features",
    source="vLLM 0.34.0, SGLang 0.5.23, TGI db931fcf (AWQ/GPTQ weight loading)",
    family="engine",
)

VERIFIED = {
    "vllm": "vllm/model_executor/layers/quantization/auto_awq.py:814-826; "
    "vllm/distributed/utils.py:150-165",
    "sglang": "sglang/srt/layers/quantization/awq/schemes/awq_linear.py:39-44; "
    "sglang/srt/layers/quantization/gptq/schemes/gptq_linear.py:47-52",
    "tgi": "server/text_generation_server/layers/marlin/gptq.py:324-327",
}

METHODS = frozenset({"awq", "gptq"})

_QWEN2_72B_AWQ = (
    '{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 8192, "num_attention_heads": 64,'
    ' "num_key_value_heads": 8, "intermediate_size": %d, "num_hidden_layers": 80,'
    ' "vocab_size": 152064,\n "quantization_config": {"bits": 4, "group_size": 128,'
    ' "quant_method": "awq", "version": "gemm", "zero_point": true}}\n'
)
EXAMPLES = [
    Example(_QWEN2_72B_AWQ % 29696, True, target={"tp": 8}, note="Qwen2.5-72B-Instruct-AWQ"),
    Example(
        _QWEN2_72B_AWQ % 29568,
        False,
        target={"tp": 4},
        note="Qwen2-72B's FFN quantized as is (vLLM issue #21695)",
        expect=(
            Expect(2, "128", "The input size is not aligned with the quantized weight shape. This"),
        ),
    ),
]


def _group(config: ModelConfig) -> int | None:
    group = config.get(Dim.QUANT_GROUP_SIZE)
    n = group.as_int if group is not None else None
    return n if n is not None and n > 0 else None


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the group size when a row-parallel layer's per-rank inputs are not whole groups."""
    t = target.tp
    engines = engines_for(target, VERIFIED)
    g = _group(config)
    group = config.get(Dim.QUANT_GROUP_SIZE)
    if t <= 1 or not engines or quant_method(config) not in METHODS or g is None or not group:
        return

    def fits(layer: Linear) -> bool:
        return layer.split != "row" or layer.in_features % g == 0

    bad = [layer for layer in sharded_linears(config, t) if not fits(layer)]
    if not bad:
        return
    where = ", ".join(
        f"{layer.name} has {layer.in_features} input features per rank ({layer.value.key})"
        for layer in bad
    )
    yield RULE.finding(
        config,
        group,
        "The input size is not aligned with the quantized weight shape. This can be caused by "
        f"too large tensor parallel size: at TP {t}, {where}, not a multiple of group_size {g}"
        f"{tp_hint(largest_tp(config, t, fits))} {refused_by(engines)}",
        related=[layer.value for layer in bad],
    )
