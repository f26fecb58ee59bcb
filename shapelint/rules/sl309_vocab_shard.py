"""vLLM refuses a vocab that, padded to a multiple of 64, does not divide by tensor parallel.

Guideline: vLLM's ``VocabParallelEmbedding`` pads the vocab to a multiple of 64 and then
splits the padded rows over t ranks; with t not a power of two (3, 6, 12, 24) the padded
vocab may not divide and start-up fails with ``AssertionError: 151552 is not divisible by 6``.
SGLang multiplies its padding by t when needed and is not affected; Megatron-LM pads to a
multiple of 128·t itself.

Source: vLLM 0.34.0 ``vllm/model_executor/layers/vocab_parallel_embedding.py:39, 100-102,
291-311`` and ``vllm/distributed/utils.py:52-56``; vLLM issue #31474.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.arith import round_up
from shapelint.core.model import Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, refused_by

RULE = Rule(
    code="SL309",
    name="vocab-shard",
    severity="error",
    summary="vLLM refuses a vocab (padded to 64) not divisible by tensor parallel",
    source="vLLM 0.34.0 vllm/model_executor/layers/vocab_parallel_embedding.py",
    family="engine",
)

VERIFIED = {
    "vllm": "vllm/model_executor/layers/vocab_parallel_embedding.py:39, 100-102, 291-311",
}

PADDING = 64

_GLM = (
    '{"architectures": ["Glm4ForCausalLM"], "hidden_size": 4096, "num_attention_heads": 48,'
    ' "num_key_value_heads": 2, "intermediate_size": 13696, "num_hidden_layers": 40,'
    ' "vocab_size": 151552}\n'
)
EXAMPLES = [
    Example(_GLM, True, target={"tp": 4, "engines": ("vllm",)}),
    Example(
        _GLM,
        False,
        target={"tp": 6, "engines": ("vllm",)},
        note="GLM-4's 151552-token vocab at TP 6 (the error of vLLM issue #31474)",
        expect=(Expect(1, "151552", "151552 is not divisible by 6"),),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the vocab when vLLM's padded vocab does not divide by t."""
    t = target.tp
    engines = engines_for(target, VERIFIED)
    vocab = config.vocab_value
    v = vocab.as_int if vocab is not None else None
    if t <= 1 or not engines or vocab is None or v is None or v <= 0:
        return
    padded = round_up(v, PADDING)
    if padded % t == 0:
        return
    yield RULE.finding(
        config,
        vocab,
        f"{padded} is not divisible by {t}: {vocab.key} {v}, padded to a multiple of "
        f"{PADDING}, is split over tensor parallel {t} {refused_by(engines)}",
    )
