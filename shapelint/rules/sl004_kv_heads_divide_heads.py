"""The number of attention heads is not divisible by the number of key/value heads.

Guideline: grouped-query attention shares each KV head among heads / kv_heads query heads,
so the division must be exact; transformers, vLLM and Megatron-LM (``num_query_groups``) all
reject such a config.

Source: Ainslie et al. 2023, "GQA"; vLLM and Megatron-LM argument validation.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule

RULE = Rule(
    code="SL004",
    name="kv-heads-divide-heads",
    severity="error",
    summary="attention heads not divisible by key/value heads (GQA groups)",
    source="Ainslie et al. 2023 (GQA); vLLM, Megatron-LM validation",
    family="model",
)

EXAMPLES = [
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,'
        ' "num_hidden_layers": 32}\n',
        True,
    ),
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 6,'
        ' "num_hidden_layers": 32}\n',
        False,
        expect=(
            Expect(1, "6", "num_attention_heads (32) must be divisible by num_key_value_heads (6)"),
        ),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report heads % kv_heads != 0."""
    heads, kv = config.get(Dim.HEADS), config.get(Dim.KV_HEADS)
    a, g = config.int(Dim.HEADS), config.int(Dim.KV_HEADS)
    if heads is None or kv is None or a is None or g is None or a % g == 0:
        return
    yield RULE.finding(
        config,
        kv,
        f"{heads.key} ({a}) must be divisible by {kv.key} ({g})",
        related=(heads,),
    )
