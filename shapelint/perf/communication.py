"""The collectives and the pipeline bubble of a parallel training step.

A GPU of a parallel step (`shapelint.perf.workload.StepShape`) also moves data to the others:

- tensor parallelism (t): per layer, the attention and MLP outputs are reduced over the t GPUs
  in the forward and their input gradients in the backward: two all-reduces each way, or with
  sequence parallelism a reduce-scatter and an all-gather in their place, the same bytes
  (Korthikanti et al. 2022, arXiv:2205.05198, Section 4.2.2); recomputing a layer's forward
  reduces again;
- context parallelism (c): per layer, each GPU's keys and values go round the ring of c GPUs
  in the forward (c − 1 steps), keys, values and their gradients in the backward, beside the
  attention kernel (ring attention, as Transformer Engine's and torchtitan's context
  parallelism run it);
- pipeline parallelism (p): each micro-batch's activations are sent to the next stage and its
  gradients back, once per interleaved stage (v);
- data parallelism (dp): the gradients are all-reduced once per optimizer step (the step's
  micro-batches share it), or, with sharded parameters (FSDP, ZeRO-3), the parameters are
  all-gathered for the forward and again for the backward and the gradients reduce-scattered,
  every micro-batch;
- expert parallelism (ep): per MoE layer, the tokens are sent to their experts' GPUs and back
  (all-to-all), forward and backward.

Each is a named `CommOp` with the bytes one GPU sends, the link it crosses and its time: ring
algorithms send 2(n−1)/n of the tensor for an all-reduce and (n−1)/n for an all-gather or a
reduce-scatter (NCCL's bus bandwidth convention, NVIDIA/nccl-tests doc/PERFORMANCE.md), at the
link's achievable bandwidth. A group whose GPUs share one node (``gpus_per_node``, ranks ordered
tensor, context, data, pipeline, as Megatron-Core and torchtitan lay out their meshes) crosses
NVLink; a group spread over nodes crosses the network, on as many NICs as it has GPUs in a node.
An op hides behind the compute beside it (``window_s``), at most the fraction of it its
framework overlaps (``overlap``, `shapelint.perf.estimate.StepCalibration`); the rest is
exposed.

The pipeline bubble: with m micro-batches per optimizer step and v interleaved stages per GPU,
1F1B pipelines idle for (p − 1)/(m·v) of the time of the micro-batches (Narayanan et al. 2021,
arXiv:2104.04473, Section 2.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shapelint.core.model import Dim, ModelConfig, Target
from shapelint.hardware.gpus import GPU
from shapelint.perf.ops import activation_bytes, parameter_count, sharded_optimizer
from shapelint.perf.workload import (
    LayerPlan,
    Pass,
    StepShape,
    layer_plan,
    micro_batches,
    recomputed_count,
    stated_micro_batches,
    step_shape,
)

Collective = Literal["all-reduce", "all-gather", "reduce-scatter", "send-recv", "all-to-all"]

# NCCL's achievable bus bandwidth as a fraction of the line rate. NVLink: "450GB/s is the line
# rate. With the protocol overhead (~20%) NCCL can get an effective NVLink bandwidth of 370GB/s"
# on H100 (NCCL maintainer, NVIDIA/nccl-tests issue 212, 2024-05-06): 370/450. Network: "For
# NDR @ 400Gbps you should see 46-48GB/s per NIC" of 50 (NVIDIA/nccl-tests issue 290,
# 2025-03-03): 47/50.
NVLINK_EFFICIENCY = 370.0 / 450.0
NETWORK_EFFICIENCY = 47.0 / 50.0
# Fixed cost of one collective call (assumed, not fitted: a small all-reduce over 8 GPUs of one
# node takes tens of microseconds in nccl-tests; large messages make it negligible).
COLLECTIVE_LATENCY_S = 20e-6

NVLINK = "NVLink"
NETWORK = "network"


@dataclass(frozen=True)
class CommOp:
    """One collective of a step on one GPU, called ``count`` times per micro-batch.

    ``size`` is the tensor it works on (the full, gathered tensor), ``wire_bytes`` what this GPU
    sends for one call; ``link_gbs`` the achievable bandwidth of its ``link`` for this group.
    ``share`` is the part of each micro-batch's time a once-per-step collective costs (1/m).
    ``window_s`` is the compute one call can hide behind, ``overlap`` the fraction of the
    collective the framework hides (up to the window).
    """

    name: str
    pass_: Pass
    collective: Collective
    group: int
    size: float
    wire_bytes: float
    link: str
    link_gbs: float
    count: int = 1
    share: float = 1.0
    window_s: float = 0.0
    overlap: float = 0.0
    note: str = ""


@dataclass(frozen=True)
class CommTime:
    """The time of one `CommOp` call and what of it is exposed."""

    time_s: float
    exposed_s: float


def comm_time(op: CommOp) -> CommTime:
    """Time of one call of ``op``: its wire bytes at the link's achievable bandwidth plus the
    call's fixed cost. ``exposed_s`` is what is not hidden: a framework hides at most the
    fraction ``overlap`` of the collective, and never more than the window beside it."""
    time_s = op.wire_bytes / (op.link_gbs * 1e9) + COLLECTIVE_LATENCY_S
    exposed = max(time_s - op.window_s, (1.0 - op.overlap) * time_s, 0.0)
    return CommTime(time_s=time_s, exposed_s=exposed)


def ring_bytes(collective: Collective, size: float, n: int) -> float:
    """Bytes one GPU sends for ``collective`` of a ``size``-byte tensor over ``n`` GPUs: ring
    all-reduce 2(n−1)/n·size, all-gather and reduce-scatter (n−1)/n·size, all-to-all the
    (n−1)/n that leaves the GPU, a send the whole tensor."""
    if collective == "send-recv":
        return size
    if n <= 1:
        return 0.0
    factor = 2.0 if collective == "all-reduce" else 1.0
    return factor * (n - 1) / n * size


def gpus_per_node(target: Target) -> int | None:
    """GPUs one node's NVLink joins: the target's, else the GPU table's reference node."""
    return target.gpus_per_node or target.gpu.gpus_per_node


def group_link(
    gpu: GPU, per_node: int | None, group: int, stride: int, collective: Collective
) -> tuple[str, float] | None:
    """The link a group of ``group`` GPUs, ``stride`` ranks apart, crosses and its achievable
    bandwidth per GPU (GB/s); None when the GPU table has no figure for it.

    Inside one node: NVLink (the table's ``interconnect_gbs``, per direction) at NCCL's
    efficiency. Spread over nodes: the network, whose rings use one NIC per GPU of the group in
    each node (``inter_node_gbs`` per GPU), at most NVLink's rate; an all-to-all cannot
    aggregate NICs ("Alltoall cannot aggregate the bandwidth of multiple NICs", NCCL
    maintainer, NVIDIA/nccl-tests issue 267, 2024-11-19). Without a node size, every group is
    taken to share the GPU's interconnect.
    """
    nvlink = gpu.interconnect_gbs
    if nvlink is None:
        return None
    nvlink_rate = nvlink * NVLINK_EFFICIENCY
    if per_node is None or group * stride <= per_node:
        return NVLINK, nvlink_rate
    if gpu.inter_node_gbs is None:
        return None
    in_node = max(1, min(group, per_node // stride)) if stride < per_node else 1
    nics = 1 if collective == "all-to-all" else in_node
    return NETWORK, min(nvlink_rate, nics * gpu.inter_node_gbs * NETWORK_EFFICIENCY)


@dataclass(frozen=True)
class Windows:
    """The compute of one micro-batch on one GPU that collectives can hide behind, by pass:
    the layers' projection GEMMs, the attention kernels, and everything (GEMMs and
    memory-bound ops)."""

    linear_fwd_s: float = 0.0
    linear_bwd_s: float = 0.0
    attention_fwd_s: float = 0.0
    attention_bwd_s: float = 0.0
    fwd_s: float = 0.0
    bwd_s: float = 0.0


@dataclass(frozen=True)
class Overlap:
    """The fraction of each parallelism's collectives a framework hides behind compute."""

    tp: float = 0.0
    dp: float = 0.0
    cp: float = 0.0
    pp: float = 0.0


def gradient_bytes(dtype: str) -> int:
    """Bytes per gradient element reduced over the data-parallel GPUs: fp32 under bf16 and fp8
    recipes (Megatron-LM accumulates and all-reduces bf16 gradients in fp32,
    ``accumulate_allreduce_grads_in_fp32`` forced on for bf16 in megatron/training/arguments.py;
    PyTorch FSDP2 under torchtitan reduces in fp32, ``mixed_precision_reduce = "float32"``); the
    parameters' own dtype otherwise (fp16, fp32)."""
    return 2 if dtype == "fp16" else 4


class _Adder:
    """Collects the `CommOp` of one micro-batch: each call places a collective on its link
    (NVLink or the network), skipping those with no link, no calls or no bytes. (A plain
    class: a dataclass costs its module's import time, on every run.)"""

    __slots__ = ("gpu", "ops", "per_node")

    def __init__(self, gpu: GPU, per_node: int | None) -> None:
        self.gpu = gpu
        self.per_node = per_node
        self.ops: list[CommOp] = []

    def __call__(
        self,
        name: str,
        pass_: Pass,
        collective: Collective,
        group: int,
        stride: int,
        size: float,
        count: int,
        *,
        share: float = 1.0,
        window: float = 0.0,
        hide: float = 0.0,
        note: str = "",
        wire: float | None = None,
    ) -> None:
        link = group_link(self.gpu, self.per_node, group, stride, collective)
        if link is None or count <= 0 or size <= 0:
            return
        sent = ring_bytes(collective, size, group) if wire is None else wire
        self.ops.append(
            CommOp(
                name,
                pass_,
                collective,
                group,
                size,
                sent,
                link[0],
                link[1],
                count,
                share,
                window,
                hide,
                note,
            )
        )


def step_comms(
    config: ModelConfig, target: Target, windows: Windows, overlap: Overlap
) -> list[CommOp]:
    """The collectives of one micro-batch of ``config`` on one GPU of ``target`` (training
    only; [] when the config cannot be timed or nothing is parallel)."""
    if target.mode != "train":
        return []
    h = config.int(Dim.HIDDEN)
    a = config.int(Dim.HEADS)
    layers = config.int(Dim.LAYERS)
    plan = layer_plan(config)
    if h is None or a is None or layers is None or plan is None:
        return []
    shape = step_shape(target, layers)
    n_layers = shape.count(layers)
    e = activation_bytes(target.dtype)
    t, cp, pp = shape.t, max(1, target.cp), max(1, target.pp)
    dp, ep = max(1, target.data_parallel), max(1, target.ep)
    add = _Adder(target.gpu, gpus_per_node(target))
    activation = shape.tokens * h * e  # one hidden-sized activation of the micro-batch
    if t > 1:
        _tp_comms(add, target, windows, overlap, t, n_layers, activation)
    if cp > 1:
        _cp_comms(add, config, target, windows, overlap, shape, plan, (h, a, n_layers, e))
    if pp > 1:
        _pp_comms(add, target, windows, overlap, activation / t, stride=t * cp * dp)
    if dp > 1:
        _dp_comms(add, config, target, windows, overlap, t, e, stride=t * cp)
    if ep > 1 and plan.moe_layers:
        moe = shape.count(plan.moe_layers)
        routed = shape.tokens * plan.top_k * h * e
        note = "dispatch to the experts' GPUs and combine back"
        add("ep_all_to_all", "fwd", "all-to-all", ep, t * cp, routed, 2 * moe, note=note)
        add("ep_all_to_all", "dgrad", "all-to-all", ep, t * cp, routed, 2 * moe, note=note)
    return add.ops


def _tp_comms(
    add: _Adder,
    target: Target,
    windows: Windows,
    overlap: Overlap,
    t: int,
    n_layers: int,
    activation: float,
) -> None:
    """Tensor parallelism's reductions (and what recomputation repeats of them)."""
    # Two reductions per layer each way; a call hides behind half the layer's projections.
    hide = overlap.tp if target.tp_overlap else 0.0
    note = "2 per layer: all-reduce, or reduce-scatter + all-gather (sequence parallel)"
    per_layer = max(1, n_layers)
    fwd_window = windows.linear_fwd_s / per_layer / 2
    bwd_window = windows.linear_bwd_s / per_layer / 2
    add(
        "tp_reduce",
        "fwd",
        "all-reduce",
        t,
        1,
        activation,
        2 * n_layers,
        window=fwd_window,
        hide=hide,
        note=note,
    )
    add(
        "tp_reduce",
        "dgrad",
        "all-reduce",
        t,
        1,
        activation,
        2 * n_layers,
        window=bwd_window,
        hide=hide,
        note=note,
    )
    redo = recomputed_count(target.recompute, "linear", 2 * n_layers)
    if target.recompute in ("full", "layer"):
        add(
            "tp_reduce",
            "recompute",
            "all-reduce",
            t,
            1,
            activation,
            redo,
            window=fwd_window,
            hide=hide,
            note=note,
        )
    elif target.recompute == "op":
        # Per-op checkpointing saves the reduce-scatters' outputs (torchtitan's
        # _save_list) but not the all-gathered inputs the recomputed matmuls read.
        add(
            "tp_gather",
            "recompute",
            "all-gather",
            t,
            1,
            activation,
            2 * n_layers,
            window=fwd_window,
            hide=hide,
            note="the all-gathers before the recomputed matmuls",
        )


def _cp_comms(
    add: _Adder,
    config: ModelConfig,
    target: Target,
    windows: Windows,
    overlap: Overlap,
    shape: StepShape,
    plan: LayerPlan,
    dims: tuple[int, int, int, int],
) -> None:
    """Context parallelism's ring exchange of keys and values, each pass (``dims``: the
    hidden size, the heads, this stage's layers and the activations' bytes per element)."""
    h, a, n_layers, e = dims
    t, cp = shape.t, max(1, target.cp)
    g = config.int(Dim.KV_HEADS) or a
    d = config.int(Dim.HEAD_DIM) or h // a
    kv_heads = a if plan.mla else g  # MLA expands its keys and values per head
    kv = shape.b * shape.s * 2 * -(-kv_heads // t) * d * e  # this GPU's keys and values
    per_layer = max(1, n_layers)
    note = f"ring: keys and values pass {cp - 1} GPUs (backward: and their gradients)"
    fwd_window = windows.attention_fwd_s / per_layer
    bwd_window = windows.attention_bwd_s / per_layer
    add(
        "cp_exchange",
        "fwd",
        "send-recv",
        cp,
        t,
        kv,
        n_layers,
        window=fwd_window,
        hide=overlap.cp,
        note=note,
        wire=(cp - 1) * kv,
    )
    add(
        "cp_exchange",
        "dgrad",
        "send-recv",
        cp,
        t,
        kv,
        n_layers,
        window=bwd_window,
        hide=overlap.cp,
        note=note,
        wire=2 * (cp - 1) * kv,
    )
    redo = recomputed_count(target.recompute, "attention", n_layers)
    add(
        "cp_exchange",
        "recompute",
        "send-recv",
        cp,
        t,
        kv,
        redo,
        window=fwd_window,
        hide=overlap.cp,
        note=note,
        wire=(cp - 1) * kv,
    )


def _pp_comms(
    add: _Adder, target: Target, windows: Windows, overlap: Overlap, sent: float, *, stride: int
) -> None:
    """Pipeline parallelism: the stage's activations forward, their gradients back."""
    pp = max(1, target.pp)
    # The stage's output activations forward, their gradients back (sequence-parallel
    # shards), once per interleaved stage.
    v = max(1, target.vp)
    note = f"to the next stage and back, {v} per micro-batch (interleaved stages)"
    add(
        "pp_send",
        "fwd",
        "send-recv",
        pp,
        stride,
        sent,
        v,
        window=windows.fwd_s / v,
        hide=overlap.pp,
        note=note,
    )
    add(
        "pp_send",
        "dgrad",
        "send-recv",
        pp,
        stride,
        sent,
        v,
        window=windows.bwd_s / v,
        hide=overlap.pp,
        note=note,
    )


def _dp_comms(
    add: _Adder,
    config: ModelConfig,
    target: Target,
    windows: Windows,
    overlap: Overlap,
    t: int,
    e: int,
    *,
    stride: int,
) -> None:
    """Data parallelism: sharded parameters' gathers, or the gradients' reduction per step."""
    dp, pp = max(1, target.data_parallel), max(1, target.pp)
    params = (parameter_count(config) or 0) / t / pp
    grads = params * gradient_bytes(target.dtype)
    weights = params * e
    grad_note = f"gradients in {gradient_bytes(target.dtype)} B"
    if target.sharded:
        # FSDP / ZeRO-3: every micro-batch gathers the parameters for its forward and again
        # for its backward, and reduce-scatters its gradients.
        note = "sharded parameters: gathered for the forward and again for the backward"
        add(
            "dp_gather",
            "fwd",
            "all-gather",
            dp,
            stride,
            weights,
            1,
            window=windows.fwd_s,
            hide=overlap.dp,
            note=note,
        )
        add(
            "dp_gather",
            "dgrad",
            "all-gather",
            dp,
            stride,
            weights,
            1,
            window=windows.bwd_s / 2,
            hide=overlap.dp,
            note=note,
        )
        add(
            "dp_reduce",
            "wgrad",
            "reduce-scatter",
            dp,
            stride,
            grads,
            1,
            window=windows.bwd_s / 2,
            hide=overlap.dp,
            note=grad_note,
        )
    else:
        # Once per optimizer step, after the last micro-batch's backward (the others
        # accumulate): behind that backward, the pipeline's idle cooldown, and the next
        # step's first forward.
        steps = micro_batches(config, target)
        bubble = (bubble_fraction(config, target) or 0.0) * steps
        window = windows.bwd_s + windows.fwd_s + bubble * (windows.bwd_s + windows.fwd_s)
        note = f"once per step ({steps} micro-batches), {grad_note}"
        if sharded_optimizer(target):
            # Megatron's distributed optimizer (ZeRO-1): reduce-scatter the gradients,
            # all-gather the updated parameters.
            add(
                "dp_reduce",
                "wgrad",
                "reduce-scatter",
                dp,
                stride,
                grads,
                1,
                share=1.0 / steps,
                window=windows.bwd_s * (1 + bubble),
                hide=overlap.dp,
                note=note,
            )
            add(
                "dp_gather",
                "fwd",
                "all-gather",
                dp,
                stride,
                weights,
                1,
                share=1.0 / steps,
                window=windows.fwd_s * (1 + bubble),
                hide=overlap.dp,
                note=f"once per step ({steps} micro-batches): the updated parameters",
            )
        else:
            add(
                "dp_reduce",
                "wgrad",
                "all-reduce",
                dp,
                stride,
                grads,
                1,
                share=1.0 / steps,
                window=window,
                hide=overlap.dp,
                note=note,
            )


def bubble_fraction(config: ModelConfig, target: Target) -> float | None:
    """The 1F1B pipeline bubble as a fraction of the micro-batches' time: (p − 1)/(m·v); 0
    without pipeline parallelism, None when the micro-batches per step are not known."""
    pp = max(1, target.pp)
    if target.mode != "train" or pp <= 1:
        return 0.0
    m = stated_micro_batches(config, target)
    if m is None:
        return None
    return (pp - 1) / (m * max(1, target.vp))


__all__ = [
    "COLLECTIVE_LATENCY_S",
    "NETWORK_EFFICIENCY",
    "NVLINK_EFFICIENCY",
    "Collective",
    "CommOp",
    "CommTime",
    "Overlap",
    "Windows",
    "bubble_fraction",
    "comm_time",
    "gpus_per_node",
    "group_link",
    "ring_bytes",
    "step_comms",
]
