"""FlashAttention's fused rotary (the KV-cache decode path) refuses this rotary dim.

Guideline: ``flash_attn_with_kvcache`` can apply rotary embedding to the new query and key
inside the attention kernel (``rotary_cos``/``rotary_sin``); flash-attn's own ``MHA`` module
takes that path for every decode step after the first when the model has rotary embedding.
FlashAttention-2 and -3 accept it only when the rotary dim (the head dim, or the part of it a
partial-rotary model turns: GPT-NeoX/Pythia ``rotary_pct``, Phi/StableLM
``partial_rotary_factor``, GPT-J ``rotary_dim``) is a multiple of 16 and at most the head dim,
and raise otherwise. The rule runs for decode targets that name the kernel
(``--engine flash-attn2 --mode decode``); a caller that applies rotary outside the kernel
(vLLM, SGLang) is not affected.

Source: flash-attention 2.8.4 (commit 0251105a) ``csrc/flash_attn/flash_api.cpp:1466-1468``
and ``hopper/flash_api.cpp:1056-1058``; the decode path that passes rotary:
``flash_attn/modules/mha.py:502-539``.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule, describe
from shapelint.rules.engine_shapes import refused_by

RULE = Rule(
    code="SL323",
    name="fused-rotary-dim",
    severity="error",
    summary="FlashAttention-2/3's fused rotary (KV-cache decode) refuses this rotary dim",
    source="flash-attention 2.8.4: csrc/flash_attn/flash_api.cpp, hopper/flash_api.cpp",
    family="engine",
)

VERIFIED = {
    "flash-attn2": "csrc/flash_attn/flash_api.cpp:1466-1468; flash_attn/modules/mha.py:502-539",
    "flash-attn3": "hopper/flash_api.cpp:1056-1058",
}

MULTIPLE = 16

_DECODE: dict[str, object] = {"engines": ("flash-attn2",), "mode": "decode"}
EXAMPLES = [
    Example(
        '{"model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32,'
        ' "partial_rotary_factor": 0.4, "intermediate_size": 10240, "num_hidden_layers": 32,'
        ' "vocab_size": 51200}\n',
        True,
        target=_DECODE,
        note="Phi-2: rotary dim int(80 × 0.4) = 32",
    ),
    Example(
        '{"model_type": "stablelm", "hidden_size": 2560, "num_attention_heads": 32,\n'
        ' "partial_rotary_factor": 0.25, "intermediate_size": 6912, "num_hidden_layers": 32,\n'
        ' "vocab_size": 50304}\n',
        False,
        target=_DECODE,
        note="StableLM-3B-4E1T: rotary dim int(80 × 0.25) = 20",
        expect=(
            Expect(2, "0.25", "Only rotary dimensions divisible by 16 are currently supported"),
        ),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the rotary dim when a named FlashAttention refuses to fuse it in decode."""
    named = [e for e in target.engines if e in VERIFIED]
    rotary, r = config.get(Dim.ROTARY_DIM), config.int(Dim.ROTARY_DIM)
    d = config.int(Dim.HEAD_DIM)
    if not named or target.mode != "decode" or rotary is None or r is None or d is None:
        return
    if r > d:
        message = "rotary_dim must be <= headdim"
    elif r % MULTIPLE:
        message = "Only rotary dimensions divisible by 16 are currently supported"
    else:
        return
    yield RULE.finding(
        config,
        rotary,
        f"{message}: rotary dim {describe(rotary)}, head dim {d} — FlashAttention's fused "
        f"rotary in the KV-cache decode path {refused_by(named)}; apply rotary before the kernel",
    )
