"""The tokens per micro-batch (b·s) are not a multiple of 64.

Guideline: the tokens of a micro-batch are the M dimension of every projection GEMM in the
forward and data-gradient passes, and the reduction dimension of every weight-gradient GEMM.
Anthony et al. recommend b·s divisible by a power of two, with the benefit growing up to 64
(128 bytes of bf16, the best Tensor Core alignment on A100 and later); a token count that is
not leaves a partial tile at the end of every GEMM. A sequence length that is a multiple of 64
also aligns attention's s × s products.

The rule runs in training and prefill (decode has one token per sequence; SL204 covers it),
and only when the file states the micro-batch or the training sequence length — a finding
needs a value to point at, and a model's maximum context (``max_position_embeddings``) is not
the length a run trains at. The fix rounds a stated sequence length up to a multiple of 64
(unsafe: it changes what a step trains on). When only the micro-batch is stated, it moves to
the nearest micro-batch that makes b·s a multiple of 64, keeping the global batch through the
gradient accumulation or stated global batch where it can (safe), else unsafe.

Estimates compare time per token, since the fixed step processes a different number of tokens.

Source: Anthony et al. 2024, "The Case for Co-Designing Model Architectures with Hardware"
(b·s divisible by a power of two, up to 64); NVIDIA "Matrix Multiplication Background" guide.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule, describe, make_fix, pow2_factor, round_up
from shapelint.rules.batching import (
    keeps_global_batch,
    micro_batch_fix,
    stated_micro_batch,
    training_seq,
)

RULE = Rule(
    code="SL201",
    name="tokens-per-microbatch",
    severity="warning",
    summary="tokens per micro-batch (b·s) not a multiple of 64",
    source="Anthony et al. 2024; NVIDIA matmul guide",
    family="batching",
    uses_micro_batch=True,
)

MULTIPLE = 64


@dataclass(frozen=True)
class Options:
    """What a team may tune (``[tool.shapelint.rules.SL201]``)."""

    multiple: int = field(
        default=MULTIPLE,
        metadata={"min": 1, "doc": "the multiple the tokens per micro-batch (b·s) should be"},
    )


OPTIONS = Options()
# How far (in multiples of the needed step) the micro-batch search looks for one that keeps
# the global batch before settling for the nearest one.
_SEARCH = 8

_NEOX = """\
# GPT-NeoX 125M
{
  "pipe_parallel_size": 1,
  "model_parallel_size": 1,
  "num_layers": 12,
  "hidden_size": 768,
  "num_attention_heads": 12,
  "seq_length": %d,
  "train_micro_batch_size_per_gpu": 4,
}
"""

_NEOX_NO_SEQ = """\
# GPT-NeoX 350M, sequence length from the data pipeline (here --seq-len 1000)
{
  "pipe_parallel_size": 1,
  "model_parallel_size": 1,
  "num_layers": 24,
  "hidden_size": 1024,
  "num_attention_heads": 16,
  "train_micro_batch_size_per_gpu": %d,
  "train_batch_size": 512,
}
"""

EXAMPLES = [
    Example(_NEOX % 2048, True, format="yaml"),
    Example(
        _NEOX % 1000,
        False,
        format="yaml",
        fixed=_NEOX % 1024,
        note="b·s = 4·1000 = 4000 = 32·125",
        expect=(
            Expect(
                8, "1000", "tokens per micro-batch b·s = 4·1000 = 4000 have largest power-of-two"
            ),
        ),
    ),
    Example(
        _NEOX_NO_SEQ % 3,
        False,
        format="yaml",
        target={"seq_len": 1000},
        fixed=_NEOX_NO_SEQ % 8,
        note="only the micro-batch is stated: b·1000 needs b a multiple of 8",
        expect=(
            Expect(8, "3", "tokens per micro-batch b·s = 3·1000 = 3000 have largest power-of-two"),
        ),
    ),
]


def _micro_batch_for(config: ModelConfig, b: int, s: int, multiple: int = MULTIPLE) -> int:
    """The micro-batch nearest ``b`` that makes b·s a multiple of 64, preferring (within a few
    steps) one that keeps the global batch."""
    step = multiple // math.gcd(s, multiple)
    below = b // step * step
    nearest = min((c for c in (below, below + step) if c >= 1), key=lambda c: (abs(c - b), c))
    options = sorted(
        range(step, (b // step + _SEARCH + 1) * step, step), key=lambda c: (abs(c - b), c)
    )
    return next((c for c in options if keeps_global_batch(config, b, c)), nearest)


def check(config: ModelConfig, target: Target, options: Options = OPTIONS) -> Iterator[Finding]:
    """Report b·s not a multiple of 64 (``options.multiple``) at the stated sequence length
    or micro-batch."""
    align = options.multiple
    if target.mode == "decode":
        return
    b, s = target.micro_batch, target.seq_len
    tokens = b * s
    if tokens % align == 0:
        return
    seq = training_seq(config, target)
    micro = stated_micro_batch(config, target)
    gpu = target.gpu.name
    what = (
        f"tokens per micro-batch b·s = {b}·{s} = {tokens} have largest power-of-two factor "
        f"{pow2_factor(tokens)}, not {align}: every GEMM's token dimension ends in a "
        f"partial tile on {gpu}"
    )
    if seq is not None:
        new_s = round_up(s, align)
        fix = make_fix(
            config,
            f"round {seq.key} up from {s} to {new_s} (unsafe: changes the tokens a step trains on)",
            [(seq, new_s)],
            architecture=True,
            dims=[(Dim.SEQ_LEN, new_s)],
        )
        message = f"{what}; sequence length {describe(seq)} → {new_s} aligns them"
        yield RULE.finding(config, seq, message, fix=fix)
        return
    if micro is not None:
        new_b = _micro_batch_for(config, b, s, align)
        fix = micro_batch_fix(config, micro, new_b, f"b·s = {new_b}·{s} = {new_b * s}")
        message = f"{what}; micro-batch {describe(micro)} → {new_b} aligns them"
        yield RULE.finding(config, micro, message, fix=fix)
