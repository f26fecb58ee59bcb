"""With context parallelism, Transformer Engine has no attention backend for this head dim.

Guideline: Transformer Engine's unfused attention does not support context parallelism, so
with ``context_parallel_size`` above 1 it is disabled along with FlashAttention 4; when neither
FlashAttention 2/3 nor cuDNN's fused attention takes the head dims (SL321 lists their limits),
no backend is left and ``DotProductAttention`` raises "No dot product attention backend is
available for the provided inputs." at the first step. As in SL321, a report holds whatever
flash-attn packages and cuDNN version are installed; only training targets on GPUs whose
compute capability shapelint knows are checked.

Source: TransformerEngine commit d0067d0d (2.20.0.dev0)
``transformer_engine/pytorch/attention/dot_product_attention/utils.py:1169-1176`` (unfused and
FlashAttention 4 disabled under context parallelism) and
``dot_product_attention/dot_product_attention.py:2159-2165`` (the error).
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Finding, ModelConfig, Target
from shapelint.perf.te_attention import reasons
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, refused_by
from shapelint.rules.sl321_te_attention_unfused import fa3_note, te_choice

RULE = Rule(
    code="SL322",
    name="te-no-attention-backend",
    severity="error",
    summary="Transformer Engine has no attention backend for this head dim under context parallel",
    source="TransformerEngine 2.20.0.dev0: dot_product_attention/utils.py, dot_product_attention.py",
    family="engine",
)

VERIFIED = {
    "transformer-engine": "transformer_engine/pytorch/attention/dot_product_attention/"
    "utils.py:1169-1176; dot_product_attention.py:2159-2165",
}

_OPENLLAMA_3B = (
    '{"hidden_size": 3200, "num_attention_heads": 32, "intermediate_size": 8640,'
    ' "num_hidden_layers": 26, "vocab_size": 32000}\n'
)
EXAMPLES = [
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,'
        ' "intermediate_size": 14336, "num_hidden_layers": 32, "vocab_size": 128256}\n',
        True,
        target={"engines": ("transformer-engine",), "cp": 2},
        note="Llama 3 8B at context parallel 2",
    ),
    Example(
        _OPENLLAMA_3B,
        False,
        target={"engines": ("transformer-engine",), "cp": 2},
        note="OpenLLaMA 3B (head dim 100) at context parallel 2",
        expect=(
            Expect(
                1, "3200", "No dot product attention backend is available for the provided inputs"
            ),
        ),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the head dim when, under context parallelism, TE has no backend left for it."""
    engines = engines_for(target, VERIFIED)
    found = te_choice(config, target) if engines and target.cp > 1 else None
    if found is None:
        return
    head_dim, choice, shown = found
    if choice.available:
        return
    yield RULE.finding(
        config,
        head_dim,
        "No dot product attention backend is available for the provided inputs: context "
        f"parallel {target.cp} disables the unfused backend, and no fused kernel takes {shown} "
        f"({reasons(choice)}){fa3_note(choice)} {refused_by(engines)}",
    )
