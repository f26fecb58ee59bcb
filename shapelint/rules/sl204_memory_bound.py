"""The step's projection GEMMs are memory-bound at this micro-batch.

Guideline: a GEMM whose arithmetic intensity (FLOPs per byte moved) is below the GPU's ridge
point (peak FLOP/s over memory bandwidth) cannot reach the Tensor Cores' rate however well it
is tiled: it waits for memory. A projection GEMM multiplies the tokens of a micro-batch (M)
by a weight matrix (K × N); its intensity grows with M, so a small micro-batch — above all in
decode, where M is the batch itself — streams every weight from memory for a handful of rows.
Anthony et al. recommend a micro-batch "as large as possible"; NVIDIA's guide explains the
roofline and the ridge point.

The rule reports when memory-bound calls — arithmetic intensity below the ridge point at the
GPU's achievable rates, the roofline's definition — take more than half of the projection
GEMMs' time (QKV, attention output, MLP, experts, logits). It gives the projections' combined
intensity (their FLOPs over their bytes), the largest memory-bound GEMM and its intensity, the
ridge point, and the smallest micro-batch at which at most half of the projection time is
below the ridge (searched upward with the model, up to 65,536). The finding points at the
stated micro-batch, else the stated training sequence length (not in decode), else the stated
tensor-parallel size (which narrows every GEMM); with none of them stated it is not reported.
Only a stated micro-batch gets a fix (the micro-batch found, keeping the global batch where
the file allows, see SL202 — usually unsafe, since it grows much); without one there is no
fix and so no slowdown number, only the reason.

Source: NVIDIA "Matrix Multiplication Background" guide (arithmetic intensity, roofline);
Williams et al. 2009, "Roofline"; Anthony et al. 2024 (micro-batch as large as possible).
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Finding, ModelConfig, Target, Value
from shapelint.perf.estimate import StepEstimate
from shapelint.rules.base import Example, Expect, Rule, describe
from shapelint.rules.batching import (
    MEMORY_BOUND_SHARE,
    PROJECTIONS,
    memory_bound_share,
    micro_batch_fix,
    stated_micro_batch,
    stated_tp,
    step_at,
    training_seq,
)

RULE = Rule(
    code="SL204",
    name="memory-bound",
    severity="warning",
    summary="projection GEMMs memory-bound at this micro-batch (below the roofline ridge)",
    source="NVIDIA matmul guide (roofline); Anthony et al. 2024",
    family="batching",
)

MAX_MICRO_BATCH = 65536

_NEOX = """\
# GPT-NeoX 1.3B
{
  "pipe_parallel_size": 1,
  "model_parallel_size": 1,
  "num_layers": 24,
  "hidden_size": 2048,
  "num_attention_heads": 16,
  "seq_length": 2048,
  "train_micro_batch_size_per_gpu": %d,
}
"""

EXAMPLES = [
    Example(_NEOX % 4, True, format="yaml"),
    Example(_NEOX % 512, True, format="yaml", target={"mode": "decode"}),
    Example(
        _NEOX % 4,
        False,
        format="yaml",
        target={"mode": "decode"},
        fixed=_NEOX % 336,
        note="decoding 4 sequences at a time streams every weight for 4 rows",
        expect=(
            Expect(9, "4", "at micro-batch 4 (4 tokens per GEMM, decode) 100% of the projection"),
        ),
    ),
]


def projection_intensity(step: StepEstimate) -> float:
    """The projection GEMMs' combined arithmetic intensity: their FLOPs over their bytes."""
    projections = [e for e in step.gemms if e.gemm.name in PROJECTIONS]
    nbytes = sum(e.time.bytes * e.gemm.count for e in projections)
    flops = sum(e.time.flops * e.gemm.count for e in projections)
    return flops / nbytes if nbytes > 0 else 0.0


def ridge_micro_batch(config: ModelConfig, target: Target) -> int | None:
    """The smallest micro-batch above the target's at which at most half the projection time
    is below the ridge (doubling, then bisecting: each GEMM's intensity grows with the
    tokens); None when no micro-batch up to `MAX_MICRO_BATCH` gets there."""

    def reaches(b: int) -> bool:
        return memory_bound_share(step_at(config, target, b)) <= MEMORY_BOUND_SHARE

    low = max(1, target.micro_batch)
    if low >= MAX_MICRO_BATCH or not reaches(MAX_MICRO_BATCH):
        return None
    high = low * 2
    while not reaches(high):
        low, high = high, min(high * 2, MAX_MICRO_BATCH)
    while high - low > 1:
        mid = (low + high) // 2
        if reaches(mid):
            high = mid
        else:
            low = mid
    return high


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report memory-bound projection GEMMs and the micro-batch that reaches the ridge."""
    micro = stated_micro_batch(config, target)
    seq = training_seq(config, target) if target.mode != "decode" else None
    anchor: Value | None = micro or seq or stated_tp(config, target)
    if anchor is None:
        return
    step = step_at(config, target, target.micro_batch)
    share = memory_bound_share(step)
    if share <= MEMORY_BOUND_SHARE:
        return
    bound = [
        e for e in step.gemms if e.gemm.name in PROJECTIONS and e.time.intensity < e.time.ridge
    ]
    worst = max(bound, key=lambda e: e.total_s)
    b = target.micro_batch
    tokens = b if target.mode == "decode" else b * target.seq_len
    gpu = target.gpu
    ridge = worst.time.ridge
    intensity = projection_intensity(step)
    ridge_b = ridge_micro_batch(config, target)
    if ridge_b is not None:
        reach = f"micro-batch {ridge_b} brings most of them to the ridge"
    else:
        reach = f"no micro-batch up to {MAX_MICRO_BATCH} does: the layers are too narrow"
    message = (
        f"at micro-batch {b} ({tokens} tokens per GEMM, {target.mode}) {share:.0%} of the "
        f"projection GEMMs' time on {gpu.name} is in memory-bound calls: together they do "
        f"{intensity:.0f} FLOP/byte against a ridge point of {ridge:.0f} FLOP/byte "
        f"({target.dtype}, peak over bandwidth at achievable rates); the largest of them, "
        f"{worst.gemm.name} {worst.gemm.pass_} (M×N×K = {worst.gemm.m}×{worst.gemm.n}×"
        f"{worst.gemm.k}), does {worst.time.intensity:.0f}; {reach} (at {describe(anchor)})"
    )
    fix = None
    if micro is not None and ridge_b is not None:
        fix = micro_batch_fix(config, micro, ridge_b, "reaches the roofline ridge")
    yield RULE.finding(config, anchor, message, fix=fix)
