"""Megatron-LM refuses a number of experts that expert parallelism does not divide.

Guideline: with expert parallelism each of the ep ranks holds num_experts / ep experts;
Megatron-LM asserts they divide. vLLM instead gives the first ranks one expert more (SL312
reports that uneven split as a slow path).

The expert-parallel size comes from the config (``expert_model_parallel_size``, torchtitan's
``expert_parallel_degree``, nanotron's ``expert_parallel_size``) or ``--ep``.

Source: Megatron-LM d98e8a64 ``megatron/training/arguments.py:1654-1658``.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, refused_by

RULE = Rule(
    code="SL304",
    name="expert-parallel-experts",
    severity="error",
    summary="Megatron-LM refuses experts not divisible by the expert-parallel size",
    source="Megatron-LM d98e8a64 megatron/training/arguments.py",
    family="engine",
)

VERIFIED = {"megatron": "megatron/training/arguments.py:1654-1658"}

_MIXTRAL = (
    '{"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,'
    ' "intermediate_size": 14336, "num_hidden_layers": 32, "num_local_experts": 8,'
    ' "num_experts_per_tok": 2, "vocab_size": 32000}\n'
)
EXAMPLES = [
    Example(_MIXTRAL, True, target={"ep": 4, "engines": ("megatron",)}),
    Example(
        _MIXTRAL,
        False,
        target={"ep": 3, "engines": ("megatron",)},
        note="8 experts over 3",
        expect=(
            Expect(1, "8", "Number of experts should be a multiple of expert model parallel_size"),
        ),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the expert count when it does not divide the expert-parallel size."""
    ep = target.ep
    engines = engines_for(target, VERIFIED)
    experts, n = config.get(Dim.EXPERTS), config.int(Dim.EXPERTS)
    if ep <= 1 or not engines or experts is None or n is None or n % ep == 0:
        return
    yield RULE.finding(
        config,
        experts,
        "Number of experts should be a multiple of expert model parallel_size: "
        f"{experts.key} = {n}, expert parallel {ep} {refused_by(engines)}",
    )
