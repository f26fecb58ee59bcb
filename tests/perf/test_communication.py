"""The collectives and the pipeline bubble of a parallel step (shapelint/perf/communication.py),
checked against bytes, links and fractions worked out by hand from the formulas the module
cites (ring algorithms: NVIDIA/nccl-tests doc/PERFORMANCE.md; the 1F1B bubble: Narayanan et al.
2021, Section 2.2), and the recompute modes' extra forward work (perf/workload.py)."""

from __future__ import annotations

import dataclasses

import pytest

from shapelint.core.model import Dim, ModelConfig, Target, Value
from shapelint.core.source import Span
from shapelint.hardware.gpus import lookup
from shapelint.perf.communication import (
    COLLECTIVE_LATENCY_S,
    NETWORK,
    NETWORK_EFFICIENCY,
    NVLINK,
    NVLINK_EFFICIENCY,
    CommOp,
    bubble_fraction,
    comm_time,
    group_link,
    ring_bytes,
)
from shapelint.perf.estimate import step_time

SPAN = Span("", 1, 1, 1, 1, 0, 0)
H100 = lookup("h100")
# Llama-3-8B: hidden 4096, 32 heads (8 KV heads), 32 layers, FFN 14336.
H, HEADS, KV, LAYERS, FFN, VOCAB = 4096, 32, 8, 32, 14336, 128256
SEQ = 8192


def llama(**extra: int) -> ModelConfig:
    dims = {
        Dim.HIDDEN: H,
        Dim.HEADS: HEADS,
        Dim.KV_HEADS: KV,
        Dim.LAYERS: LAYERS,
        Dim.FFN: FFN,
        Dim.VOCAB: VOCAB,
    }
    values = {d: Value(v, d.value, SPAN) for d, v in dims.items()}
    values.update({Dim(k): Value(v, k, SPAN) for k, v in extra.items()})
    return ModelConfig("llama", "x.json", "hf", values, gated_mlp=True)


def target(**fields: object) -> Target:
    base: dict[str, object] = {
        "gpu": H100,
        "mode": "train",
        "micro_batch": 1,
        "seq_len": SEQ,
        "gpus_per_node": 8,
    }
    return Target(**{**base, **fields})  # type: ignore[arg-type]


def comms(t: Target, config: ModelConfig | None = None) -> dict[tuple[str, str], CommOp]:
    step = step_time(config or llama(), t)
    return {(c.op.name, c.op.pass_): c.op for c in step.comms}


def test_ring_bytes_follow_the_bus_bandwidth_convention() -> None:
    assert ring_bytes("all-reduce", 800.0, 4) == 2 * 3 / 4 * 800.0
    assert ring_bytes("all-gather", 800.0, 4) == 3 / 4 * 800.0
    assert ring_bytes("reduce-scatter", 800.0, 8) == 7 / 8 * 800.0
    assert ring_bytes("send-recv", 800.0, 2) == 800.0
    assert ring_bytes("all-reduce", 800.0, 1) == 0.0


def test_groups_inside_a_node_cross_nvlink_and_others_the_network() -> None:
    nvlink = H100.interconnect_gbs * NVLINK_EFFICIENCY  # type: ignore[operator]
    nic = H100.inter_node_gbs * NETWORK_EFFICIENCY  # type: ignore[operator]
    assert group_link(H100, 8, 8, 1, "all-reduce") == (NVLINK, nvlink)
    assert group_link(H100, 8, 4, 2, "all-reduce") == (NVLINK, nvlink)  # ranks 0..6: one node
    # Two GPUs 8 ranks apart: one in each node, one NIC each.
    assert group_link(H100, 8, 2, 8, "send-recv") == (NETWORK, nic)
    # Four GPUs 4 apart: two per node, so two NICs carry each node's share of the ring...
    assert group_link(H100, 8, 4, 4, "all-reduce") == (NETWORK, 2 * nic)
    # ...but an all-to-all cannot aggregate NICs.
    assert group_link(H100, 8, 4, 4, "all-to-all") == (NETWORK, nic)
    # No node size: every group shares the GPU's interconnect.
    assert group_link(H100, None, 64, 8, "all-reduce") == (NVLINK, nvlink)
    # A GPU without an interconnect figure times no collective.
    assert (
        group_link(dataclasses.replace(H100, interconnect_gbs=None), 8, 2, 1, "all-reduce") is None
    )


def test_exposed_time_is_what_the_overlap_and_the_window_leave() -> None:
    op = CommOp("x", "fwd", "all-reduce", 4, 1e9, 1e9, NVLINK, 100.0, window_s=0.004, overlap=0.5)
    time = 1e9 / 100e9 + COLLECTIVE_LATENCY_S
    t = comm_time(op)
    assert t.time_s == pytest.approx(time)
    # Half may be hidden, and the window (4 ms) is shorter than half the time (5 ms + latency).
    assert t.exposed_s == pytest.approx(max(time - 0.004, 0.5 * time))
    assert comm_time(dataclasses.replace(op, overlap=0.0)).exposed_s == pytest.approx(time)
    hidden = comm_time(dataclasses.replace(op, overlap=1.0, window_s=1.0))
    assert hidden.exposed_s == 0.0


def test_tensor_parallel_reductions_per_layer() -> None:
    ops = comms(target(tp=4))
    activation = 1 * SEQ * H * 2  # one bf16 hidden-sized activation of the micro-batch
    for pass_ in ("fwd", "dgrad"):
        op = ops[("tp_reduce", pass_)]
        assert op.collective == "all-reduce" and op.group == 4
        assert op.size == activation
        assert op.wire_bytes == pytest.approx(2 * 3 / 4 * activation)
        assert op.count == 2 * LAYERS  # attention and MLP outputs, each layer
        assert op.link == NVLINK
    assert not any(name.startswith(("cp_", "pp_", "dp_")) for name, _ in ops)


def test_a_pipeline_stage_runs_its_share_of_the_layers_and_sends_to_the_next() -> None:
    ops = comms(target(tp=4, pp=4, global_batch=64, data_parallel=2))
    assert ops[("tp_reduce", "fwd")].count == 2 * LAYERS // 4
    send = ops[("pp_send", "fwd")]
    # The stage's output, in sequence-parallel shards; the pipeline's neighbours are
    # tp·cp·dp = 8 ranks apart: in the next node.
    assert send.size == SEQ * H * 2 / 4
    assert send.wire_bytes == send.size and send.count == 1
    assert send.link == NETWORK
    # Interleaved stages send once per virtual stage.
    assert comms(target(tp=4, pp=4, vp=2, global_batch=64))[("pp_send", "fwd")].count == 2


def test_pipeline_bubble_is_p_minus_1_over_m_v() -> None:
    config = llama()
    # 64 sequences per step, 2 data-parallel replicas of micro-batch 1: m = 32.
    assert bubble_fraction(config, target(pp=4, global_batch=64, data_parallel=2)) == 3 / 32
    assert bubble_fraction(config, target(pp=4, vp=2, global_batch=64, data_parallel=2)) == (3 / 64)
    # The config's gradient accumulation gives m when the global batch is not stated.
    assert bubble_fraction(llama(grad_accum=8), target(pp=4)) == 3 / 8
    assert bubble_fraction(config, target(pp=4)) is None  # m unknown: not counted
    assert bubble_fraction(config, target(pp=1, global_batch=64)) == 0.0
    step = step_time(config, target(tp=2, pp=4, global_batch=64, data_parallel=2))
    busy = step.gemm_s + step.memops_s + step.comm_s
    assert step.bubble == 3 / 32
    assert step.bubble_s == pytest.approx(busy * 3 / 32)
    assert step.total_s == pytest.approx(busy + step.bubble_s)


def test_data_parallel_reduction_once_per_step_or_sharded_every_micro_batch() -> None:
    params_bytes = {}
    ops = comms(target(data_parallel=8, global_batch=64, framework="pytorch"))
    reduce = ops[("dp_reduce", "wgrad")]
    # Plain data parallelism: one all-reduce of the fp32 gradients per optimizer step, its time
    # shared by the step's 64 / 8 = 8 micro-batches.
    assert reduce.collective == "all-reduce" and reduce.share == 1 / 8
    params_bytes["all-reduce"] = reduce.size
    assert ("dp_gather", "fwd") not in ops
    sharded = comms(target(data_parallel=8, global_batch=64, sharded=True, framework="pytorch"))
    # FSDP / ZeRO-3: the bf16 parameters gathered for the forward and the backward, the fp32
    # gradients reduce-scattered, every micro-batch.
    assert sharded[("dp_reduce", "wgrad")].collective == "reduce-scatter"
    assert sharded[("dp_reduce", "wgrad")].share == 1.0
    assert sharded[("dp_reduce", "wgrad")].size == params_bytes["all-reduce"]
    for pass_ in ("fwd", "dgrad"):
        gather = sharded[("dp_gather", pass_)]
        assert gather.collective == "all-gather" and gather.share == 1.0
        assert gather.size == pytest.approx(params_bytes["all-reduce"] / 2)  # 2 B against 4 B
    # Megatron's distributed optimizer: reduce-scatter and all-gather, once per step.
    megatron = comms(target(data_parallel=8, global_batch=64, framework="megatron"))
    assert megatron[("dp_reduce", "wgrad")].collective == "reduce-scatter"
    assert megatron[("dp_gather", "fwd")].share == 1 / 8


def test_context_parallel_ring_exchange() -> None:
    ops = comms(target(cp=4, tp=2))
    head_dim = H // HEADS
    # Each GPU's keys and values: s/c tokens, its KV heads (8 / tp 2), head dim, bf16.
    kv = 1 * (SEQ // 4) * 2 * (KV // 2) * head_dim * 2
    fwd, bwd = ops[("cp_exchange", "fwd")], ops[("cp_exchange", "dgrad")]
    assert fwd.size == kv and fwd.wire_bytes == 3 * kv and fwd.count == LAYERS
    assert bwd.wire_bytes == 2 * 3 * kv  # the keys and values, then their gradients
    assert fwd.collective == "send-recv" and fwd.group == 4
    # The tensor-parallel activations are s/c tokens long too.
    assert ops[("tp_reduce", "fwd")].size == (SEQ // 4) * H * 2


def test_expert_parallel_all_to_all() -> None:
    moe = llama(experts=8, experts_per_token=2)
    ops = comms(target(ep=4), moe)
    op = ops[("ep_all_to_all", "fwd")]
    assert op.collective == "all-to-all" and op.group == 4
    assert op.size == SEQ * 2 * H * 2  # each token to its two experts, bf16
    assert op.count == 2 * LAYERS  # dispatch and combine, each MoE layer


def test_recompute_modes_rerun_what_the_frameworks_rerun() -> None:
    config = llama()

    def flops(recompute: str) -> tuple[float, float, float]:
        step = step_time(config, target(recompute=recompute))
        redo = [e for e in step.gemms if e.gemm.pass_ == "recompute"]
        attention = sum(e.time.flops * e.gemm.count for e in redo if e.gemm.kind == "flash")
        linear = sum(e.time.flops * e.gemm.count for e in redo if e.gemm.kind != "flash")
        fwd_linear = sum(
            e.time.flops * e.gemm.count
            for e in step.gemms
            if e.gemm.pass_ == "fwd" and e.gemm.kind != "flash" and e.gemm.name != "logits"
        )
        return attention, linear, fwd_linear

    attention, linear, fwd_linear = flops("full")
    # Full: a whole forward of every layer again (the logit layer is outside the layers).
    assert linear == pytest.approx(fwd_linear) and attention > 0
    # Selective (Megatron): the attention core only.
    s_attention, s_linear, _ = flops("selective")
    assert s_attention == pytest.approx(attention) and s_linear == 0
    # None: nothing.
    assert flops("none")[:2] == (0, 0)
    # The step's model FLOPs do not count recomputation; its time does.
    none, full = (step_time(config, target(recompute=r)) for r in ("none", "full"))
    assert full.flops == none.flops and full.total_s > none.total_s
    # Recomputing a layer under tensor parallelism reduces its outputs again.
    tp_full = comms(target(tp=2, recompute="full"))
    assert tp_full[("tp_reduce", "recompute")].count == 2 * LAYERS
    assert ("tp_reduce", "recompute") not in comms(target(tp=2, recompute="selective"))
