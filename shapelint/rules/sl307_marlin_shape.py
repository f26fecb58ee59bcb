"""TGI's Marlin kernel refuses a quantized layer whose per-rank shape it has no tile for.

Guideline: TGI runs 4- and 8-bit AWQ and GPTQ checkpoints (group size -1, 32, 64 or 128;
GPTQ symmetric only) with the Marlin kernel on sm80 and newer, and each layer's per-rank
weight must be divisible by (128 input, 64 output) features or (64, 128); otherwise loading
stops. vLLM 0.34.0 zero-pads such layers instead (``marlin_padded_nk``), and SGLang falls
back to its unoptimized AWQ kernels, so only TGI is reported.

Source: TGI db931fcf ``server/text_generation_server/layers/marlin/gptq.py:39-52``
(``can_use_gptq_marlin``) and ``:474-481`` (``_check_valid_shape``); vLLM 0.34.0
``vllm/model_executor/layers/quantization/utils/marlin_utils.py:305-325``; SGLang 0.5.23
``sglang/srt/layers/quantization/awq/awq.py:367-375``.
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
    code="SL307",
    name="marlin-shape",
    severity="error",
    summary="TGI's Marlin kernel has no tile for a quantized layer's per-rank shape",
    source="TGI db931fcf server/text_generation_server/layers/marlin/gptq.py",
    family="engine",
)

VERIFIED = {"tgi": "server/text_generation_server/layers/marlin/gptq.py:39-52, 474-481"}

BITS = frozenset({4, 8})
GROUP_SIZES = frozenset({-1, 32, 64, 128})

_DEEPSEEK_CODER_33B_GPTQ = (
    '{"architectures": ["LlamaForCausalLM"], "hidden_size": 7168, "num_attention_heads": 56,'
    ' "num_key_value_heads": 8, "intermediate_size": 19200, "num_hidden_layers": 62,'
    ' "vocab_size": 32256,\n "quantization_config": {"bits": 4, "group_size": 128,'
    ' "quant_method": "gptq", "sym": true, "desc_act": false}}\n'
)
EXAMPLES = [
    Example(_DEEPSEEK_CODER_33B_GPTQ, True, target={"tp": 4, "engines": ("tgi",)}),
    Example(
        _DEEPSEEK_CODER_33B_GPTQ,
        False,
        target={"tp": 8, "engines": ("tgi",)},
        note="DeepSeek-Coder-33B shape: gate/up_proj get 19200 / 8 = 2400 outputs per rank",
        expect=(
            Expect(
                1, "19200", "The GPTQ Marlin kernel does not have a valid thread configuration for"
            ),
        ),
    ),
]


def _marlin(config: ModelConfig) -> bool:
    method = quant_method(config)
    bits, group = config.get(Dim.QUANT_BITS), config.get(Dim.QUANT_GROUP_SIZE)
    sym = config.get(Dim.QUANT_SYM)
    if method not in ("awq", "gptq") or bits is None or group is None:
        return False
    if bits.as_int not in BITS or group.as_int not in GROUP_SIZES:
        return False
    return method == "awq" or (sym is not None and sym.value is True)


def fits(layer: Linear) -> bool:
    """TGI's ``_check_valid_shape``: (in % 128 and out % 64) or (in % 64 and out % 128)."""
    i, o = layer.in_features, layer.out_features
    return (i % 128 == 0 and o % 64 == 0) or (i % 64 == 0 and o % 128 == 0)


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the first layer whose per-rank shape Marlin cannot tile."""
    engines = engines_for(target, VERIFIED)
    if not engines or not _marlin(config):
        return
    t = max(target.tp, 1)
    bad = [layer for layer in sharded_linears(config, t) if not fits(layer)]
    if not bad:
        return
    layer = bad[0]
    hint = tp_hint(largest_tp(config, t, fits)) if t > 1 else ""
    yield RULE.finding(
        config,
        layer.value,
        "The GPTQ Marlin kernel does not have a valid thread configuration for weight matrix "
        f"with shape ({layer.out_features}, {layer.in_features}). The shape elements must be "
        f"divisible by (128, 64) or (64, 128): {layer.name} at TP {t}{hint} "
        f"{refused_by(engines)}",
    )
