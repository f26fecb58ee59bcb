"""The hidden size is not divisible by the number of attention heads.

Guideline: without an explicit head dimension, each head gets hidden / heads channels, so the
division must be exact; Megatron-LM and transformers both refuse such a config. A config that
states ``head_dim`` explicitly (Gemma, Qwen3) is exempt: its attention width is heads ×
head_dim, independent of hidden; so is a framework that floors the split and builds its
attention heads × head_dim wide (OpenLM: 488 wide with 12 heads of 40).

Source: Megatron-LM ``validate_args`` (``hidden_size % num_attention_heads == 0``);
Anthony et al. 2024, "The Case for Co-Designing Model Architectures with Hardware" (h/a).
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Derivation, Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule

RULE = Rule(
    code="SL003",
    name="heads-divide-hidden",
    severity="error",
    summary="hidden size not divisible by the number of attention heads",
    source="Megatron-LM validate_args; Anthony et al. 2024",
    family="model",
)

EXAMPLES = [
    Example('{"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32}\n', True),
    Example(
        '{"hidden_size": 2304, "num_attention_heads": 8, "head_dim": 256, "num_hidden_layers": 26}\n',
        True,
        note="an explicit head_dim (Gemma-2 2B) decouples heads from hidden",
    ),
    Example(
        '{"hidden_size": 3000, "num_attention_heads": 32, "num_hidden_layers": 32}\n',
        False,
        expect=(
            Expect(1, "32", "hidden_size (3000) is not divisible by num_attention_heads (32)"),
        ),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report hidden % heads != 0 when no head dim is stated."""
    head_dim = config.get(Dim.HEAD_DIM)
    if head_dim is not None and (
        not head_dim.derived or not head_dim.known or head_dim.kind is Derivation.FLOOR_SPLIT
    ):
        return  # stated, floored by the framework, or possibly stated where we cannot read
    hidden, heads = config.get(Dim.HIDDEN), config.get(Dim.HEADS)
    h, a = config.int(Dim.HIDDEN), config.int(Dim.HEADS)
    if hidden is None or heads is None or h is None or a is None or h % a == 0:
        return
    yield RULE.finding(
        config,
        heads,
        f"{hidden.key} ({h}) is not divisible by {heads.key} ({a}); "
        "hidden_size must be divisible by num_attention_heads",
        related=(hidden,),
    )
