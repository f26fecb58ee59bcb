"""Transformer Engine all-gathers a sequence-parallel shard in high precision when MXFP8 cannot
quantize it.

Guideline: with sequence parallelism each GPU holds s·b/(cp·t) tokens of hidden-wide
activations and all-gathers them before every column-parallel linear. Under the MXFP8 recipe
Transformer Engine gathers them already quantized (one byte per element plus block scales),
but only when the shard is quantizable: its last dim (hidden) and its row count (the tokens)
both multiples of 32, an MXFP8 scaling block. Otherwise it warns "Cannot quantize input
tensor. Performing all-gather in high precision." and moves twice the bytes in BF16 before
quantizing the gathered tensor: a slower all-gather on every layer, forward and backward.

The rule runs for Megatron-style training configs with ``sequence_parallel`` under
``--fp8-recipe mxfp8`` on Transformer Engine at tensor parallel above 1. No estimate: the
performance model has no cost for tensor-parallel communication.

Source: TransformerEngine commit d0067d0d (2.20.0.dev0) ``transformer_engine/pytorch/
distributed.py:1527, 1568-1575`` (``_all_gather_mxfp8``: the high-precision fallback),
``tensor/mxfp8_tensor.py:125-133`` (``is_quantizable``), ``constants.py:175``
(``MXFP8_BLOCK_SCALING_SIZE = 32``), ``module/layernorm_linear.py:174, 308-313`` (the
sequence-parallel all-gather of the norm output).
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.hardware.engines import titles
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import engines_for, mxfp8_sequence_shard

RULE = Rule(
    code="SL330",
    name="te-mxfp8-gather-high-precision",
    severity="warning",
    summary="Transformer Engine all-gathers MXFP8 sequence-parallel shards in BF16 when their "
    "tokens or hidden size are not multiples of 32",
    source="TransformerEngine 2.20.0.dev0: transformer_engine/pytorch/distributed.py",
    family="engine",
    uses_micro_batch=True,
)

VERIFIED = {
    "transformer-engine": "transformer_engine/pytorch/distributed.py:1527, 1568-1575; "
    "tensor/mxfp8_tensor.py:125-133; constants.py:175; module/layernorm_linear.py:174, 308-313",
}

BLOCK = 32


def _megatron(seq: int, hidden: int = 4096) -> str:
    """A Megatron-LM functional-test model_config.yaml at TP 8 with sequence parallelism."""
    return (
        f"MODEL_ARGS:\n  --num-layers: 32\n  --hidden-size: {hidden}\n"
        "  --ffn-hidden-size: 14336\n  --num-attention-heads: 32\n"
        f"  --seq-length: {seq}\n  --micro-batch-size: 1\n"
        "  --tensor-model-parallel-size: 8\n  --sequence-parallel: true\n  --bf16: true\n"
        "  --fp8-format: hybrid\n  --fp8-recipe: mxfp8\n"
    )


EXAMPLES = [
    Example(_megatron(4096), True, format="yaml", note="4096 / 8 = 512 tokens per GPU"),
    Example(
        _megatron(4160),
        False,
        format="yaml",
        note="4160 / 8 = 520 tokens per GPU, 16·32 + 8",
        expect=(Expect(6, "4160", "Cannot quantize input tensor. Performing all-gather in high"),),
    ),
]


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the sequence length (or hidden size) when the MXFP8 all-gather falls back."""
    engines = engines_for(target, VERIFIED)
    found = mxfp8_sequence_shard(config, target) if engines else None
    sp = config.get(Dim.SEQUENCE_PARALLEL)
    if found is None or sp is None:
        return
    shard, split, h = found.tokens, found.split, config.int(Dim.HIDDEN)
    seq = config.get(Dim.SEQ_LEN) if config.int(Dim.SEQ_LEN) == target.seq_len else None
    hidden = config.get(Dim.HIDDEN)
    if shard % BLOCK:
        at, why = seq or sp, f"{shard} tokens per GPU"
    elif h and hidden is not None and h % BLOCK:
        at, why = hidden, f"hidden size {h}"
    else:
        return
    yield RULE.finding(
        config,
        at,
        f'"Cannot quantize input tensor. Performing all-gather in high precision.": {why} '
        f"(micro-batch {target.micro_batch} × sequence {target.seq_len} over {split}) is not a "
        f"multiple of the MXFP8 block of {BLOCK}, so every sequence-parallel all-gather moves "
        f"BF16 instead of MXFP8 (in {titles(engines)}); no estimate (the model has no cost for "
        "tensor-parallel communication)",
    )
