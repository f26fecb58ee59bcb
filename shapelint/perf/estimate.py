"""Step time of a config on a target, and the slowdown a fix removes.

A finding's slowdown is always (step time as written / step time with the fix − 1) × 100, so
every rule's number comes from the same model and the same counterfactual (DESIGN.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from shapelint.core.dtypes import ELEMENT_BYTES
from shapelint.core.model import CAPACITY_DIMS, Dim, Estimate, Fix, ModelConfig, Target
from shapelint.hardware.gpus import GPU
from shapelint.perf.attention import attention_fraction
from shapelint.perf.communication import (
    CommOp,
    CommTime,
    Overlap,
    Windows,
    bubble_fraction,
    comm_time,
    step_comms,
)
from shapelint.perf.gemm import CALIBRATION, GemmTime, achievable_bandwidth, gemm_time
from shapelint.perf.ops import MemOp, MemOpTime, memop_time, step_memops
from shapelint.perf.te_attention import engine_attention
from shapelint.perf.workload import ATTENTION_OPS, Gemm, micro_batches, step_gemms

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
class FrameworkCalibration:
    """What one framework's runs sustain, each constant with its ``source``.

    ``sustained`` scales the GPU family's ``step_sustained_fraction`` (fitted on llm-foundry's
    runs, so ``foundry`` is 1.0 by definition) for the GEMMs and attention kernels of a step
    run by this framework (its kernels, its launch gaps, what its collectives take from
    compute beside them). ``overlap`` is the fraction of the compute beside it that each
    parallelism's collectives hide behind (`shapelint.perf.communication.Overlap`; tensor
    parallelism's only with ``target.tp_overlap``).
    """

    sustained: float = 1.0
    overlap: Overlap = field(default_factory=Overlap)
    source: str = ""


@dataclass(frozen=True)
class StepCalibration:
    """Whole-step constants that do not depend on the GPU: one `FrameworkCalibration` per
    framework (`shapelint.core.target.FRAMEWORKS`), fitted on the fit rows of published
    training throughput (tests/perf/data: llm_foundry_mpt.csv, nemo_performance_summary.csv,
    torchtitan_performance.csv, megatron_lm_scaling.csv, and our H200 rows;
    ``python benchmarks/step_calibration.py --fit`` refits them with the per-family ones, and
    tests/perf/test_perf_step_calibration.py checks that the refit gives these values back).

    The per-family constants fitted on llm-foundry's rows sit in the GPU table
    (``shapelint/hardware/gpus.yaml``, ``families``) and reach the step through the GPU:
    ``step_sustained_fraction``, the fraction of the GEMM model's (best-case, isolated-kernel)
    compute rate that GEMMs sustain inside a whole training step (what clocks under sustained
    power, kernel gaps and communication running beside compute cost), and ``attention_scale``,
    the scale of a fused attention kernel's figure-derived rate (only llm-foundry's Triton
    kernel is fitted; fused attention runs at the rate its papers measured,
    `shapelint.perf.attention`, times the framework's ``sustained``).

    A target without a framework takes ``default_framework``.
    """

    frameworks: Mapping[str, FrameworkCalibration] = field(default_factory=dict)
    default_framework: str = "pytorch"

    def framework(self, name: str | None) -> FrameworkCalibration:
        """The calibration of framework ``name`` (None: the default framework's)."""
        chosen = name or self.default_framework
        return self.frameworks.get(chosen) or self.frameworks.get(
            self.default_framework, FrameworkCalibration()
        )


_FITTED = "python benchmarks/step_calibration.py --fit"
# Overlaps of the data-parallel, context-parallel and pipeline collectives, not fitted: each
# framework runs them beside compute. Megatron-LM/NeMo: --overlap-grad-reduce and
# --overlap-param-gather (NeMo's optim.overlap_grad_sync / overlap_param_sync), Transformer
# Engine's context parallelism sends the next keys and values while attention runs on the
# current ones (flash_attn_p2p_communicate, transformer_engine/pytorch/attention/
# dot_product_attention/context_parallel.py), --overlap-p2p-communication; PyTorch FSDP
# prefetches the next all-gather and reduce-scatters beside the backward (FSDP2's implicit
# prefetching, FSDP1's backward_prefetch), torchtitan's pipeline schedules send asynchronously.
_OVERLAPPED = Overlap(tp=0.0, dp=1.0, cp=1.0, pp=1.0)
STEP_CALIBRATION = StepCalibration(
    frameworks=MappingProxyType(
        {
            "foundry": FrameworkCalibration(
                1.0,
                _OVERLAPPED,
                "the reference: the GPU families' step_sustained_fraction is fitted on "
                "llm-foundry's runs (tests/perf/data/llm_foundry_mpt.csv); no tensor "
                "parallelism in them",
            ),
            "megatron": FrameworkCalibration(
                0.989,
                dataclasses.replace(_OVERLAPPED, tp=1.0),
                "fitted on the fit rows of nemo_performance_summary.csv and "
                f"megatron_lm_scaling.csv ({_FITTED}); tp: the Userbuffers overlap of the runs "
                "with --tp-comm-overlap (NeMo ub_tp_comm_overlap)",
            ),
            "pytorch": FrameworkCalibration(
                0.927,
                _OVERLAPPED,
                "fitted on the eager fit rows of torchtitan_performance.csv and our H200 rows "
                f"({_FITTED}); tp: none (torchtitan's async tensor parallelism needs "
                "torch.compile)",
            ),
            "compile": FrameworkCalibration(
                0.951,
                dataclasses.replace(_OVERLAPPED, tp=0.258),
                "fitted on the torch.compile fit rows of torchtitan_performance.csv "
                f"({_FITTED}); tp: the async tensor-parallel rows",
            ),
        }
    )
)
# JAX/XLA (MaxText, Levanter): no published whole-step rows in tests/perf/data; it takes
# torch.compile's constants (both compile the step's graph).
STEP_CALIBRATION = dataclasses.replace(
    STEP_CALIBRATION,
    frameworks=MappingProxyType(
        {
            **STEP_CALIBRATION.frameworks,
            "jax": dataclasses.replace(
                STEP_CALIBRATION.frameworks["compile"],
                source="no published rows: torch.compile's constants (both compile the step)",
            ),
        }
    ),
)


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
class CommEstimate:
    """One collective of a step with the model's time for one call."""

    op: CommOp
    time: CommTime

    @property
    def total_s(self) -> float:
        """Exposed time of its ``count`` calls, per micro-batch (``share`` of it for a
        once-per-step collective)."""
        return self.time.exposed_s * self.op.count * self.op.share


@dataclass(frozen=True)
class StepEstimate:
    """The model's estimate of one step (per GPU, per micro-batch): its GEMMs, its memory-bound
    ops, its collectives and its share of the pipeline bubble.

    ``flops`` counts useful work (real head dims, causal attention at half; recomputation not
    counted), so ``mfu`` is model FLOPs over (time × dense peak of the target dtype).
    ``gemm_s``, ``memops_s``, ``comm_s`` (exposed) and ``bubble_s`` add up to ``total_s``.
    ``bubble`` is the pipeline's idle fraction (p − 1)/(m·v), None when the micro-batches per
    step are not known (no bubble is then counted); ``micro_batches`` the m the step shares
    its once-per-step costs with; ``framework`` whose constants applied.
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
    comms: tuple[CommEstimate, ...] = ()
    comm_s: float = 0.0
    bubble_s: float = 0.0
    bubble: float | None = 0.0
    micro_batches: int = 1
    framework: str = ""
    # The attention the step timed: the target's, or the one its engines select.
    attention: str = ""


def _flash_time(g: Gemm, gpu: GPU) -> GemmTime:
    """A flash-attention kernel: its QKᵀ and P·V products (five products for the backward:
    QKᵀ recomputed, dP = dO·Vᵀ, dV = Pᵀ·dO, dQ = dS·K, dK = dSᵀ·Q) at the padded head dim,
    in one launch, reading Q, K, V (and O, dO) once, at the rate the kernel's papers measured
    for that pass, head dim and sequence length (`shapelint.perf.attention`)."""
    s, keys, dp, batch, dt = g.m, g.n, g.k, g.batch, g.dtype
    products = 2 if g.pass_ in ("fwd", "recompute") else 5
    tensors = 4 if products == 2 else 8  # read Q, K, V; write O (bwd: + O, dO; dQ, dK, dV)
    head_dim = g.head_dim or dp
    # A sliding-window layer computes only the key blocks inside its window; its blocks run at
    # the rate the kernel reaches at this sequence length (no published sliding-window rates).
    # Under context parallelism the s queries of this GPU attend to all the keys, the causal
    # half of the work balanced over the GPUs; the kernel runs at its rate for s.
    share = window_share(keys, g.window)
    flops = 2.0 * s * keys * head_dim * batch * products * CAUSAL_FRACTION * share
    work = flops * dp / head_dim
    # fp8 recipes run attention in bf16 (Transformer Engine's default).
    rate_dtype = "bf16" if dt == "fp8" else dt
    fraction = attention_fraction(
        g.kernel or "flash2", gpu.attention_figures, "fwd" if products == 2 else "bwd", dp, s
    )
    compute = work / (fraction * gpu.peak(rate_dtype) * 1e12)
    nbytes = float(tensors * batch * (s + keys) / 2 * head_dim * ELEMENT_BYTES[dt])
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


# GEMM timings of this run, by GPU and shape: a config's fixes, its other GPUs and the configs
# that share layer shapes ask for the same GEMMs again. A GPU is keyed by what a GEMM's time
# depends on (`_gemm_identity`: every figure but the whole-step constants applied after it),
# so GPU objects that differ only in those (a calibration fit's) share their GEMM timings.
_GEMM_CACHE_LIMIT = 65536
_GEMM_CACHE: dict[tuple[object, ...], GemmTime] = {}
# The step constants `sustained` and `step_time` apply to a GEMM's isolated time, and the
# descriptive fields: not part of a GEMM's identity.
_NOT_GEMM_FIELDS = frozenset(
    {"step_sustained_fraction", "attention_scale", "family_note", "source", "notes", "aliases"}
)
# The identity of each GPU object seen (a small number per distinct identity), by id; an entry
# keeps its GPU, so the id cannot be reused by another object while it lives.
_GPU_IDENTITY: dict[int, tuple[GPU, int]] = {}
_IDENTITIES: dict[tuple[object, ...], int] = {}


def _hashable(value: object) -> object:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, (frozenset, set)):
        return tuple(sorted(map(str, value)))
    return value


def _gemm_identity(gpu: GPU) -> int:
    """A number for what a GEMM's time on ``gpu`` depends on (every field but
    `_NOT_GEMM_FIELDS`): GPUs that agree on those get the same number."""
    hit = _GPU_IDENTITY.get(id(gpu))
    if hit is not None and hit[0] is gpu:
        return hit[1]
    identity = tuple(
        _hashable(getattr(gpu, f.name))
        for f in dataclasses.fields(gpu)
        if f.name not in _NOT_GEMM_FIELDS
    )
    number = _IDENTITIES.setdefault(identity, len(_IDENTITIES))
    if len(_GPU_IDENTITY) >= _CACHE_LIMIT:
        _GPU_IDENTITY.clear()
    _GPU_IDENTITY[id(gpu)] = (gpu, number)
    return number


def op_time(g: Gemm, gpu: GPU) -> GemmTime:
    """The model's time for one call of ``g`` on ``gpu``."""
    if g.kind == "flash":
        return _flash_time(g, gpu)
    key = (_gemm_identity(gpu), g.m, g.n, g.k, g.dtype, g.batch, g.a_contig, g.b_contig)
    hit = _GEMM_CACHE.get(key)
    if hit is not None:
        return hit
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
    _GEMM_CACHE[key] = time
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


def _windows(gemms: tuple[GemmEstimate, ...], ops: tuple[MemOpEstimate, ...]) -> Windows:
    """The compute of one micro-batch collectives can hide behind, by pass (`Windows`)."""
    backward = ("dgrad", "wgrad", "recompute")

    def total(passes: tuple[str, ...], kind: str | None = None) -> float:
        out = 0.0
        for e in gemms:
            g = e.gemm
            attention = g.kind == "flash" or g.name in ATTENTION_OPS
            if g.pass_ in passes and (kind is None or (kind == "attention") == attention):
                out += e.total_s
        return out

    memops = {p: sum(o.total_s for o in ops if o.op.pass_ == p) for p in ("fwd", *backward)}
    return Windows(
        linear_fwd_s=total(("fwd",), "linear"),
        linear_bwd_s=total(backward, "linear"),
        attention_fwd_s=total(("fwd",), "attention"),
        attention_bwd_s=total(backward, "attention"),
        fwd_s=total(("fwd",)) + memops["fwd"],
        bwd_s=total(backward) + sum(memops[p] for p in backward),
    )


def step_time(
    config: ModelConfig, target: Target, calibration: StepCalibration = STEP_CALIBRATION
) -> StepEstimate:
    """Estimate one micro-batch step of ``config`` on one GPU of ``target``: its GEMMs and
    attention at the sustained compute rate of the GPU family and the framework, its
    memory-bound ops, its collectives' exposed time and its share of the pipeline bubble (zero
    time when the workload is empty). Attention is the kernel the target's engines select
    (`engine_attention`: Transformer Engine runs a head dim it cannot fuse unfused)."""
    attention = engine_attention(config, target)
    if attention != target.attention:
        target = dataclasses.replace(target, attention=attention)  # type: ignore[arg-type]
    gpu = target.gpu
    framework = target.framework or calibration.default_framework
    chosen = calibration.framework(framework)
    fraction = gpu.step_sustained_fraction * chosen.sustained

    def rate(g: Gemm) -> float:
        # Fused attention runs at its papers' measured rate (scaled where the family fits its
        # kernel); GEMMs at the family's sustained fraction; both at the framework's.
        if g.kind == "flash":
            return gpu.attention_scale.get(g.kernel, 1.0) * chosen.sustained
        return fraction

    estimates = tuple(
        GemmEstimate(g, sustained(op_time(g, gpu), rate(g))) for g in step_gemms(config, target)
    )
    gemm_s = sum(e.total_s for e in estimates)
    flops = sum(e.time.flops * e.gemm.count for e in estimates if e.gemm.pass_ != "recompute")
    ops = tuple(
        MemOpEstimate(op, memop_time(op, gpu))
        for op in (step_memops(config, target) if estimates else [])
    )
    memops_s = sum(o.total_s for o in ops)
    comms: tuple[CommEstimate, ...] = ()
    if estimates:
        windows = _windows(estimates, ops)
        comms = tuple(
            CommEstimate(op, comm_time(op))
            for op in step_comms(config, target, windows, chosen.overlap)
        )
    comm_s = sum(c.total_s for c in comms)
    bubble = bubble_fraction(config, target) if estimates else 0.0
    busy = gemm_s + memops_s + comm_s
    bubble_s = busy * (bubble or 0.0)
    total = busy + bubble_s
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
        comms=comms,
        comm_s=comm_s,
        bubble_s=bubble_s,
        bubble=bubble,
        micro_batches=micro_batches(config, target),
        framework=framework,
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
    """Tokens one GPU's step works on: b·s (b in decode, one token per sequence) over the GPUs
    that share them: t through tensor parallelism and, in training, c through context
    parallelism and p through the pipeline (each GPU runs 1/p of the layers)."""
    seq = 1 if target.mode == "decode" else max(1, target.seq_len)
    share = max(1, target.tp)
    if target.mode == "train":
        share *= max(1, target.cp) * max(1, target.pp)
    elif target.mode == "prefill":
        share *= max(1, target.cp)
    return max(1, target.micro_batch) * seq / share


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
