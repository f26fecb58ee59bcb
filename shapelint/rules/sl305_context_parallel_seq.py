"""The sequence length does not split over context (and, in torchtitan, tensor) parallelism.

Guideline: context parallelism splits each sequence into 2·cp chunks (two per rank, for load
balance under the causal mask); Megatron-LM asserts the sequence length divides when cp > 1.
torchtitan also shards the sequence over tensor parallelism (sequence parallel) and asserts
that the sequence length divides by tp · 2·cp before it parallelizes a model — at cp = 1 too.

The context-parallel size comes from the config (``context_parallel_size``, torchtitan's
``context_parallel_degree``) or ``--cp``; the sequence length is the training run's
(``seq_length``, ``--seq-len``), never an HF checkpoint's maximum context.

Source: Megatron-LM d98e8a64 ``megatron/training/arguments.py:1335-1338``; torchtitan 0.2.0
``torchtitan/distributed/parallel_dims.py:252-259`` (``seq_len_divisor``) and
``torchtitan/models/llama3/infra/parallelize.py:63-68``.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, refused_by

RULE = Rule(
    code="SL305",
    name="context-parallel-seq",
    severity="error",
    summary="sequence length not a multiple of 2 x context parallel (torchtitan: x tp too)",
    source="Megatron-LM d98e8a64 megatron/training/arguments.py; torchtitan 0.2.0",
    family="engine",
)

VERIFIED = {
    "megatron": "megatron/training/arguments.py:1335-1338",
    "torchtitan": "torchtitan/distributed/parallel_dims.py:252-259; "
    "torchtitan/models/llama3/infra/parallelize.py:63-68",
}

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
        "seq_length: 8192\n"
        "model_parallel:\n  context_parallel_size: 3\n",
        False,
        format="yaml",
        note="Llama 3 8B's 8192-token sequence over context parallel 3",
        expect=(
            Expect(5, "8192", "seq-length should be a multiple of 2 * context-parallel-size if"),
        ),
    ),
    Example(
        "[training]\nseq_len = 8190\nlocal_batch_size = 1\n\n"
        "[parallelism]\ntensor_parallel_degree = 2\n",
        False,
        format="toml",
        note="torchtitan: 8190 is not a multiple of 2 · 2 · 1",
        expect=(
            Expect(2, "8190", "Sequence length 8190 must be divisible by the product of TP degree"),
        ),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the sequence length when 2·cp (torchtitan: tp·2·cp) does not divide it."""
    cp, tp, s = target.cp, max(target.tp, 1), target.seq_len
    if config.seq_is_max_context:
        return  # an HF max_position_embeddings is not the length a run trains at
    seq = config.get(Dim.SEQ_LEN)
    point = seq if seq is not None and config.int(Dim.SEQ_LEN) == s else None
    point = point or config.get(Dim.CP) or config.get(Dim.TP)
    if point is None:
        return  # everything came from flags: nothing in the file to point at
    megatron = engines_for(target, ["megatron"])
    if megatron and cp > 1 and s % (2 * cp):
        yield RULE.finding(
            config,
            point,
            "seq-length should be a multiple of 2 * context-parallel-size if "
            f"context-parallel-size > 1: sequence {s}, context parallel {cp} "
            f"{refused_by(megatron)}",
        )
    titan = engines_for(target, ["torchtitan"])
    if titan and s % (tp * 2 * cp):
        yield RULE.finding(
            config,
            point,
            f"Sequence length {s} must be divisible by the product of TP degree ({tp}) and "
            f"2 * CP degree ({cp}). {refused_by(titan)}",
        )
