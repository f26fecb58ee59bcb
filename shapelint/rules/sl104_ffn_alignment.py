"""The FFN width (or MoE expert FFN width) per tensor-parallel rank is not a multiple of 64.

Guideline: the MLP's up/gate projections produce f/t columns and its down projection reduces
over f/t; these are the largest GEMMs of a dense transformer layer. Widths such as 10922
(⌊8·4096/3⌋ without rounding) misalign them. Llama rounds its SwiGLU width up to
``multiple_of`` (256 in Llama-2, 1024 in Llama-3) for this reason.

The fix sets the framework's ``multiple_of`` knob where the width is derived from it (raised
to the next multiple of 64·t), or rounds an explicit width up to a multiple of 64·t. It
changes the architecture, so it is unsafe.

Source: Anthony et al. 2024; NVIDIA "Matrix Multiplication Background" guide; Meta Llama
``FeedForward`` (``multiple_of``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from shapelint.core.model import Dim, Finding, Fix, ModelConfig, Target, Value
from shapelint.rules.base import Example, Expect, Rule, describe, make_fix, round_up

RULE = Rule(
    code="SL104",
    name="ffn-alignment",
    severity="warning",
    summary="FFN or expert FFN width (per tensor-parallel rank) not a multiple of 64",
    source="Anthony et al. 2024; NVIDIA matmul guide; Llama FeedForward multiple_of",
    family="alignment",
)

MULTIPLE = 64


@dataclass(frozen=True)
class Options:
    """What a team may tune (``[tool.shapelint.rules.SL104]``)."""

    multiple: int = field(
        default=MULTIPLE,
        metadata={"min": 1, "doc": "the multiple each rank's share of the FFN width should be"},
    )


OPTIONS = Options()

EXAMPLES = [
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 11008,'
        ' "num_hidden_layers": 32}\n',
        True,
    ),
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 10922,'
        ' "num_hidden_layers": 32}\n',
        False,
        fixed='{"hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 10944,'
        ' "num_hidden_layers": 32}\n',
        expect=(Expect(1, "10922", "FFN width intermediate_size (10922) is not a multiple of 64"),),
    ),
    Example(
        '{"dim": 4096, "n_heads": 32, "n_layers": 32, "multiple_of": 2, "vocab_size": 32000}\n',
        False,
        fixed='{"dim": 4096, "n_heads": 32, "n_layers": 32, "multiple_of": 64, "vocab_size": 32000}\n',
        note="Llama params.json: the width comes from multiple_of, so the fix sets the knob",
        expect=(
            Expect(1, "4096", "FFN width multiple_of · ⌈int(ffn_dim_multiplier · int(8·dim/3)) /"),
        ),
    ),
]


def _knob_fix(config: ModelConfig, ffn: Value, t: int, align: int) -> Fix | None:
    knob = config.get(Dim.FFN_MULTIPLE)
    if knob is None or knob not in ffn.derived_from or Dim.FFN not in config.formulas:
        return None
    m = knob.as_int or 1
    new_m = round_up(m, align * t)
    # The width the config's own framework computes from the new knob (Llama, NeoX …).
    new_f = config.rederive({Dim.FFN_MULTIPLE: new_m}).get(Dim.FFN)
    if new_f is None or new_f // t % MULTIPLE:
        return None
    return make_fix(
        config,
        f"set {knob.key} to {new_m} (FFN width {ffn.value} → {new_f})",
        [(knob, new_m)],
        architecture=True,
        dims=[(Dim.FFN, new_f)],
    )


def check(config: ModelConfig, target: Target, options: Options = OPTIONS) -> Iterator[Finding]:
    """Report f/t (and expert f/t) not a multiple of 64 (``options.multiple``), with a
    rounding fix."""
    align = options.multiple
    t = max(target.tp, 1)
    for dim, what in ((Dim.FFN, "FFN width"), (Dim.MOE_FFN, "expert FFN width")):
        value, f = config.get(dim), config.int(dim)
        if value is None or f is None or f % t or (f // t) % align == 0:
            continue
        new_f = round_up(f, align * t)
        if value.derived:
            fix = _knob_fix(config, value, t, align)
        else:
            fix = make_fix(
                config,
                f"round {value.key} up from {f} to {new_f}",
                [(value, new_f)],
                architecture=True,
                dims=[(dim, new_f)],
            )
        per_rank = f" ({f // t} per rank at tensor parallel {t})" if t > 1 else ""
        message = f"{what} {describe(value)} is not a multiple of {align * t}{per_rank}"
        yield RULE.finding(config, value, message, related=value.derived_from, fix=fix)
