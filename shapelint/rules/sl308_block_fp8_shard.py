"""A block-FP8 checkpoint's ``weight_block_size`` does not divide a layer's per-rank shard.

Guideline: block-quantized FP8 checkpoints (DeepSeek-V3/R1, Qwen3-FP8: ``weight_block_size``
[block_n, block_k], usually [128, 128]) store one scale per block. Under tensor parallelism
each column-parallel layer's per-rank outputs must be whole blocks of block_n, and each
row-parallel layer's per-rank inputs whole blocks of block_k; otherwise vLLM and SGLang stop
at load time. The message offers the largest tensor-parallel size that fits.

DeepSeek-R1's dense ``intermediate_size`` 18432 at TP 32 leaves 576 outputs per rank, not a
multiple of 128 (SGLang issue #3345).

Source: vLLM 0.34.0 ``vllm/model_executor/layers/quantization/utils/fp8_utils.py:1318-1343``;
SGLang 0.5.23 ``sglang/srt/layers/quantization/fp8_utils.py:2867-2893``.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import Linear, engines_for, refused_by, sharded_linears
from shapelint.rules.quant_tp import largest_tp, tp_hint

RULE = Rule(
    code="SL308",
    name="block-fp8-shard",
    severity="error",
    summary="block-FP8 weight_block_size does not divide a layer's per-rank shard",
    source="vLLM 0.34.0, SGLang 0.5.23 fp8_utils.py (block-quantized linear checks)",
    family="engine",
)

VERIFIED = {
    "vllm": "vllm/model_executor/layers/quantization/utils/fp8_utils.py:1318-1343",
    "sglang": "sglang/srt/layers/quantization/fp8_utils.py:2867-2893",
}

_DEEPSEEK_R1 = (
    '{"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168, "num_attention_heads":'
    ' 128, "num_key_value_heads": 128, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,'
    ' "v_head_dim": 128, "intermediate_size": 18432, "moe_intermediate_size": 2048,'
    ' "n_routed_experts": 256, "num_experts_per_tok": 8, "num_hidden_layers": 61,'
    ' "vocab_size": 129280,\n "quantization_config": {"activation_scheme": "dynamic",'
    ' "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}}\n'
)
EXAMPLES = [
    Example(_DEEPSEEK_R1, True, target={"tp": 8}, note="DeepSeek-R1 on 8 GPUs"),
    Example(
        _DEEPSEEK_R1,
        False,
        target={"tp": 32},
        note="SGLang issue #3345",
        expect=(Expect(2, "128", "Weight output_partition_size = 576 is not divisible by weight"),),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the block size when a per-rank shard is not a whole number of blocks."""
    t = target.tp
    engines = engines_for(target, VERIFIED)
    block_n, block_k = config.get(Dim.QUANT_BLOCK_N), config.get(Dim.QUANT_BLOCK_K)
    bn, bk = config.int(Dim.QUANT_BLOCK_N), config.int(Dim.QUANT_BLOCK_K)
    if t <= 1 or not engines or block_n is None or block_k is None or not bn or not bk:
        return

    def fits(layer: Linear) -> bool:
        if layer.split == "row":
            return layer.in_features % bk == 0
        return layer.out_features % bn == 0

    bad = [layer for layer in sharded_linears(config, t) if not fits(layer)]
    if not bad:
        return
    layer = bad[0]
    if layer.split == "row":
        point = block_k
        message = (
            f"Weight input_size_per_partition = {layer.in_features} is not divisible by "
            f"weight quantization block_k = {bk}."
        )
    else:
        point = block_n
        message = (
            f"Weight output_partition_size = {layer.out_features} is not divisible by "
            f"weight quantization block_n = {bn}."
        )
    yield RULE.finding(
        config,
        point,
        f"{message} ({layer.name}, {layer.value.key} at TP {t}"
        f"{tp_hint(largest_tp(config, t, fits))}) {refused_by(engines)}",
        related=[layer.value],
    )
