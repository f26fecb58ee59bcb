"""A dimension is not a positive integer.

Guideline: widths, head counts, layer counts, vocab sizes, batch and parallel sizes count
things; a zero, negative, fractional or non-numeric value describes no model, and frameworks
fail on it at start-up (or worse, truncate it silently). A whole number written as a float
(``4096.0``) is reported too: ``torch.nn.Linear`` and the frameworks' integer fields reject it.
A width, head count or layer count set to ``null`` is reported; other dims may be ``null``,
which frameworks read as "use the default" (``num_key_value_heads: null`` = one per head).
A value beyond 2³¹ (``1e308``, ``2**63``) describes no model either; it is reported and never
computed with.

Source: every framework's config validation (e.g. transformers 5.x ``positive_int_field``;
Megatron-LM ``validate_args``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from shapelint.core.limits import MAX_DIM, beyond_max_dim
from shapelint.core.model import INTEGER_DIMS, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule

RULE = Rule(
    code="SL002",
    name="invalid-dim",
    severity="error",
    summary="a dimension is zero, negative, fractional, beyond 2³¹ or not a number",
    source="framework config validation (transformers, Megatron-LM)",
    family="model",
)

EXAMPLES = [
    Example('{"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32}\n', True),
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 0, "num_hidden_layers": 32}\n',
        False,
        expect=(Expect(1, "0", "num_attention_heads must be a positive integer, got 0"),),
    ),
    Example(
        '{"hidden_size": 4096.5, "num_attention_heads": 32, "num_hidden_layers": 32}\n',
        False,
        expect=(
            Expect(1, "4096.5", "hidden_size must be a positive integer, got 4096.5 (not a whole"),
        ),
    ),
    Example(
        '{"hidden_size": "4096", "num_attention_heads": 32, "num_hidden_layers": 32}\n',
        False,
        expect=(
            Expect(1, '"4096"', "hidden_size must be a positive integer, got the string '4096'"),
        ),
    ),
    Example(
        '{"hidden_size": 4096.0, "num_attention_heads": 32, "num_hidden_layers": 32}\n',
        False,
        expect=(
            Expect(1, "4096.0", "hidden_size must be a positive integer, got 4096.0 (a float"),
        ),
    ),
    Example(
        "batch_size = 64 / 2\n"
        "ds_config = {\n"
        '    "train_micro_batch_size_per_gpu": 4,\n'
        '    "gradient_accumulation_steps": batch_size // 4,\n'
        "}\n",
        False,
        format="python",
        note="a float computed in Python: 64 / 2 is 32.0, and 32.0 // 4 is 8.0",
        expect=(
            Expect(
                4,
                "batch_size // 4",
                "gradient_accumulation_steps must be a positive integer, got 8.0 (a float, from"
                " `batch_size // 4`; make it an int)",
            ),
        ),
    ),
    Example(
        '{"hidden_size": 1e308, "num_attention_heads": 32, "num_hidden_layers": 32}\n',
        False,
        note="a value no model has: never computed with, never printed whole",
        expect=(
            Expect(
                1,
                "1e308",
                "hidden_size must be a positive integer of at most 2³¹ (2147483648), got 1e+308",
            ),
        ),
    ),
    Example(
        '{"hidden_size": 4096, "num_attention_heads": null, "num_hidden_layers": 32}\n',
        False,
        expect=(Expect(1, "null", "num_attention_heads must be a positive integer, got null"),),
    ),
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": null,'
        ' "num_hidden_layers": 32}\n',
        True,
        note="null KV heads mean one per head in transformers",
    ),
]


def _kind(value: object, expression: str | None = None) -> str:
    if isinstance(value, float) and value.is_integer() and expression is not None:
        # Computed (``batch_size // micro_batch_size`` with a float batch): the expression is
        # what the user wrote, so the advice is to make it an int, not to write the number.
        return f"{value} (a float, from `{expression}`; make it an int)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN (not a number)"
        if math.isinf(value):
            return f"{value} (infinite)"
        if value.is_integer():
            return f"{value} (a float; write {int(value)})"
        return f"{value} (not a whole number)"
    if value is None:
        return "null"
    return type(value).__name__


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report every integer dim that is not a positive integer."""
    for dim, value in config.dims.items():
        if dim not in INTEGER_DIMS or value.derived or not value.known:
            continue
        huge = beyond_max_dim(value.value)
        if huge is not None:
            yield RULE.finding(
                config,
                value,
                f"{value.key} must be a positive integer of at most 2³¹ ({MAX_DIM}), got {huge}",
            )
            continue
        n = value.as_int
        if n is None or isinstance(value.value, float):
            yield RULE.finding(
                config,
                value,
                f"{value.key} must be a positive integer, got {_kind(value.value, value.expression)}",
            )
        elif n <= 0:
            yield RULE.finding(config, value, f"{value.key} must be a positive integer, got {n}")
