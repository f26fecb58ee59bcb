"""vLLM splits the experts unevenly over expert-parallel ranks: the busiest rank sets the pace.

Guideline: with expert parallelism over ep ranks, vLLM gives the first E mod ep ranks one
expert more than the others instead of refusing (Megatron-LM refuses, SL304). With uniform
routing each rank's expert work is proportional to its experts, and every MoE layer waits for
the busiest rank: its expert GEMMs take ⌈E/ep⌉ / (E/ep) of the balanced time. The estimate in
the message is that ratio (an arithmetic bound on the expert part of the step, not a
whole-step estimate). With EPLB enabled vLLM refuses an uneven split.

Source: vLLM 0.34.0 ``vllm/model_executor/layers/fused_moe/expert_map_manager.py:60-78``
(``base_experts``, ``remainder``) and ``fused_moe/layer.py:278-283`` (EPLB check).
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, refused_by

RULE = Rule(
    code="SL312",
    name="uneven-expert-split",
    severity="warning",
    summary="experts not divisible by expert parallel: vLLM gives some ranks one more expert",
    source="vLLM 0.34.0 fused_moe/expert_map_manager.py",
    family="engine",
)

VERIFIED = {
    "vllm": "vllm/model_executor/layers/fused_moe/expert_map_manager.py:60-78; "
    "vllm/model_executor/layers/fused_moe/layer.py:278-283",
}

_QWEN3_30B = (
    '{"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048, "num_attention_heads": 32,'
    ' "num_key_value_heads": 4, "head_dim": 128, "moe_intermediate_size": 768,'
    ' "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48,'
    ' "vocab_size": 151936}\n'
)
EXAMPLES = [
    Example(_QWEN3_30B, True, target={"ep": 8}),
    Example(
        _QWEN3_30B,
        False,
        target={"ep": 6},
        note="128 experts over 6 ranks",
        expect=(Expect(1, "128", "num_experts = 128 experts over expert parallel 6"),),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the expert count when ep does not divide it."""
    ep = target.ep
    engines = engines_for(target, VERIFIED)
    experts, n = config.get(Dim.EXPERTS), config.int(Dim.EXPERTS)
    if ep <= 1 or not engines or experts is None or n is None or n % ep == 0:
        return
    most = -(-n // ep)
    slowdown = (most * ep / n - 1) * 100
    yield RULE.finding(
        config,
        experts,
        f"{experts.key} = {n} experts over expert parallel {ep}: {n % ep} ranks hold {most}, "
        f"the rest {n // ep}; the busiest rank's expert GEMMs take +{slowdown:.1f}% over an "
        f"even split {refused_by(engines, 'in')}",
    )
