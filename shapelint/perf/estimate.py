"""Step time of a config on a target, and the slowdown a fix removes.

A finding's slowdown is always (step time as written / step time with the fix − 1) × 100, so
every rule's number comes from the same model and the same counterfactual (DESIGN.md).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from shapelint.core.dtypes import ELEMENT_BYTES
from shapelint.core.model import CAPACITY_DIMS, Dim, Estimate, Fix, ModelConfig, Target
from shapelint.hardware.gpus import GPU
from shapelint.perf.attention import attention_fraction
from shapelint.perf.gemm import CALIBRATION, GemmTime, achievable_bandwidth, gemm_time
from shapelint.perf.ops import MemOp, MemOpTime, memop_time, step_memops
from shapelint.perf.te_attention import engine_attention
from shapelint.perf.workload import Gemm, step_gemms

# Flash attention on a causal decoder skips the blocks above the diagonal: half the s² work
# (Megatron-LM counts causal attention as half, FACTS.md "The GEMMs of one transformer layer").
CAUSAL_FRACTION = 0.5


def window_share(s: int, window: int) -> float:
    """The share of a causal attention's (query, key) pairs a sliding window keeps: query i
    sees min(i + 1, window) keys, so w(w + 1)/2 + (s − w)·w pairs of the s(s + 1)/2."""
    if window <= 0 or window >= s:
        return 1.0
    pairs = window * (window + 1) / 2 + (s - window) * window
    return pairs / (s * (s + 1) / 2)


@dataclass(frozen=True)
class StepCalibration:
    """Whole-step constants that do not depend on the GPU, fitted on the fit rows of published
    training throughput (tests/perf/data/llm_foundry_mpt.csv; ``python
    benchmarks/step_calibration.py --fit`` refits them with the per-family ones, and
    tests/perf/test_perf_step_calibration.py checks that the refit gives these values back).

    The per-family constants fitted on the same rows sit in the GPU table
    (``shapelint/hardware/gpus.yaml``, ``families``) and reach the step through the GPU:
    ``step_sustained_fraction``, the fraction of the GEMM model's (best-case, isolated-kernel)
    compute rate that GEMMs sustain inside a whole training step (what clocks under sustained
    power, kernel gaps and communication running beside compute cost), and ``attention_scale``,
    the scale of a fused attention kernel's figure-derived rate (only llm-foundry's Triton
    kernel is fitted; fused attention is not scaled by the sustained fraction: it runs at the
    rate its papers measured, `shapelint.perf.attention`).

    ``recompute_cost`` is what activation checkpointing costs relative to running every
    layer's forward again (1.0 = a full extra forward): the published rows with checkpointing
    are faster than a full recompute would make them (selective and overlapped recompute).
    """

    recompute_cost: float = 1.0


STEP_CALIBRATION = StepCalibration(recompute_cost=0.507)


@dataclass(frozen=True)
class MemOpEstimate:
    """One memory-bound op of a step with the model's time for one call."""

    op: MemOp
    time: MemOpTime

    @property
    def total_s(self) -> float:
        """Exposed time of all ``count`` calls in one step."""
        return self.time.exposed_s * self.op.count


@dataclass(frozen=True)
class GemmEstimate:
    """One GEMM of a step with the model's time for one call."""

    gemm: Gemm
    time: GemmTime

    @property
    def total_s(self) -> float:
        """Time of all ``count`` calls in one step."""
        return self.time.time_s * self.gemm.count


@dataclass(frozen=True)
class StepEstimate:
    """The model's estimate of one step (per GPU): its GEMMs and its memory-bound ops.

    ``flops`` counts useful work (real head dims, causal attention at half; recomputation not
    counted), so ``mfu`` is model FLOPs over (time × dense peak of the target dtype).
    ``gemm_s`` and ``memops_s`` split ``total_s``.
    """

    gpu: str
    dtype: str
    mode: str
    total_s: float
    flops: float
    mfu: float
    gemms: tuple[GemmEstimate, ...]
    ops: tuple[MemOpEstimate, ...] = ()
    gemm_s: float = 0.0
    memops_s: float = 0.0
    # The attention the step timed: the target's, or the one its engines select.
    attention: str = ""


def _flash_time(g: Gemm, gpu: GPU) -> GemmTime:
    """A flash-attention kernel: its QKᵀ and P·V products (five products for the backward:
    QKᵀ recomputed, dP = dO·Vᵀ, dV = Pᵀ·dO, dQ = dS·K, dK = dSᵀ·Q) at the padded head dim,
    in one launch, reading Q, K, V (and O, dO) once, at the rate the kernel's papers measured
    for that pass, head dim and sequence length (`shapelint.perf.attention`)."""
    s, dp, batch, dt = g.m, g.k, g.batch, g.dtype
    products = 2 if g.pass_ in ("fwd", "recompute") else 5
    tensors = 4 if products == 2 else 8  # read Q, K, V; write O (bwd: + O, dO; dQ, dK, dV)
    head_dim = g.head_dim or dp
    # A sliding-window layer computes only the key blocks inside its window; its blocks run at
    # the rate the kernel reaches at this sequence length (no published sliding-window rates).
    flops = 2.0 * s * s * head_dim * batch * products * CAUSAL_FRACTION * window_share(s, g.window)
    work = flops * dp / head_dim
    # fp8 recipes run attention in bf16 (Transformer Engine's default).
    rate_dtype = "bf16" if dt == "fp8" else dt
    fraction = attention_fraction(
        g.kernel or "flash2", gpu.attention_figures, "fwd" if products == 2 else "bwd", dp, s
    )
    compute = work / (fraction * gpu.peak(rate_dtype) * 1e12)
    nbytes = float(tensors * batch * s * head_dim * ELEMENT_BYTES[dt])
    memory = nbytes / achievable_bandwidth(gpu)
    launch = CALIBRATION.launch_s
    time_s = launch + max(compute, memory)
    ideal = flops / gpu.achievable_flops(dt)
    # The tiles of the QKᵀ product, for the report; what the kernel loses against the GEMM
    # model's achievable rate (head-dim padding included) is its tile loss.
    first = gemm_time(s, s, dp, gpu=gpu, dtype=dt, batch=batch)
    return GemmTime(
        time_s=time_s,
        flops=flops,
        bytes=nbytes,
        intensity=flops / nbytes,
        ridge=first.ridge,
        bound="compute" if compute >= memory else "memory",
        tflops=flops / time_s / 1e12,
        tile=first.tile,
        split_k=first.split_k,
        tiles=first.tiles,
        waves=first.waves,
        wave_efficiency=first.wave_efficiency,
        tile_efficiency=min(1.0, ideal / compute) if compute > 0 else 1.0,
        align_factor=1.0,
        compute_s=compute,
        memory_s=memory,
        launch_s=launch,
        ideal_s=ideal,
        lost_tiles_s=max(0.0, compute - ideal),
        lost_waves_s=0.0,
        lost_alignment_s=0.0,
    )


# GEMM timings of this run, by GPU object and shape: a config's fixes, its other GPUs and the
# configs that share layer shapes ask for the same GEMMs again. Like `_STEP_CACHE`, an entry
# keeps its GPU, so the id in the key cannot be reused by another object while it lives.
_GEMM_CACHE_LIMIT = 65536
_GEMM_CACHE: dict[tuple[object, ...], tuple[GPU, GemmTime]] = {}


def op_time(g: Gemm, gpu: GPU) -> GemmTime:
    """The model's time for one call of ``g`` on ``gpu``."""
    if g.kind == "flash":
        return _flash_time(g, gpu)
    key = (id(gpu), g.m, g.n, g.k, g.dtype, g.batch, g.a_contig, g.b_contig)
    hit = _GEMM_CACHE.get(key)
    if hit is not None and hit[0] is gpu:
        return hit[1]
    time = gemm_time(
        g.m,
        g.n,
        g.k,
        gpu=gpu,
        dtype=g.dtype,
        batch=g.batch,
        a_contig=g.a_contig,
        b_contig=g.b_contig,
    )
    if len(_GEMM_CACHE) >= _GEMM_CACHE_LIMIT:
        _GEMM_CACHE.clear()
    _GEMM_CACHE[key] = (gpu, time)
    return time


def sustained(t: GemmTime, fraction: float) -> GemmTime:
    """``t`` with its compute time at ``fraction`` of the isolated-kernel rate.

    Only the aligned kernel's share is scaled (ideal, tiles and waves alike, so their shares
    stay): what misalignment adds is a slower kernel's own time, which a step pays as measured
    alone (our H200 ~1B step with FFN width 5461: the isolated GEMMs' extra time, 172 ms, is the
    step's, 170 ms; benchmarks/kernel_report.py train)."""
    if fraction == 1.0:
        return t
    k = 1.0 / fraction
    fast = t.compute_s * t.align_factor
    compute = fast * k + (t.compute_s - fast)
    time_s = t.launch_s + max(compute, t.memory_s)
    return dataclasses.replace(
        t,
        time_s=time_s,
        compute_s=compute,
        ideal_s=t.ideal_s * k,
        lost_tiles_s=t.lost_tiles_s * k,
        lost_waves_s=t.lost_waves_s * k,
        lost_alignment_s=compute - (t.ideal_s + t.lost_tiles_s + t.lost_waves_s) * k,
        bound="compute" if compute >= t.memory_s else "memory",
        tflops=t.flops / time_s / 1e12,
    )


def step_time(
    config: ModelConfig, target: Target, calibration: StepCalibration = STEP_CALIBRATION
) -> StepEstimate:
    """Estimate one step of ``config`` on ``target``: its GEMMs at the sustained compute rate
    plus its memory-bound ops (zero time when the workload is empty). Attention is the kernel
    the target's engines select (`engine_attention`: Transformer Engine runs a head dim it
    cannot fuse unfused)."""
    attention = engine_attention(config, target)
    if attention != target.attention:
        target = dataclasses.replace(target, attention=attention)  # type: ignore[arg-type]
    gpu = target.gpu
    fraction = gpu.step_sustained_fraction
    redo = calibration.recompute_cost

    def rate(g: Gemm) -> float:
        # Fused attention runs at its papers' measured rate; GEMMs at the sustained fraction.
        base = gpu.attention_scale.get(g.kernel, 1.0) if g.kind == "flash" else fraction
        return base / redo if g.pass_ == "recompute" else base

    estimates = tuple(
        GemmEstimate(g, sustained(op_time(g, gpu), rate(g))) for g in step_gemms(config, target)
    )
    gemm_s = sum(e.total_s for e in estimates)
    flops = sum(e.time.flops * e.gemm.count for e in estimates if e.gemm.pass_ != "recompute")
    backward_s = sum(e.total_s for e in estimates if e.gemm.pass_ in ("dgrad", "wgrad"))
    ops = tuple(
        MemOpEstimate(op, memop_time(op, gpu, redo if op.pass_ == "recompute" else 1.0))
        for op in (step_memops(config, target, backward_s) if estimates else [])
    )
    memops_s = sum(o.total_s for o in ops)
    total = gemm_s + memops_s
    peak = gpu.peak(target.dtype) * 1e12
    mfu = flops / (total * peak) if total > 0 else 0.0
    return StepEstimate(
        gpu=gpu.name,
        dtype=target.dtype,
        mode=target.mode,
        total_s=total,
        flops=flops,
        mfu=mfu,
        gemms=estimates,
        ops=ops,
        gemm_s=gemm_s,
        memops_s=memops_s,
        attention=target.attention,
    )


def _changes_dims(config: ModelConfig, dims: dict[Dim, object]) -> bool:
    for dim, new in dims.items():
        old = config.get(dim)
        if old is None or not old.known or old.value != new:
            return True
    return False


# Step estimates of the configs being linted, by identity: several rules (and the runner's
# estimate of "now") ask for the same (config, target). ModelConfig holds a dict and GPU a
# mapping proxy, so neither hashes; the entry keeps both objects, so their ids cannot be
# reused by other objects while it lives.
_CACHE_LIMIT = 4096
_STEP_CACHE: dict[tuple[object, ...], tuple[ModelConfig, GPU, StepEstimate]] = {}


def cached_step_time(config: ModelConfig, target: Target) -> StepEstimate:
    """`step_time`, remembered for this very ``config`` object and these target values."""
    gpu = target.gpu
    key = (
        id(config),
        id(gpu),
        *(getattr(target, f.name) for f in dataclasses.fields(target) if f.name != "gpu"),
    )
    hit = _STEP_CACHE.get(key)
    if hit is not None and hit[0] is config and hit[1] is gpu:
        return hit[2]
    step = step_time(config, target)
    if len(_STEP_CACHE) >= _CACHE_LIMIT:
        _STEP_CACHE.clear()
    _STEP_CACHE[key] = (config, gpu, step)
    return step


def tokens_per_gpu(target: Target) -> float:
    """Tokens one GPU's step works on: b·s (b in decode, one token per sequence) over the t
    GPUs that share them through tensor parallelism."""
    seq = 1 if target.mode == "decode" else max(1, target.seq_len)
    return max(1, target.micro_batch) * seq / max(1, target.tp)


def estimate_fix(
    config: ModelConfig, target: Target, fix: Fix, fixed_target: Target | None = None
) -> Estimate | None:
    """The slowdown ``fix`` removes on ``target``: (time now / time fixed − 1) × 100.

    ``fixed_target`` is the target the fixed config resolves to, when the fix changes it (a
    new micro-batch, sequence length or tensor-parallel size); by default ``target``. When
    the two targets give a GPU different work — b·s tokens over t GPUs (b in decode) — the
    steps are compared per token per GPU: ``fixed_step_time_s`` is the fixed step's time
    scaled to the as-written step's work, fixed time × (b·s/t now) / (b'·s'/t' fixed), so
    the slowdown says how much faster the same tokens go through. When the fix changes the
    model's capacity (a `CAPACITY_DIMS` dim: hidden 2000 → 2048 makes a bigger model), the
    steps are compared per model FLOP instead, fixed time × (FLOPs now / FLOPs fixed): the
    ratio of the two MFUs, so an aligned shape that does more work is not reported as a
    slowdown for it. ``step_time_s`` is always the as-written step.

    None when the fix changes no dims or no step can be estimated for either config.
    """
    dims = dict(fix.dims)
    if not dims or not _changes_dims(config, dims):
        return None
    after = target if fixed_target is None else fixed_target
    now = cached_step_time(config, target)
    fixed = step_time(config.with_dims(dims), after)
    if now.total_s <= 0 or fixed.total_s <= 0:
        return None
    if any(d in CAPACITY_DIMS for d in dims) and now.flops > 0 and fixed.flops > 0:
        fixed_s = fixed.total_s * now.flops / fixed.flops
    else:
        fixed_s = fixed.total_s * tokens_per_gpu(target) / tokens_per_gpu(after)
    return Estimate(
        gpu=target.gpu.name,
        slowdown_pct=(now.total_s / fixed_s - 1.0) * 100.0,
        step_time_s=now.total_s,
        fixed_step_time_s=fixed_s,
    )
