"""The hidden size (per tensor-parallel rank) is not a multiple of 64.

Guideline: the hidden size h is a dimension of every projection GEMM (QKV, output, MLP up and
down, logits), and h/t is the reduction dimension of the row-parallel ones under tensor
parallelism. Tensor Cores reach full speed when contiguous dimensions are multiples of
128 bytes (64 bf16/fp16 elements) on A100 and later; other sizes leave partial tiles and
lose the widest vector loads. Anthony et al. recommend h/t divisible by a power of two, with
benefit up to 64.

The fix rounds h up to the next multiple of 64·t that the head count still divides. It
changes the architecture, so it is unsafe.

Source: Anthony et al. 2024, "The Case for Co-Designing Model Architectures with Hardware";
NVIDIA "Matrix Multiplication Background" guide, Tensor Core requirements (Table 1).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import (
    Example,
    Expect,
    Rule,
    consistent_dims,
    describe,
    make_fix,
    round_up,
)

RULE = Rule(
    code="SL103",
    name="hidden-alignment",
    severity="warning",
    summary="hidden size (per tensor-parallel rank) not a multiple of 64",
    source="Anthony et al. 2024; NVIDIA matmul guide (Tensor Core alignment)",
    family="alignment",
)

MULTIPLE = 64


@dataclass(frozen=True)
class Options:
    """What a team may tune (``[tool.shapelint.rules.SL103]``)."""

    multiple: int = field(
        default=MULTIPLE,
        metadata={"min": 1, "doc": "the multiple each rank's share of the hidden size should be"},
    )


OPTIONS = Options()

EXAMPLES = [
    Example('{"hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 24}\n', True),
    Example(
        '{"hidden_size": 2000, "num_attention_heads": 16, "num_hidden_layers": 24}\n',
        False,
        fixed='{"hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 24}\n',
        expect=(Expect(1, "2000", "hidden size hidden_size (2000) is not a multiple of 64"),),
    ),
    Example(
        '{"hidden_size": 4160, "num_attention_heads": 32, "num_hidden_layers": 32}\n',
        False,
        target={"tp": 2},
        fixed='{"hidden_size": 4224, "num_attention_heads": 32, "num_hidden_layers": 32}\n',
        note="4160 is a multiple of 64 but 2080 per rank is not",
        expect=(
            Expect(1, "4160", "hidden size hidden_size (4160) is not a multiple of 128 (2080 per"),
        ),
    ),
]


def check(config: ModelConfig, target: Target, options: Options = OPTIONS) -> Iterator[Finding]:
    """Report h/t not a multiple of 64 (``options.multiple``), with a fix rounding h up."""
    align = options.multiple
    hidden, h = config.get(Dim.HIDDEN), config.int(Dim.HIDDEN)
    t = max(target.tp, 1)
    if hidden is None or h is None or h % t or (h // t) % align == 0:
        return
    head_dim = config.get(Dim.HEAD_DIM)
    a = config.int(Dim.HEADS)
    step = align * t
    if a and (head_dim is None or head_dim.derived):
        step = step * a // math.gcd(step, a)
    new_h = round_up(h, step)
    per_rank = f" ({h // t} per rank at tensor parallel {t})" if t > 1 else ""
    fix = make_fix(
        config,
        f"round {hidden.key} up from {h} to {new_h}",
        [(hidden, new_h)],
        architecture=True,
        dims=list(consistent_dims(config, {Dim.HIDDEN: new_h}).items()),
    )
    message = f"hidden size {describe(hidden)} is not a multiple of {align * t}{per_rank}"
    yield RULE.finding(config, hidden, message, fix=fix)
