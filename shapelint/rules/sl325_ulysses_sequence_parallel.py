"""DeepSpeed Ulysses sequence parallelism refuses heads, KV heads or sequences it cannot split.

Guideline: Ulysses sequence parallelism (DeepSpeed's ``UlyssesSPAttentionHF``, the
Arctic Long Sequence Training path for Hugging Face models) gives each of the sp ranks a
slice of the sequence, then swaps it for a slice of the heads around attention: every rank
must get whole query heads (heads a multiple of sp), the KV heads must split evenly or be
replicated evenly (KV heads a multiple of sp, or sp a multiple of KV heads), and the batch's
sequence length must divide by sp. DeepSpeed raises ``ValueError`` at set-up for the heads and
at the first batch for the sequence.

The sequence-parallel size comes from a DeepSpeed config's ``sequence_parallel_size``, the
settings' ``sp`` or ``--sp``; the rule runs when the target names DeepSpeed (or names no
engine) and sp > 1. The sequence is the training run's, never an HF checkpoint's maximum
context.

Source: DeepSpeed 0.19.8 ``deepspeed/runtime/sequence_parallel/ulysses_sp.py:147-152``
(heads, KV heads) and ``:706-707`` (sequence length); the lower-level
``deepspeed/sequence/layer.py:64`` and ``:82`` assert the same head split.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, refused_by

RULE = Rule(
    code="SL325",
    name="ulysses-sequence-parallel",
    severity="error",
    summary="DeepSpeed Ulysses refuses heads, KV heads or sequences sp does not split",
    source="DeepSpeed 0.19.8 deepspeed/runtime/sequence_parallel/ulysses_sp.py",
    family="engine",
)

VERIFIED = {
    "deepspeed": "deepspeed/runtime/sequence_parallel/ulysses_sp.py:147-152, 706-707; "
    "deepspeed/sequence/layer.py:64, 82",
}

_QWEN25_7B = (
    '{"hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,'
    ' "intermediate_size": 18944, "num_hidden_layers": 28, "vocab_size": 152064}\n'
)
EXAMPLES = [
    Example(_QWEN25_7B, True, target={"sp": 4, "engines": ("deepspeed",)}),
    Example(
        _QWEN25_7B,
        False,
        target={"sp": 8, "engines": ("deepspeed",)},
        note="Qwen2.5-7B's 28 query heads over sequence parallel 8",
        expect=(Expect(1, "28", "Attention head count 28 is not divisible by SP size 8"),),
    ),
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 6,'
        ' "num_hidden_layers": 32}\n',
        False,
        target={"sp": 4, "engines": ("deepspeed",)},
        note="6 KV heads over 4 ranks: neither divides the other",
        expect=(
            Expect(
                1,
                "6",
                "KV attention head count 6 is not divisible by SP size 4 or vice versa",
            ),
        ),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the heads, KV heads and training sequence that sp does not split."""
    sp = target.sp
    engines = engines_for(target, VERIFIED)
    if sp <= 1 or not engines or not config.has_attention:
        return
    by = refused_by(engines)
    heads, a = config.get(Dim.HEADS), config.int(Dim.HEADS)
    if heads is not None and a is not None and a % sp:
        yield RULE.finding(
            config, heads, f"Attention head count {a} is not divisible by SP size {sp} {by}"
        )
    kv, g = config.get(Dim.KV_HEADS), config.int(Dim.KV_HEADS)
    if kv is not None and g is not None and g % sp and sp % g:
        yield RULE.finding(
            config,
            kv,
            f"KV attention head count {g} is not divisible by SP size {sp} or vice versa {by}",
        )
    s = target.seq_len
    seq = config.get(Dim.SEQ_LEN)
    if config.seq_is_max_context or s % sp == 0:
        return
    point = seq if seq is not None and config.int(Dim.SEQ_LEN) == s else config.get(Dim.SP)
    if point is not None:
        yield RULE.finding(
            config, point, f"batch's seqlen={s} isn't divisible by sp-size={sp} {by}"
        )
