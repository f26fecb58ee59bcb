"""The attention head dimension has a power-of-two factor below 64.

Guideline: attention's batched GEMMs (QKᵀ and attention·V) have the head dimension h/a as
their reduction or output dimension. Anthony et al. measured on A100 that QKᵀ throughput is
~200–215 TFLOP/s when the largest power-of-two factor of h/a is 8–64, ~100–150 when it is 2–4
and ~75–95 when h/a is odd; "more powers of two leads to better performance up to h/a = 64".
Flash-attention kernels are compiled for head dims 32, 64, 96, 128, 160, 192, 224, 256 and pay
for the next size up (80 costs as much as 96). GPT-3 2.7B's h/a = 2560/32 = 80 was the
paper's headline example.

The fix changes the number of heads so that h/a is a multiple of 64 (keeping KV-head and
tensor-parallel divisibility, and a head dim of at most 256, the widest FlashAttention-2/3
take): of the nearest count below and the nearest above, the one the performance model runs
faster per FLOP on the target (GPT-3 2.7B's 80 → 128 with 20 heads on
H100, where FlashAttention-3 runs head dim 64 no faster than 80 padded to 96); or it rounds an
explicit ``head_dim`` up to a multiple of 64. Both change the architecture: unsafe.

Source: Anthony et al. 2024, "The Case for Co-Designing Model Architectures with Hardware",
§IV and Fig. 7; flash-attention's compiled head dimensions.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from shapelint.core.model import Derivation, Dim, Finding, Fix, ModelConfig, Target
from shapelint.rules.base import (
    Example,
    Expect,
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
    family="alignment",
)

MULTIPLE = 64

EXAMPLES = [
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,'
        ' "intermediate_size": 11008, "vocab_size": 32000}\n',
        True,
    ),
    Example(
        '{"hidden_size": 2560, "num_attention_heads": 32, "num_hidden_layers": 32,'
        ' "intermediate_size": 10240, "vocab_size": 50304}\n',
        False,
        fixed='{"hidden_size": 2560, "num_attention_heads": 20, "num_hidden_layers": 32,'
        ' "intermediate_size": 10240, "vocab_size": 50304}\n',
        note="GPT-3 2.7B: h/a = 80; of 40 heads of 64 and 20 of 128 the model runs 20 faster",
        expect=(
            Expect(1, "2560", "head dim hidden / heads = 80 has largest power-of-two factor 16"),
        ),
    ),
    Example(
        '{"hidden_size": 3072, "num_attention_heads": 32, "head_dim": 96, "num_hidden_layers": 28,'
        ' "vocab_size": 32064}\n',
        False,
        fixed='{"hidden_size": 3072, "num_attention_heads": 24, "head_dim": 128, "num_hidden_layers": 28,'
        ' "vocab_size": 32064}\n',
        note="Phi-3-mini: head_dim 96 equals hidden/heads, so both change together",
        expect=(Expect(1, "96", "head dim head_dim (96) has largest power-of-two factor 32"),),
    ),
]


def _head_counts(h: int, a: int, kv: int | None, t: int) -> list[int]:
    """The head counts whose head dim h/a' is a multiple of 64 (and that tensor parallelism
    and the KV heads divide): the nearest below ``a`` and the nearest above, nearest first."""
    below = [c for c in _valid_counts(h, kv, t) if c < a]
    above = [c for c in _valid_counts(h, kv, t) if c > a]
    near = [max(below)] if below else []
    near += [min(above)] if above else []
    return sorted(near, key=lambda c: abs(math.log(c / a)))


# The widest head dim the fix proposes: FlashAttention-2/3 take head dims up to 256 (SL302).
MAX_HEAD_DIM = 256


def _valid_counts(h: int, kv: int | None, t: int) -> list[int]:
    return [
        h // d
        for d in range(MULTIPLE, min(h, MAX_HEAD_DIM) + 1, MULTIPLE)
        if h % d == 0 and (h // d) % t == 0 and (kv is None or (h // d) % kv == 0)
    ]


def _fastest(config: ModelConfig, target: Target, options: list[dict[Dim, int]]) -> int:
    """The index of the option the performance model runs fastest per FLOP (the first on a
    tie or when it has no estimate): head dim 64 is not always faster than 80 padded to 96
    (FlashAttention-3's figures), while 128 is."""
    from shapelint.perf.estimate import step_time

    best, best_cost = 0, math.inf
    for i, dims in enumerate(options):
        step = step_time(config.with_dims(dims), target)
        if step.total_s <= 0 or step.flops <= 0:
            return 0
        cost = step.total_s / step.flops
        if cost < best_cost * (1 - 1e-9):
            best, best_cost = i, cost
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
    if head_dim.derived and head_dim.kind not in (
        Derivation.HEAD_DIM_SPLIT,
        Derivation.FLOOR_SPLIT,
    ):
        return None  # e.g. MLA's qk_nope_head_dim + qk_rope_head_dim: no single value to edit
    counts = _head_counts(h, a, g, max(target.tp, 1))
    if not counts:
        return None
    options = []
    for count in counts:
        wanted = {Dim.HEADS: count, Dim.HEAD_DIM: h // count}
        if mha and kv is not None:
            wanted[Dim.KV_HEADS] = count
        options.append(consistent_dims(config, wanted))
    pick = _fastest(config, target, options) if len(options) > 1 else 0
    new_a, dims = counts[pick], options[pick]
    changes = [(heads, new_a)]
    if not head_dim.derived:
        changes.append((head_dim, h // new_a))
    if mha and kv is not None:
        changes.append((kv, new_a))
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
