"""Megatron-LM refuses a sequence length that is not a multiple of 2 × context parallel.

Guideline: context parallelism splits each sequence into 2·cp chunks (two per rank, for load
balance under the causal mask); Megatron-LM asserts the sequence length divides when cp > 1.

The context-parallel size comes from the config (``context_parallel_size``, torchtitan's
``context_parallel_degree``) or ``--cp``; the sequence length is the training run's
(``seq_length``, ``--seq-len``).

Source: Megatron-LM d98e8a64 ``megatron/training/arguments.py:1335-1338``.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.lint.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Rule
from shapelint.rules.engine_shapes import engines_for, refused_by

RULE = Rule(
    code="SL305",
    name="context-parallel-seq",
    severity="error",
    summary="Megatron-LM refuses a sequence length not a multiple of 2 x context parallel",
    source="Megatron-LM d98e8a64 megatron/training/arguments.py",
)

VERIFIED = {"megatron": "megatron/training/arguments.py:1335-1338"}

EXAMPLES = [
    Example(
        "language_model:\n  num_layers: 32\n  hidden_size: 4096\n  num_attention_heads: 32\n"
        "seq_length: 8192\n"
        "model_parallel:\n  context_parallel_size: 2\n",
        True,
        format="yaml",
    ),
    Example(
        "language_model:\n  num_layers: 32\n  hidden_size: 4096\n  num_attention_heads: 32\n"
        "seq_length: 8190\n"
        "model_parallel:\n  context_parallel_size: 2\n",
        False,
        format="yaml",
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the sequence length when 2·cp does not divide it."""
    cp = target.cp
    engines = engines_for(target, VERIFIED)
    if cp <= 1 or not engines or target.seq_len % (2 * cp) == 0:
        return
    seq = config.get(Dim.SEQ_LEN)
    point = seq if seq is not None and config.int(Dim.SEQ_LEN) == target.seq_len else None
    point = point or config.get(Dim.CP)
    if point is None:
        return  # both came from flags: nothing in the file to point at
    yield RULE.finding(
        config,
        point,
        "seq-length should be a multiple of 2 * context-parallel-size if "
        f"context-parallel-size > 1: sequence {target.seq_len}, context parallel {cp} "
        f"{refused_by(engines)}",
    )
