"""The vocabulary (per tensor-parallel rank) is not a multiple of 64.

Guideline: the embedding gradient and the logit layer are GEMMs with the vocab as one
dimension. A vocab that is not a multiple of 64 (128 bytes of bf16, the best Tensor Core
alignment on A100 and later) leaves partial tiles and misaligned rows in the largest GEMM of a
small model. Pad it: nanoGPT pads GPT-2's 50257 to 50304 (+0.1% parameters) for exactly this
reason. Under tensor parallelism each rank holds
vocab / t rows, so the padded vocab must be a multiple of 64·t.

The fix sets the framework's padding knob where the config has one
(``make_vocab_size_divisible_by``, ``padding_multiple``; raised to 128, Megatron-LM's
default, when it is below that) or an explicit ``padded_vocab_size``; otherwise it pads the
vocab itself. Padding rows are never produced by the tokenizer, so a from-scratch model's
function is unchanged; a config that ships with weights gets the fix only as unsafe. An encoder
without a vocabulary projection (a BERT-style backbone) is not reported: there its vocab is
only a table lookup, in no GEMM.

Source: Anthony et al. 2024, "The Case for Co-Designing Model Architectures with Hardware"
(vocab divisible by 64); NVIDIA "Matrix Multiplication Background" guide (alignment); nanoGPT
``model.py`` (vocab_size 50304).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule, describe, make_fix, round_up

RULE = Rule(
    code="SL101",
    name="vocab-padding",
    severity="warning",
    summary="vocab (per tensor-parallel rank) not a multiple of 64",
    source="Anthony et al. 2024; NVIDIA matmul guide; nanoGPT (50257 → 50304)",
    family="alignment",
    pads=Dim.VOCAB,
)

MULTIPLE = 64
KNOB_DEFAULT = 128  # Megatron-LM's make_vocab_size_divisible_by default


@dataclass(frozen=True)
class Options:
    """What a team may tune (``[tool.shapelint.rules.SL101]``)."""

    multiple: int = field(
        default=MULTIPLE,
        metadata={"min": 1, "doc": "the multiple each rank's share of the vocab should be"},
    )


OPTIONS = Options()

EXAMPLES = [
    Example('{"n_embd": 768, "n_head": 12, "n_layer": 12, "vocab_size": 50304}\n', True),
    Example(
        '{"n_embd": 768, "n_head": 12, "n_layer": 12, "vocab_size": 50257}\n',
        False,
        fixed='{"n_embd": 768, "n_head": 12, "n_layer": 12, "vocab_size": 50304}\n',
        note="GPT-2 small: the classic unpadded vocab",
        expect=(Expect(1, "50257", "vocab vocab_size (50257) is not a multiple of 64"),),
    ),
    Example(
        '{"hidden_size": 5120, "num_attention_heads": 40, "num_hidden_layers": 40,'
        ' "vocab_size": 32064}\n',
        False,
        target={"tp": 2},
        fixed='{"hidden_size": 5120, "num_attention_heads": 40, "num_hidden_layers": 40,'
        ' "vocab_size": 32128}\n',
        note="32064 is a multiple of 64, but each of 2 ranks holds 16032 rows",
        expect=(
            Expect(
                1, "32064", "vocab vocab_size (32064) is not a multiple of 128 (16032 per rank at"
            ),
        ),
    ),
]


def check(config: ModelConfig, target: Target, options: Options = OPTIONS) -> Iterator[Finding]:
    """Report a vocab whose per-rank share is not a multiple of 64 (``options.multiple``),
    with a padding fix."""
    align = options.multiple
    vocab = config.vocab_value
    v = vocab.as_int if vocab is not None else None
    t = max(target.tp, 1)
    if vocab is None or v is None or v <= 0 or v % t or (v // t) % align == 0:
        return
    if config.has_lm_head is False:
        return  # an encoder without a vocabulary projection: the vocab is only a table lookup
    multiple = align * t
    padded = round_up(v, multiple)
    per_rank = f" ({v // t} per rank at tensor parallel {t})" if t > 1 else ""
    message = (
        f"vocab {describe(vocab)} is not a multiple of {multiple}{per_rank}; "
        f"pad it to {padded} for aligned embedding and logit GEMMs"
    )
    knob = config.get(Dim.VOCAB_MULTIPLE)
    fix = None
    if vocab.derived and knob is not None and knob in vocab.derived_from:
        m = knob.as_int or 1
        new_m = max(KNOB_DEFAULT, align) if m < max(KNOB_DEFAULT, align) else round_up(m, align)
        raw = config.get(Dim.VOCAB)
        raw_v = raw.as_int if raw is not None else None
        new_padded = round_up(raw_v or v, new_m * t)
        fix = make_fix(
            config,
            f"set {knob.key} to {new_m} (padded vocab {v} → {new_padded})",
            [(knob, new_m)],
            architecture=False,
            dims=[(Dim.PADDED_VOCAB, new_padded)],
        )
    else:
        fix = make_fix(
            config,
            f"pad {vocab.key} from {v} to {padded}",
            [(vocab, padded)],
            architecture=False,
            dims=[
                (Dim.PADDED_VOCAB if vocab is config.get(Dim.PADDED_VOCAB) else Dim.VOCAB, padded)
            ],
        )
    yield RULE.finding(config, vocab, message, fix=fix)
