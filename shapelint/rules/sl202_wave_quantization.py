"""The micro-batch leaves the last wave of the step's GEMMs mostly idle.

Guideline: a GEMM's output is cut into thread-block tiles that run in waves of one tile per
SM (132 on H100 SXM, 108 on A100). When the tile count is just above a multiple of the SM
count, the last wave runs a few tiles while the other SMs wait: 133 tiles on 132 SMs take as
long as 264. The tokens of a micro-batch (b·s) are the M dimension of every projection GEMM,
so the micro-batch decides the tile counts; Anthony et al. recommend a micro-batch "as large
as possible" and NVIDIA's guide shows the sawtooth that wave quantization draws.

The rule reports the time-weighted wave efficiency (tiles / (waves × SMs)) of the step's
compute-bound GEMMs when it is below 0.75 — a quarter of the SM time in those GEMMs idle —
and a micro-batch within a factor of two of the stated one (so activation memory at most
doubles) that lowers the modelled time per token by more than 1% and raises the wave
efficiency. Among candidates within 0.5% of the best time per token the one nearest the stated
micro-batch wins. Memory-bound steps are left to SL204: their wave efficiency costs nothing.

The fix keeps the global batch where the file allows: with a gradient-accumulation value
(b·g = b'·g', both edited) or a global batch that b' divides (the framework derives the
accumulation), the fix is safe; otherwise it edits the micro-batch alone and is unsafe, since
the global batch — an optimization hyperparameter — changes. The rule runs only when the file
states the micro-batch (a finding needs a value to point at) and no flag overrides it.

Source: NVIDIA "Matrix Multiplication Background" guide (wave quantization); Anthony et al.
2024, "The Case for Co-Designing Model Architectures with Hardware" (micro-batch as large as
possible).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from shapelint.core.model import Finding, ModelConfig, Target
from shapelint.perf.estimate import StepEstimate, tokens_per_gpu
from shapelint.rules.base import Example, Expect, Rule, describe
from shapelint.rules.batching import (
    MEMORY_BOUND_SHARE,
    keeps_global_batch,
    memory_bound_share,
    micro_batch_fix,
    stated_micro_batch,
    step_at,
    time_per_token,
)

RULE = Rule(
    code="SL202",
    name="wave-quantization",
    severity="warning",
    summary="micro-batch leaves the last wave of the step's GEMMs mostly idle (SM count)",
    source="NVIDIA matmul guide (wave quantization); Anthony et al. 2024",
    family="batching",
    uses_micro_batch=True,
)

WAVE_THRESHOLD = 0.75  # time-weighted wave efficiency below which the rule reports
MIN_GAIN = 0.01  # a candidate micro-batch must cut the time per token by more than this
NEAR_BEST = 0.005  # candidates this close to the best count as equally good
MAX_CANDIDATES = 32


@dataclass(frozen=True)
class Options:
    """What a team may tune (``[tool.shapelint.rules.SL202]``)."""

    wave_threshold: float = field(
        default=WAVE_THRESHOLD,
        metadata={
            "min": 0.0,
            "max": 1.0,
            "doc": "the time-weighted wave efficiency below which the rule reports",
        },
    )


OPTIONS = Options()

_NEOX = """\
# GPT-NeoX: a 350M-class model trained at short sequences
{
  "pipe_parallel_size": 1,
  "model_parallel_size": 1,
  "num_layers": 24,
  "hidden_size": 768,
  "num_attention_heads": 12,
  "seq_length": 256,
  "train_micro_batch_size_per_gpu": %d,
  "gradient_accumulation_steps": %d,
}
"""

EXAMPLES = [
    Example(_NEOX % (8, 4), True, format="yaml"),
    Example(
        _NEOX % (3, 8),
        False,
        format="yaml",
        fixed=_NEOX % (6, 4),
        note="b·s = 768 tokens: the last waves of the small GEMMs run nearly empty",
        expect=(
            Expect(9, "3", "micro-batch train_micro_batch_size_per_gpu (3) gives 768 tokens per"),
        ),
    ),
    Example(
        '{"train_micro_batch_size_per_gpu": 1, "train_batch_size": 256,'
        ' "zero_optimization": {"stage": 1}}\n',
        True,
        target={"seq_len": 128},
        note="a DeepSpeed config states only the batch; the model comes from elsewhere, so "
        "there are no GEMMs to estimate and nothing is reported",
    ),
]


# --- Helpers shared by the SL2xx rules ----------------------------------------------------


def wave_efficiency(step: StepEstimate) -> float | None:
    """Time-weighted wave efficiency of the step's compute-bound GEMMs (None: there are none)."""
    busy = [e for e in step.gemms if e.time.bound == "compute"]
    total = sum(e.total_s for e in busy)
    if total <= 0:
        return None
    return sum(e.time.wave_efficiency * e.total_s for e in busy) / total


def candidates(b: int) -> list[int]:
    """Micro-batches within a factor of two of ``b`` (at most `MAX_CANDIDATES`, spread
    geometrically when the range is wider), ``b`` excluded."""
    lo, hi = max(1, (b + 1) // 2), 2 * b
    if hi - lo + 1 <= MAX_CANDIDATES:
        values = set(range(lo, hi + 1))
    else:
        steps = MAX_CANDIDATES // 2
        values = {round(b * 2 ** (i / steps)) for i in range(-steps, steps + 1)}
    values.discard(b)
    return sorted(v for v in values if lo <= v <= hi)


# --- The rule -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
    micro_batch: int
    per_token_s: float
    wave_efficiency: float
    keeps_global: bool


def _best(pool: list[_Candidate], b: int) -> _Candidate | None:
    if not pool:
        return None
    fastest = min(c.per_token_s for c in pool)
    near = [c for c in pool if c.per_token_s <= fastest * (1 + NEAR_BEST)]
    return min(near, key=lambda c: (abs(c.micro_batch - b), c.micro_batch))


def check(config: ModelConfig, target: Target, options: Options = OPTIONS) -> Iterator[Finding]:
    """Report a stated micro-batch whose GEMMs' last waves leave SMs idle (wave efficiency
    below ``options.wave_threshold``), with the nearest micro-batch that lowers the time per
    token."""
    threshold = options.wave_threshold
    micro = stated_micro_batch(config, target)
    if micro is None:
        return
    b = target.micro_batch
    step = step_at(config, target, b)
    if step.total_s <= 0 or memory_bound_share(step) > MEMORY_BOUND_SHARE:
        return
    eff = wave_efficiency(step)
    if eff is None or eff >= threshold:
        return
    now = time_per_token(config, target, b)
    better: list[_Candidate] = []
    for new_b in candidates(b):
        per_token = time_per_token(config, target, new_b)
        new_eff = wave_efficiency(step_at(config, target, new_b))
        if new_eff is not None and new_eff > eff and per_token < now * (1 - MIN_GAIN):
            better.append(
                _Candidate(new_b, per_token, new_eff, keeps_global_batch(config, b, new_b))
            )
    best = _best([c for c in better if c.keeps_global], b) or _best(better, b)
    if best is None:
        return
    gpu = target.gpu
    tokens = int(tokens_per_gpu(target) * max(1, target.tp))
    message = (
        f"micro-batch {describe(micro)} gives {tokens} tokens per micro-batch; on {gpu.name} "
        f"({gpu.sms} SMs) the step's compute-bound GEMMs run at a time-weighted wave "
        f"efficiency of {eff:.2f} (below {threshold:g}): their last waves leave SMs idle. "
        f"Micro-batch {best.micro_batch} raises it to {best.wave_efficiency:.2f} and cuts the "
        f"modelled time per token by {1 - best.per_token_s / now:.0%}"
    )
    fix = micro_batch_fix(config, micro, best.micro_batch, "fills the GEMM waves")
    yield RULE.finding(config, micro, message, fix=fix)
