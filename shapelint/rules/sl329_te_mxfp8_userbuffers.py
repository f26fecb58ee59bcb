"""Transformer Engine's Userbuffers overlap refuses MXFP8 shards of fewer than 128-token rows.

Guideline: with sequence parallelism each GPU holds s·b/(cp·t) tokens of the activations
between tensor-parallel regions, and every column-parallel linear all-gathers them first.
With ``tp_comm_overlap`` Transformer Engine overlaps that all-gather with the GEMM through
Userbuffers; under the MXFP8 recipe it also gathers the block scales, and raises "Userbuffers
requires MXFP8 tensor dims that are divisible by 128" unless the shard's leading dims (its
tokens) are a multiple of 128. Megatron-LM itself only needs the sequence to divide evenly.

The rule runs for Megatron-style training configs that turn on both ``sequence_parallel`` and
``tp_comm_overlap`` (``--sequence-parallel --tp-comm-overlap``) under ``--fp8-recipe mxfp8``
(read from the config, or ``--dtype fp8 --fp8-recipe mxfp8``), on Transformer Engine, at tensor
parallel above 1; a shard that does not divide evenly is Megatron's own error, not this one.

Source: TransformerEngine commit d0067d0d (2.20.0.dev0) ``transformer_engine/pytorch/module/
base.py:607, 709-713`` (``fill_userbuffers_buffer_for_all_gather``: the check), called by
``module/layernorm_linear.py:301-307`` for the sequence-parallel input all-gather
(``with_input_all_gather``, :174); Megatron-LM d98e8a64 ``megatron/core/
model_parallel_config.py:94, 265`` (``sequence_parallel``, ``tp_comm_overlap``).
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, mxfp8_sequence_shard, refused_by

RULE = Rule(
    code="SL329",
    name="te-mxfp8-userbuffers",
    severity="error",
    summary="Transformer Engine's Userbuffers overlap refuses MXFP8 sequence-parallel shards "
    "whose tokens are not a multiple of 128",
    source="TransformerEngine 2.20.0.dev0: transformer_engine/pytorch/module/base.py",
    family="engine",
    uses_micro_batch=True,
)

VERIFIED = {
    "transformer-engine": "transformer_engine/pytorch/module/base.py:607, 709-713; "
    "module/layernorm_linear.py:174, 301-307",
}

ROWS = 128


def _megatron(seq: int, extra: str = "") -> str:
    """A Megatron-LM functional-test model_config.yaml of Llama-3-8B's shape at TP 8."""
    return (
        "MODEL_ARGS:\n  --num-layers: 32\n  --hidden-size: 4096\n  --ffn-hidden-size: 14336\n"
        "  --num-attention-heads: 32\n  --group-query-attention: true\n"
        "  --num-query-groups: 8\n  --swiglu: true\n"
        f"  --seq-length: {seq}\n  --micro-batch-size: 1\n"
        "  --tensor-model-parallel-size: 8\n  --sequence-parallel: true\n"
        "  --tp-comm-overlap: true\n  --bf16: true\n  --fp8-format: hybrid\n"
        f"  --fp8-recipe: mxfp8\n{extra}"
    )


EXAMPLES = [
    Example(_megatron(8192), True, format="yaml", note="8192 / 8 = 1024 tokens per GPU"),
    Example(
        _megatron(2560),
        False,
        format="yaml",
        note="2560 / 8 = 320 tokens per GPU, 2·128 + 64",
        expect=(Expect(9, "2560", "Userbuffers requires MXFP8 tensor dims that are divisible"),),
    ),
    Example(
        _megatron(2560).replace("  --tp-comm-overlap: true\n", ""),
        True,
        format="yaml",
        note="without Userbuffers the all-gather is NCCL's, which takes any multiple of 32",
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the sequence length when a GPU's sequence-parallel shard is not 128-row aligned."""
    engines = engines_for(target, VERIFIED)
    overlap = config.get(Dim.TP_COMM_OVERLAP)
    if not engines or overlap is None or overlap.value is not True:
        return
    found = mxfp8_sequence_shard(config, target)
    if found is None or found.tokens % ROWS == 0:
        return
    shard, split = found.tokens, found.split
    seq = config.get(Dim.SEQ_LEN) if config.int(Dim.SEQ_LEN) == target.seq_len else None
    yield RULE.finding(
        config,
        seq or overlap,
        f"Userbuffers requires MXFP8 tensor dims that are divisible by 128, but got MXFP8 "
        f"tensor with shape=({shard}, {config.int(Dim.HIDDEN) or 'hidden'}): micro-batch "
        f"{target.micro_batch} × sequence {target.seq_len} over {split} is {shard} tokens per "
        f"GPU in the overlapped sequence-parallel all-gather {refused_by(engines)}",
    )
