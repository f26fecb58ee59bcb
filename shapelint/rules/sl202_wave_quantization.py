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
from dataclasses import dataclass, replace

from shapelint.lint.model import Dim, Finding, Fix, ModelConfig, Target, Value
from shapelint.perf.estimate import StepEstimate, cached_step_time, tokens_per_gpu
from shapelint.rules.base import Example, Rule, describe, make_fix

RULE = Rule(
    code="SL202",
    name="wave-quantization",
    severity="warning",
    summary="micro-batch leaves the last wave of the step's GEMMs mostly idle (SM count)",
    source="NVIDIA matmul guide (wave quantization); Anthony et al. 2024",
)

WAVE_THRESHOLD = 0.75  # time-weighted wave efficiency below which the rule reports
MIN_GAIN = 0.01  # a candidate micro-batch must cut the time per token by more than this
NEAR_BEST = 0.005  # candidates this close to the best count as equally good
MAX_CANDIDATES = 32
MEMORY_BOUND_SHARE = 0.5  # above this share of projection time below the ridge, SL204 speaks

# Keys that hold a model's maximum context, not the sequence length a run trains at.
_MAX_CONTEXT_KEYS = frozenset({"max_position_embeddings", "n_positions"})
# Dialects whose ``block_size`` is the maximum context (LitGPT trains at train.max_seq_length).
_BLOCK_SIZE_IS_CONTEXT = frozenset({"litgpt", "gpt-fast"})
# The GEMMs of the linear layers (the ones whose M dimension is the tokens).
PROJECTIONS = frozenset(
    {
        "qkv",
        "attn_out",
        "mlp_up",
        "mlp_gate",
        "mlp_down",
        "router",
        "experts_up",
        "experts_down",
        "logits",
    }
)

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


def stated(config: ModelConfig, dim: Dim) -> Value | None:
    """The value of ``dim`` when the file writes it as a known positive integer."""
    value = config.get(dim)
    if value is None or value.derived or not value.known:
        return None
    n = value.as_int
    return value if n is not None and n > 0 else None


def stated_micro_batch(config: ModelConfig, target: Target) -> Value | None:
    """The micro-batch the file states, when the target runs it (no flag overrides it)."""
    value = stated(config, Dim.MICRO_BATCH)
    return value if value is not None and value.as_int == target.micro_batch else None


def stated_tp(config: ModelConfig, target: Target) -> Value | None:
    """The tensor-parallel size the file states, when the target runs it."""
    value = stated(config, Dim.TP)
    return value if value is not None and value.as_int == target.tp else None


def training_seq(config: ModelConfig, target: Target) -> Value | None:
    """The sequence length a run trains at, when the file states it and the target runs it;
    None for a model's maximum context (HF ``max_position_embeddings``, LitGPT ``block_size``)."""
    value = stated(config, Dim.SEQ_LEN)
    if value is None or config.seq_is_max_context or value.as_int != target.seq_len:
        return None
    leaf = value.key.rsplit(".", 1)[-1].replace("-", "_")
    if leaf in _MAX_CONTEXT_KEYS:
        return None
    if leaf == "block_size" and config.dialect in _BLOCK_SIZE_IS_CONTEXT:
        return None
    return value


def keeps_global_batch(config: ModelConfig, b: int, new_b: int) -> bool:
    """Whether micro-batch ``new_b`` can keep the global batch the file states: through its
    gradient accumulation (b·g divisible by b'), or a global batch that b' divides."""
    accum = stated(config, Dim.GRAD_ACCUM)
    if accum is not None:
        return (b * (accum.as_int or 1)) % new_b == 0
    global_batch = stated(config, Dim.GLOBAL_BATCH)
    return global_batch is not None and (global_batch.as_int or 1) % new_b == 0


def micro_batch_fix(config: ModelConfig, micro: Value, new_b: int, reason: str) -> Fix | None:
    """Set the micro-batch to ``new_b``, keeping the global batch where `keeps_global_batch`
    allows (safe: the gradient accumulation is rescaled, or the framework derives it from the
    stated global batch); otherwise the micro-batch alone, unsafe (the global batch changes)."""
    b = micro.as_int or 1
    accum = stated(config, Dim.GRAD_ACCUM)
    if accum is not None and keeps_global_batch(config, b, new_b):
        g = accum.as_int or 1
        new_g = b * g // new_b
        return make_fix(
            config,
            f"set {micro.key} to {new_b} and {accum.key} to {new_g} ({reason}; "
            f"global batch {b}·{g} = {new_b}·{new_g} kept)",
            [(micro, new_b), (accum, new_g)],
            architecture=False,
            dims=[(Dim.MICRO_BATCH, new_b), (Dim.GRAD_ACCUM, new_g)],
        )
    if accum is None and keeps_global_batch(config, b, new_b):
        return make_fix(
            config,
            f"set {micro.key} to {new_b} ({reason}; the stated global batch is kept)",
            [(micro, new_b)],
            architecture=False,
            dims=[(Dim.MICRO_BATCH, new_b)],
        )
    return make_fix(
        config,
        f"set {micro.key} to {new_b} ({reason}; unsafe: the global batch changes)",
        [(micro, new_b)],
        architecture=True,
        dims=[(Dim.MICRO_BATCH, new_b)],
    )


def step_at(config: ModelConfig, target: Target, micro_batch: int) -> StepEstimate:
    """The (cached) step estimate of ``config`` at another micro-batch."""
    return cached_step_time(config, replace(target, micro_batch=micro_batch))


def time_per_token(config: ModelConfig, target: Target, micro_batch: int) -> float:
    """Modelled step time per token per GPU at ``micro_batch`` (0 when nothing is modelled)."""
    moved = replace(target, micro_batch=micro_batch)
    return cached_step_time(config, moved).total_s / tokens_per_gpu(moved)


def memory_bound_share(step: StepEstimate) -> float:
    """The share of the projection GEMMs' time spent in calls whose arithmetic intensity is
    below the ridge point (memory-bound by the roofline, however the tiles fall)."""
    projections = [e for e in step.gemms if e.gemm.name in PROJECTIONS]
    total = sum(e.total_s for e in projections)
    if total <= 0:
        return 0.0
    below = sum(e.total_s for e in projections if e.time.intensity < e.time.ridge)
    return below / total


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


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report a stated micro-batch whose GEMMs' last waves leave SMs idle, with the nearest
    micro-batch that lowers the time per token."""
    micro = stated_micro_batch(config, target)
    if micro is None:
        return
    b = target.micro_batch
    step = step_at(config, target, b)
    if step.total_s <= 0 or memory_bound_share(step) > MEMORY_BOUND_SHARE:
        return
    eff = wave_efficiency(step)
    if eff is None or eff >= WAVE_THRESHOLD:
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
        f"efficiency of {eff:.2f} (below {WAVE_THRESHOLD}): their last waves leave SMs idle. "
        f"Micro-batch {best.micro_batch} raises it to {best.wave_efficiency:.2f} and cuts the "
        f"modelled time per token by {1 - best.per_token_s / now:.0%}"
    )
    fix = micro_batch_fix(config, micro, best.micro_batch, "fills the GEMM waves")
    yield RULE.finding(config, micro, message, fix=fix)
