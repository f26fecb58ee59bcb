"""What the batch and parallelism rules (SL201–SL205) share.

They report only on values a file states (a finding needs a place to point at) and only when
no command-line flag overrides them; their fixes change the micro-batch while keeping the
global batch where the file allows; and they read the same cached step estimates.
"""

from __future__ import annotations

from dataclasses import replace

from shapelint.core.model import Dim, Fix, ModelConfig, Target, Value
from shapelint.perf.estimate import StepEstimate, cached_step_time, tokens_per_gpu
from shapelint.rules.base import make_fix

MEMORY_BOUND_SHARE = 0.5  # above this share of projection time below the ridge, SL204 speaks

# Keys that hold a model's maximum context, not the sequence length a run trains at.
_MAX_CONTEXT_KEYS = frozenset({"max_position_embeddings", "n_positions"})
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
    if leaf in config.traits.context_keys:
        return None  # the framework's maximum context (LitGPT's ``block_size``)
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
