"""The tensor-parallel size splits the GEMMs so small that their efficiency collapses.

Guideline: Megatron-style tensor parallelism divides the N dimension of the QKV and MLP-up
GEMMs and the K dimension of the output and MLP-down GEMMs by t. Each GPU's GEMMs shrink with
t while their launch and per-tile costs do not, and past some t the tiles no longer fill the
SMs: each GPU then does its share of the work at a fraction of the throughput it reaches on
the whole model. Anthony et al. recommend t "as small as possible".

The rule compares the step's modelled throughput per GPU (its FLOPs over its time, GEMMs only)
at the target's t with that at t = 1, and reports when it is below 0.75 — each GPU losing a
quarter of its GEMM throughput to the split, before any communication cost, which the model
leaves out and which only makes a large t worse. It names the largest t' < t (a divisor of t
that divides the heads) that stays at or above 0.75. It runs only when t > 1, in training and
prefill (decode is memory-bound, and there t buys latency and bandwidth), and points at the
stated tensor-parallel size, else at the stated hidden size (the model is too narrow for the
t a flag or setting chose); with neither stated it is not reported.

There is no fix. A smaller t raises each GPU's share of the weights, gradients, optimizer
state and activations by t/t', which a static linter cannot check against the GPU's memory,
and it changes the parallel layout (data-parallel replicas, often the pipeline split and the
launch command) beyond the value in this file: a decision to make, not an edit to apply.
Without a fix there is no slowdown number, only the reason and the throughput figures.

Source: Anthony et al. 2024, "The Case for Co-Designing Model Architectures with Hardware"
(t as small as possible); Shoeybi et al. 2019, "Megatron-LM" (the split of each GEMM).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.perf.estimate import StepEstimate, cached_step_time
from shapelint.rules.base import Example, Expect, Rule, describe
from shapelint.rules.batching import stated, stated_tp

RULE = Rule(
    code="SL205",
    name="tensor-parallel-too-large",
    severity="warning",
    summary="tensor-parallel size so large that each GPU's GEMMs lose their efficiency",
    source="Anthony et al. 2024; Megatron-LM (Shoeybi et al. 2019)",
    family="batching",
)

EFFICIENCY_THRESHOLD = 0.75  # per-GPU throughput at t relative to t = 1

_HF = (
    '{"hidden_size": %d, "num_attention_heads": %d, "num_hidden_layers": 24,'
    ' "intermediate_size": %d, "vocab_size": 50304, "tensor_parallel_size": 8}\n'
)

EXAMPLES = [
    Example(_HF % (5120, 40, 13824), True, note="a 13B-class model at t = 8"),
    Example(
        _HF % (1024, 16, 4096),
        False,
        target={"seq_len": 2048},
        note="a 350M-class model split eight ways",
        expect=(Expect(1, "8", "at tensor parallel 8 each GPU's GEMMs reach"),),
    ),
]


def _tflops(step: StepEstimate) -> float:
    # The compute of the step (its GEMMs and memory-bound ops): the collectives and the
    # pipeline bubble the step also counts are left out, as the message says.
    busy = step.gemm_s + step.memops_s
    return step.flops / busy / 1e12 if busy > 0 else 0.0


# Trial division stops here (a t past a million is no real tensor-parallel size, but a flag
# or a file may say 2**63: the search must still end in milliseconds).
_MAX_TRIAL = 1 << 20


def _common_divisors(t: int, heads: int) -> list[int]:
    """The sizes below ``t`` that divide both ``t`` and ``heads`` (each a tensor-parallel
    size the heads split over), largest first; trial division up to `_MAX_TRIAL`, with each
    divisor's cofactor."""
    g = math.gcd(t, heads)
    found: set[int] = set()
    for d in range(1, min(math.isqrt(g), _MAX_TRIAL) + 1):
        if g % d == 0:
            found.update((d, g // d))
    return sorted((d for d in found if 1 < d < t), reverse=True)


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report a t whose per-GPU GEMM throughput is far below that of one GPU."""
    t = target.tp
    if t <= 1 or target.mode == "decode":
        return
    anchor = stated_tp(config, target) or stated(config, Dim.HIDDEN)
    if anchor is None:
        return
    single = _tflops(cached_step_time(config, replace(target, tp=1)))
    if single <= 0:
        return
    at_t = _tflops(cached_step_time(config, target))
    ratio = at_t / single
    if ratio >= EFFICIENCY_THRESHOLD:
        return
    heads = config.int(Dim.HEADS) or 1
    keeps, kept = 1, 1.0
    for smaller in _common_divisors(t, heads):
        kept = _tflops(cached_step_time(config, replace(target, tp=smaller))) / single
        if kept >= EFFICIENCY_THRESHOLD:
            keeps = smaller
            break
    else:
        kept = 1.0
    gpu = target.gpu
    message = (
        f"at tensor parallel {t} each GPU's GEMMs reach {at_t:.3g} TFLOP/s on {gpu.name}, "
        f"{ratio:.0%} of the {single:.3g} TFLOP/s one GPU reaches on the whole model (below "
        f"{EFFICIENCY_THRESHOLD:.0%}; communication not counted); tensor parallel "
        f"{keeps} keeps {kept:.0%} (at {describe(anchor)})"
    )
    yield RULE.finding(config, anchor, message)
