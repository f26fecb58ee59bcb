"""A dimension that tensor parallelism splits is not divisible by the tensor-parallel size.

Guideline: Megatron-style tensor parallelism splits attention heads, the FFN width, the
hidden size (row-parallel inputs) and the vocab across t GPUs; each must divide by t (KV
heads fewer than t are replicated instead, which needs t divisible by them). Megatron-LM and
vLLM refuse such a config at start-up.

When SL301 reports the same head count for an engine of the target (in the engine's wording,
naming the engines that refuse it), SL005's finding on that value is left out: one error per
value. With SL301 not selected, or no engine of the target checking heads, SL005 reports it.

Source: Shoeybi et al. 2019, "Megatron-LM"; vLLM ``verify_with_parallel_config``
("Total number of attention heads must be divisible by tensor parallel size").
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule

RULE = Rule(
    code="SL005",
    name="tensor-parallel-divisibility",
    severity="error",
    summary="heads, KV heads, FFN, hidden or vocab not divisible by the tensor-parallel size",
    source="Megatron-LM (Shoeybi et al. 2019); vLLM parallel-config validation",
    family="model",
    # SL301 reports the same head count in the engine's own words, naming who refuses it
    # ("Total number of attention heads (28) must be divisible by tensor parallel size (8)").
    defers_to=("SL301",),
)

_LLAMA_13B = (
    '{"hidden_size": 5120, "num_attention_heads": 40, "intermediate_size": 13824,'
    ' "num_hidden_layers": 40, "vocab_size": 32000}\n'
)
EXAMPLES = [
    Example(_LLAMA_13B, True, target={"tp": 8}),
    Example(
        _LLAMA_13B,
        False,
        target={"tp": 3, "engines": ("flash-attn2",)},
        note="40 heads over 3 GPUs; for an engine that checks heads (vLLM, Megatron-LM …) "
        "SL301 reports the heads instead",
        expect=(
            Expect(1, "5120", "hidden size (hidden_size = 5120) must be divisible by the"),
            Expect(1, "40", "attention heads (num_attention_heads = 40) must be divisible by the"),
            Expect(
                1, "32000", "vocab (vocab_size = 32000) must be divisible by the tensor-parallel"
            ),
        ),
    ),
]

_SPLIT = (
    (Dim.HEADS, "attention heads"),
    (Dim.FFN, "FFN width"),
    (Dim.HIDDEN, "hidden size"),
    (Dim.MOE_FFN, "expert FFN width"),
)


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report each split dim not divisible by t (t > 1)."""
    t = target.tp
    if t <= 1:
        return
    for dim, what in _SPLIT:
        value, n = config.get(dim), config.int(dim)
        if value is not None and n is not None and n % t:
            yield RULE.finding(
                config,
                value,
                f"{what} ({value.key} = {n}) must be divisible by the tensor-parallel size ({t})",
            )
    kv, g = config.get(Dim.KV_HEADS), config.int(Dim.KV_HEADS)
    if kv is not None and g is not None and not kv.derived and (g % t if g >= t else t % g):
        yield RULE.finding(
            config,
            kv,
            f"KV heads ({kv.key} = {g}) must be divisible by the tensor-parallel size ({t}), "
            "or the tensor-parallel size by them",
        )
    vocab = config.vocab_value
    v = vocab.as_int if vocab is not None else None
    if vocab is not None and v is not None and v > 0 and v % t:
        yield RULE.finding(
            config,
            vocab,
            f"vocab ({vocab.key} = {v}) must be divisible by the tensor-parallel size ({t}); "
            "pad it (Megatron pads to a multiple of 128·t)",
        )
