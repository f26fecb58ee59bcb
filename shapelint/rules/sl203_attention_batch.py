"""Attention's batch of heads does not split evenly over the GPUs, or leaves most SMs idle.

Guideline: attention runs one batched product per micro-batch sample and head. Under tensor
parallelism each of the t GPUs runs b·a/t of them; Anthony et al. recommend (b·a)/t be an
integer, since otherwise the GPUs get unequal shares (and Megatron-style splits refuse it). And
the batch must be large enough to fill the GPU: flash-attention launches one thread block per
(sample, head, block of 128 queries), b·(a/t)·⌈s/128⌉ in all; an unfused implementation runs
QKᵀ as a batched GEMM whose tiles are scheduled in waves over the SMs. Fewer thread blocks than
SMs leave SMs idle for the whole kernel.

(b·a)/t can only fail to be an integer when the heads do not divide by t, which SL005 reports
as an error; this rule then stays silent (one finding per fact). It reports — in training and
prefill — attention parallelism below 0.75 of the SM count
(the same "a quarter idle" bar as SL202): flash thread blocks as above, or the unfused QKᵀ
GEMM's tiles from the performance model. It needs a stated micro-batch, tensor-parallel
size or training sequence length to point at (in that order); heads alone are not enough,
since b and s would then be defaults shapelint chose, not the user's. When the finding points
at the micro-batch, the fix raises it to the smallest value that gives every SM a thread block,
keeping the global batch where the file allows (see SL202); otherwise there is no fix.

Source: Anthony et al. 2024, "The Case for Co-Designing Model Architectures with Hardware"
((b·a)/t an integer); flash-attention's launch grid (one block per batch, head and 128-query
block); NVIDIA "Matrix Multiplication Background" guide (waves).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace

from shapelint.core.model import Dim, Finding, ModelConfig, Target, Value
from shapelint.perf.estimate import op_time
from shapelint.perf.workload import step_gemms
from shapelint.rules.base import Example, Expect, Rule, describe
from shapelint.rules.batching import (
    keeps_global_batch,
    micro_batch_fix,
    stated_micro_batch,
    stated_tp,
    training_seq,
)

RULE = Rule(
    code="SL203",
    name="attention-batch",
    severity="warning",
    summary="(b·a)/t not an integer, or attention's parallelism far below the SM count",
    source="Anthony et al. 2024; flash-attention launch grid; NVIDIA matmul guide",
    family="batching",
    uses_micro_batch=True,
)

FILL_THRESHOLD = 0.75  # report below this fraction of the SMs
FLASH_BLOCK_M = 128  # query rows per flash-attention thread block
_MAX_FACTOR = 64  # the fix looks for a micro-batch at most this many times the stated one

_HF = (
    '{"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,'
    ' "vocab_size": 50304, "tensor_parallel_size": %d}\n'
)
_NEOX = """\
# GPT-NeoX 125M, tensor parallel 4, short sequences
{
  "pipe_parallel_size": 1,
  "model_parallel_size": 4,
  "num_layers": 12,
  "hidden_size": 768,
  "num_attention_heads": 12,
  "seq_length": 512,
  "train_micro_batch_size_per_gpu": %d,
  "gradient_accumulation_steps": %d,
}
"""

EXAMPLES = [
    Example(_HF % 2, True),
    Example(_NEOX % (16, 2), True, format="yaml"),
    Example(
        _HF % 8,
        True,
        note="12 heads over 8 GPUs: SL005's error, not restated here",
    ),
    Example(
        _NEOX % (2, 16),
        False,
        format="yaml",
        fixed=_NEOX % (16, 2),
        note="2·(12/4)·⌈512/128⌉ = 24 thread blocks on 132 SMs",
        expect=(
            Expect(9, "2", "attention runs b·(a/t)·⌈s/128⌉ = 2·3·4 = 24 flash-attention thread"),
        ),
    ),
]


def _flash_blocks(b: int, heads: int, s: int) -> int:
    return b * heads * math.ceil(s / FLASH_BLOCK_M)


def _unfused_tiles(config: ModelConfig, target: Target) -> int | None:
    for g in step_gemms(config, target):
        if g.name == "attn_scores" and g.pass_ == "fwd":
            return op_time(g, target.gpu).tiles
    return None


def _parallelism(config: ModelConfig, target: Target, heads: int) -> tuple[int, str] | None:
    """How many thread blocks (flash) or tiles (unfused QKᵀ) attention runs, and what."""
    b, s = target.micro_batch, target.seq_len
    if target.attention != "unfused":
        blocks = _flash_blocks(b, heads, s)
        return blocks, (
            f"b·(a/t)·⌈s/{FLASH_BLOCK_M}⌉ = {b}·{heads}·{math.ceil(s / FLASH_BLOCK_M)} = "
            f"{blocks} flash-attention thread blocks"
        )
    tiles = _unfused_tiles(config, target)
    if tiles is None:
        return None
    return tiles, f"{tiles} tiles in the batched QKᵀ GEMM (b·a/t = {b * heads} matrices)"


def _fix_micro_batch(config: ModelConfig, target: Target, heads: int) -> int | None:
    """The smallest micro-batch that fills the SMs, preferring one that keeps the global batch."""
    b, sms = target.micro_batch, target.gpu.sms
    fills: list[int] = []
    for new_b in range(b + 1, b * _MAX_FACTOR + 1):
        moved = replace(target, micro_batch=new_b)
        found = _parallelism(config, moved, heads)
        if found is not None and found[0] >= sms:
            fills.append(new_b)
            if keeps_global_batch(config, b, new_b) or len(fills) > 4 * b:
                break
    keeping = [c for c in fills if keeps_global_batch(config, b, c)]
    return keeping[0] if keeping else (fills[0] if fills else None)


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report attention launching too few blocks for the SMs (silent where SL005 errs)."""
    a = config.int(Dim.HEADS)
    if a is None:
        return
    t, gpu = max(1, target.tp), target.gpu
    micro, tp = stated_micro_batch(config, target), stated_tp(config, target)
    if t > 1 and a % t:
        # (b·a)/t is then not an integer for some b, and the config cannot run at all:
        # SL005 reports the heads as an error; restating it here would be a second finding
        # for one fact.
        return
    if target.mode == "decode":
        return
    anchor: Value | None = micro or tp or training_seq(config, target)
    if anchor is None:
        return
    heads = -(-a // t)
    found = _parallelism(config, target, heads)
    if found is None or found[0] >= FILL_THRESHOLD * gpu.sms:
        return
    count, what = found
    message = (
        f"attention runs {what} on {gpu.name}'s {gpu.sms} SMs: {1 - count / gpu.sms:.0%} of "
        f"the SMs idle during attention (at {describe(anchor)})"
    )
    fix = None
    if micro is not None:
        new_b = _fix_micro_batch(config, target, heads)
        if new_b is not None:
            fix = micro_batch_fix(config, micro, new_b, "one attention block per SM")
    yield RULE.finding(config, anchor, message, fix=fix)
