"""The attention head dimension has a power-of-two factor below 64.

Guideline: attention's batched GEMMs (QKᵀ and attention·V) have the head dimension h/a as
their reduction or output dimension. Anthony et al. measured on A100 that QKᵀ throughput is
~200–215 TFLOP/s when the largest power-of-two factor of h/a is 8–64, ~100–150 when it is 2–4
and ~75–95 when h/a is odd; "more powers of two leads to better performance up to h/a = 64".
Flash-attention kernels are compiled for head dims 32, 64, 96, 128, 160, 192, 224, 256 and pay
for the next size up (80 costs as much as 96). GPT-3 2.7B's h/a = 2560/32 = 80 was the
paper's headline example.

The fix changes the number of heads to the nearest count that makes h/a a multiple of 64
(keeping KV-head and tensor-parallel divisibility), or rounds an explicit ``head_dim`` up to a
multiple of 64. Both change the architecture, so the fix is unsafe.

Source: Anthony et al. 2024, "The Case for Co-Designing Model Architectures with Hardware",
§IV and Fig. 7; flash-attention's compiled head dimensions.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from shapelint.lint.model import Derivation, Dim, Finding, Fix, ModelConfig, Target
from shapelint.rules.base import (
    Example,
    Rule,
    consistent_dims,
    describe,
    make_fix,
    pow2_factor,
    round_up,
)

RULE = Rule(
    code="SL102",
    name="head-dim-alignment",
    severity="warning",
    summary="head dim (h/a) with a power-of-two factor below 64",
    source="Anthony et al. 2024, Fig. 7; flash-attention head-dim kernels",
)

MULTIPLE = 64

EXAMPLES = [
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,'
        ' "vocab_size": 32000}\n',
        True,
    ),
    Example(
        '{"hidden_size": 2560, "num_attention_heads": 32, "num_hidden_layers": 32,'
        ' "vocab_size": 50304}\n',
        False,
        fixed='{"hidden_size": 2560, "num_attention_heads": 40, "num_hidden_layers": 32,'
        ' "vocab_size": 50304}\n',
        note="GPT-3 2.7B: h/a = 80",
    ),
    Example(
        '{"hidden_size": 3072, "num_attention_heads": 32, "head_dim": 96, "num_hidden_layers": 28,'
        ' "vocab_size": 32064}\n',
        False,
        fixed='{"hidden_size": 3072, "num_attention_heads": 24, "head_dim": 128, "num_hidden_layers": 28,'
        ' "vocab_size": 32064}\n',
        note="Phi-3-mini: head_dim 96 equals hidden/heads, so both change together",
    ),
]


def _heads_for(h: int, a: int, kv: int | None, t: int) -> int | None:
    """The head count nearest ``a`` whose head dim h/a' is a multiple of 64."""
    best: int | None = None
    for d in range(MULTIPLE, h + 1, MULTIPLE):
        if h % d:
            continue
        cand = h // d
        if cand % t or (kv is not None and cand % kv):
            continue
        if best is None or abs(math.log(cand / a)) < abs(math.log(best / a)):
            best = cand
    return best


def _fix(config: ModelConfig, target: Target) -> Fix | None:
    head_dim, heads, hidden = (
        config.get(Dim.HEAD_DIM),
        config.get(Dim.HEADS),
        config.get(Dim.HIDDEN),
    )
    d, a, h = config.int(Dim.HEAD_DIM), config.int(Dim.HEADS), config.int(Dim.HIDDEN)
    kv = config.get(Dim.KV_HEADS)
    g = None if kv is None or kv.derived else config.int(Dim.KV_HEADS)
    mha = kv is not None and not kv.derived and g is not None and g == a
    if mha:
        g = None  # stated KV heads equal to heads (plain MHA): they change together
    if head_dim is None or d is None:
        return None
    coupled = heads is not None and a is not None and h is not None and h == a * d
    if not head_dim.derived and not coupled:
        new_d = round_up(d, MULTIPLE)
        return make_fix(
            config,
            f"round {head_dim.key} up from {d} to {new_d}",
            [(head_dim, new_d)],
            architecture=True,
            dims=[(Dim.HEAD_DIM, new_d)],
        )
    if heads is None or a is None or h is None or hidden is None:
        return None
    if head_dim.derived and head_dim.kind is not Derivation.HEAD_DIM_SPLIT:
        return None  # e.g. MLA's qk_nope_head_dim + qk_rope_head_dim: no single value to edit
    new_a = _heads_for(h, a, g, max(target.tp, 1))
    if new_a is None or new_a == a:
        return None
    changes = [(heads, new_a)]
    new_dims = {Dim.HEADS: new_a, Dim.HEAD_DIM: h // new_a}
    if not head_dim.derived:
        changes.append((head_dim, h // new_a))
    if mha and kv is not None:
        changes.append((kv, new_a))
        new_dims[Dim.KV_HEADS] = new_a
    dims = consistent_dims(config, new_dims)
    return make_fix(
        config,
        f"use {new_a} attention heads ({heads.key}) so the head dim is {h // new_a}",
        changes,
        architecture=True,
        dims=list(dims.items()),
    )


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report a head dim whose largest power-of-two factor is below 64."""
    head_dim, d = config.get(Dim.HEAD_DIM), config.int(Dim.HEAD_DIM)
    if head_dim is None or d is None or pow2_factor(d) >= MULTIPLE:
        return
    message = (
        f"head dim {describe(head_dim)} has largest power-of-two factor {pow2_factor(d)}; "
        f"attention GEMMs run best when it is a multiple of {MULTIPLE}"
    )
    yield RULE.finding(
        config, head_dim, message, related=head_dim.derived_from, fix=_fix(config, target)
    )
