"""The memory-bound operations of a step, around its GEMMs.

A transformer step is more than its GEMMs: norms, activations, the gated-MLP product, residual
adds, rotary embedding, the softmax of unfused attention, the embedding lookup and its
gradient, the cross-entropy over the vocab, and in training the optimizer step (the
collectives of a parallel step are `shapelint.perf.communication`'s). Each is a named `MemOp`
with the bytes it moves; its time is
those bytes at the GPU's achievable streaming bandwidth (``gpu.memory_stream_fraction`` of the
datasheet figure, per GPU family, measured: the GPU table) plus a per-kernel floor.

Bytes are counted per element from the kernels a framework launches: one read or write of an
activation element costs ``e`` bytes (2 in bf16/fp16/fp8 recipes, whose activations are bf16;
4 in fp32/tf32). A fused kernel reads its inputs and writes its outputs once; the unfused
form is the PyTorch eager sequence named in each op's comment. Which ops are fused is the
target's ``fused`` option (`fusions`): ``default`` is what a Megatron-LM training run does
(TE/Apex fused norms, ``bias_swiglu_fusion``, ``apply_rope_fusion``, ``masked_softmax_fusion``,
``bias_dropout_fusion``, FusedAdam; ``cross_entropy_loss_fusion`` off), ``none`` is plain
PyTorch eager (Hugging Face modelling code with ``torch.optim.AdamW`` foreach), ``all``
everything.

Tensor parallelism splits every activation by t (Megatron's sequence parallelism, used with
tensor parallelism in current runs, splits the norm/residual/dropout regions too); the GPU runs
its pipeline stage's layers and its share of a context-parallel sequence (`StepShape`), and
recomputation reruns the forward ops its mode names (`RECOMPUTED`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from shapelint.core.model import Dim, ModelConfig, Target
from shapelint.hardware.gpus import GPU
from shapelint.perf.attention import UNFUSED
from shapelint.perf.fusion import fusions
from shapelint.perf.workload import (
    ATTENTION_OPS,
    LayerPlan,
    Pass,
    layer_plan,
    micro_batches,
    recomputed_count,
    step_shape,
)

# GPU-side floor of one small kernel (assumed, not fitted: the duration of an empty
# elementwise kernel on the GPU timeline is 1-3 µs on these GPUs; host launch cost overlaps
# with the previous kernel in a busy training step).
KERNEL_FLOOR_S = 2.0e-6

# AdamW bytes per parameter. Fused (one multi-tensor kernel, FusedAdam / torch fused=True):
# reads param, grad, exp_avg, exp_avg_sq in fp32 (16 B), writes param, exp_avg, exp_avg_sq
# (12 B); mixed precision also writes the bf16/fp16 copy of the param (2 B). Unfused (foreach
# ops of torch.optim.AdamW): exp_avg.lerp_ (12), exp_avg_sq.mul_ (8), .addcmul_ (12),
# param.mul_ for weight decay (8), sqrt (8), two scalar ops on the denominator (16),
# param.addcdiv_ (16) = 80 B, plus the low-precision copy (read 4, write 2).
ADAMW_BYTES: Mapping[tuple[bool, bool], float] = MappingProxyType(
    {(True, True): 30.0, (True, False): 28.0, (False, True): 86.0, (False, False): 80.0}
)


@dataclass(frozen=True)
class MemOp:
    """One memory-bound op of a step, called ``count`` times; ``bytes`` per call.

    ``kernels`` is how many kernel launches one call is. ``overlap_s`` is time this op can hide
    behind (the backward pass, for the gradient reduction): only the excess counts.
    ``note`` says how the bytes were counted.
    """

    name: str
    pass_: Pass
    bytes: float
    count: int = 1
    kernels: int = 1
    link_gbs: float | None = None
    overlap_s: float = 0.0
    note: str = ""


@dataclass(frozen=True)
class MemOpTime:
    """The model's time of one `MemOp` call and what bounds it."""

    time_s: float
    exposed_s: float
    bandwidth_gbs: float


# Frameworks whose tensor parallelism runs on [batch, seq, hidden] activations through PyTorch's
# functional collectives (torchtitan's DTensor plans), eager or compiled.
BATCH_FIRST_TP = frozenset({"pytorch", "compile"})


def memop_time(op: MemOp, gpu: GPU, scale: float = 1.0) -> MemOpTime:
    """Time of one call of ``op``: bytes at the achievable bandwidth (or over the link) plus
    the kernel floor, times ``scale``; ``exposed_s`` is what remains after ``overlap_s``."""
    # The scores of unfused attention stream slower than a plain copy (measured, `UNFUSED`).
    local = gpu.mem_bw_gbs * gpu.memory_stream_fraction * UNFUSED.efficiency(op.name, op.pass_)
    bandwidth = op.link_gbs if op.link_gbs is not None else local
    time_s = (op.bytes / (bandwidth * 1e9) + op.kernels * KERNEL_FLOOR_S) * scale
    exposed = max(0.0, time_s - op.overlap_s)
    return MemOpTime(time_s=time_s, exposed_s=exposed, bandwidth_gbs=bandwidth)


def activation_bytes(dtype: str) -> int:
    """Bytes of one activation element: fp8 recipes keep activations in bf16."""
    return 4 if dtype in ("fp32", "tf32") else 2


def parameter_count(config: ModelConfig) -> int | None:
    """Parameters of ``config`` from its dims (the embedding and logit matrices both counted:
    whether they are tied is not known), None without hidden, heads and layers."""
    plan = layer_plan(config)
    h = config.int(Dim.HIDDEN)
    a = config.int(Dim.HEADS)
    layers = config.int(Dim.LAYERS)
    if plan is None or h is None or a is None or layers is None:
        return None
    d = config.int(Dim.HEAD_DIM) or h // a
    g = config.int(Dim.KV_HEADS) or a
    if plan.mla:
        r, c, rope, dv = plan.q_lora_rank, plan.kv_lora_rank, plan.rope_head_dim, plan.v_head_dim
        q = r * (h + a * d) if r else h * a * d
        attn = q + h * (c + rope) + c * a * (d - rope + dv) + a * dv * h
    else:
        attn = h * (a + 2 * g) * d + a * d * h
    mats = 3 if config.gated_mlp is True else 2
    dense = plan.dense_layers * mats * h * plan.ffn
    moe = plan.moe_layers * (
        (plan.experts + plan.shared_experts) * mats * h * plan.moe_ffn + h * plan.experts
    )
    vocab = config.vocab_value
    v = vocab.as_int if vocab is not None else None
    return layers * (attn + 4 * h) + dense + moe + 2 * (v or 0) * h


class _Step:
    """What sizes the memory-bound ops of one step of a config on one GPU of a target: its
    dims, this stage's layers, the bytes per activation element, and the elements of the
    activations the ops stream (this GPU's tensor-parallel share). (Plain classes here: a
    dataclass costs its module's import time, on every run.)"""

    def __init__(
        self, config: ModelConfig, target: Target, plan: LayerPlan, layers: int, h: int, a: int
    ) -> None:
        self.config, self.target, self.plan, self.h, self.a = config, target, plan, h, a
        self.d = d = config.int(Dim.HEAD_DIM) or h // a
        self.g = g = config.int(Dim.KV_HEADS) or a
        self.gated = config.gated_mlp is True
        self.fused = fusions(target.fused)
        self.train = target.mode == "train"
        self.shape = shape = step_shape(target, layers)
        t, tokens = shape.t, shape.tokens
        self.n_layers = shape.count(layers)
        self.e = activation_bytes(target.dtype)
        self.hidden = tokens * h / t  # elements of one hidden-sized activation on this GPU
        # MLP activations: dense layers at the FFN width; MoE layers at the expert width for
        # each token's top-k experts and the shared ones.
        self.ffn = tokens * plan.ffn / t
        self.expert_ffn = tokens * (plan.top_k + plan.shared_experts) * plan.moe_ffn / t
        # Rotary touches queries and keys (MLA: only the rope part, the key's shared by heads).
        heads_roped = (a + 1) * plan.rope_head_dim if plan.mla else (a + g) * d
        self.qk = tokens * heads_roped / t


class _Adder:
    """Appends an op's passes to ``ops``: the forward; in training the backward, and the
    recomputed forward where the layers are checkpointed."""

    __slots__ = ("ops", "recompute", "train")

    def __init__(self, ops: list[MemOp], train: bool, recompute: str) -> None:
        self.ops, self.train, self.recompute = ops, train, recompute

    def __call__(
        self,
        name: str,
        elems: float,
        fwd: float,
        bwd: float,
        count: int,
        kernels: tuple[int, int] = (1, 1),
        note: str = "",
    ) -> None:
        ops, train = self.ops, self.train
        ops.append(MemOp(name, "fwd", elems * fwd, count, kernels[0], note=note))
        if train:
            ops.append(MemOp(name, "dgrad", elems * bwd, count, kernels[1], note=note))
        # Recomputation reruns the layers' ops, not those outside the checkpointed layers.
        if train and name not in (
            "final_norm",
            "cross_entropy",
            "position_add",
            "embedding_dropout",
        ):
            kind = (
                "attention"
                if name in ATTENTION_OPS or name == "attention_dropout"
                else ("elementwise")
            )
            redo = recomputed_count(self.recompute, kind, count)
            if redo:
                ops.append(MemOp(name, "recompute", elems * fwd, redo, kernels[0], note=note))


def step_memops(config: ModelConfig, target: Target) -> list[MemOp]:
    """The memory-bound ops of one step of ``config`` on one GPU of ``target``."""
    h = config.int(Dim.HIDDEN)
    a = config.int(Dim.HEADS)
    layers = config.int(Dim.LAYERS)
    if h is None or a is None or layers is None:
        return []
    plan = layer_plan(config)
    if plan is None:
        return []
    st = _Step(config, target, plan, layers, h, a)
    ops: list[MemOp] = []
    add = _Adder(ops, st.train, target.recompute)
    _layer_memops(st, add)
    _vocab_memops(st, ops, add)
    _fp8_cast_memops(st, ops)
    if st.train:
        _training_memops(st, ops)
    return ops


def _layer_memops(st: _Step, add: _Adder) -> None:
    """The layers' norms, residual adds, dropout, rotary, MLP activations and (unfused
    attention) softmax."""
    config, target, plan, shape, fused = st.config, st.target, st.plan, st.shape, st.fused
    e, hidden, n_layers, a, gated, train = st.e, st.hidden, st.n_layers, st.a, st.gated, st.train
    t, b, s, keys = shape.t, shape.b, shape.s, shape.keys
    qk, ffn, expert_ffn = st.qk, st.ffn, st.expert_ffn
    # Two norms per layer plus the final one. Fused (TE/Apex LayerNorm/RMSNorm): read x, write
    # y; backward reads x and dy, writes dx. Unfused RMSNorm (HF eager): x.float(), pow, mean,
    # rsqrt, mul, .to(dtype), mul by weight: 28 + 4e bytes per element; backward twice that.
    if "norm" in fused:
        norm_f, norm_b, norm_k = 2.0 * e, 3.0 * e, (1, 1)
        note = "fused norm: read x, write y (bwd: read x, dy; write dx)"
    else:
        norm_f, norm_b, norm_k = 28.0 + 4 * e, 2 * (28.0 + 4 * e), (7, 10)
        note = "eager RMSNorm: fp32 upcast, pow, mean, rsqrt, mul, downcast, weight mul"
    add("norm", hidden, norm_f, norm_b, 2 * n_layers, norm_k, note)
    add("final_norm", hidden, norm_f, norm_b, 1, norm_k, note)
    # Two residual adds per layer: read two, write one; the backward accumulates the two
    # gradient paths the same way.
    add("residual_add", hidden, 3.0 * e, 3.0 * e, 2 * n_layers, note="read 2, write 1")
    # Dropout, in training where the config states p > 0 (ModelConfig.dropout). Hidden
    # dropout on the two residual branches of each layer, embedding dropout once. PyTorch
    # eager (native_dropout): read x, write y and a 1-byte mask; backward: read dy and the
    # mask, write dx. Fused into the residual add (Megatron's bias_dropout_add_fusion): only
    # the mask is written and read back, in no kernel of its own.
    drop = config.dropout if train else {}
    if "dropout" in fused:
        drop_b, drop_k, drop_note = 1.0, (0, 0), "fused into the residual add: 1-byte mask"
    else:
        drop_b, drop_k, drop_note = 2.0 * e + 1, (1, 1), "eager: read x, write y and a mask"
    if "hidden" in drop:
        add("dropout", hidden, drop_b, drop_b, 2 * n_layers, drop_k, drop_note)
    if "embedding" in drop:
        add("embedding_dropout", hidden, 2.0 * e + 1, 2.0 * e + 1, 1, note="eager dropout")
    # Attention dropout runs inside a flash kernel (Philox, no mask in memory); unfused
    # attention drops the b·(a/t)·s² probabilities with a mask of its own.
    if "attention" in drop and target.attention == "unfused" and target.mode != "decode":
        probs = b * -(-a // t) * s * keys
        add("attention_dropout", probs, 2.0 * e + 1, 2.0 * e + 1, n_layers, note="eager dropout")
    # Rotary embedding of queries and keys. Fused (apply_rope_fusion): read, write. Unfused
    # (HF: q·cos + rotate_half(q)·sin): neg + cat (4e), two muls (4e), add (3e).
    positions = config.position_embedding or "rope"
    if positions != "rope":
        pass
    elif "rope" in fused:
        add("rotary", qk, 2.0 * e, 2.0 * e, n_layers, note="fused rope: read q/k, write")
    else:
        add(
            "rotary",
            qk,
            11.0 * e,
            11.0 * e,
            n_layers,
            (4, 4),
            "eager rotate_half: neg, cat, 2 mul, add",
        )
    # MLP activation. Gated: fused SwiGLU reads gate and up, writes the product (backward:
    # reads gate, up, dy; writes dgate, dup); eager silu then mul is 5e forward, 8e backward.
    # Plain GELU: read, write (backward: read x, dy; write dx).
    for name, elems, count in (
        ("", ffn, shape.count(plan.dense_layers)),
        ("expert_", expert_ffn, shape.count(plan.moe_layers)),
    ):
        if not count:
            continue
        if gated and "swiglu" in fused:
            add(f"{name}swiglu", elems, 3.0 * e, 5.0 * e, count, note="fused silu(gate)·up")
        elif gated:
            add(f"{name}swiglu", elems, 5.0 * e, 8.0 * e, count, (2, 2), "eager silu, then mul")
        else:
            add(f"{name}activation", elems, 2.0 * e, 3.0 * e, count, note="GELU: read, write")
    # Unfused attention materializes the b·(a/t)·s² scores. Fused scale-mask-softmax: read
    # scores, write probs (backward: read probs, dprobs; write dscores). Eager: scale, mask,
    # softmax as three kernels (2e each forward; the softmax's backward 3e). The softmax and
    # the mask run at their measured share of the streaming bandwidth (`UNFUSED`).
    if target.attention == "unfused" and target.mode != "decode":
        scores = b * -(-a // t) * s * keys
        if "softmax" in fused:
            add("softmax", scores, 2.0 * e, 3.0 * e, n_layers, note="fused scale-mask-softmax")
        else:
            add("attention_scale", scores, 2.0 * e, 2.0 * e, n_layers, note="eager scale")
            add("attention_mask", scores, 2.0 * e, 2.0 * e, n_layers, note="eager causal mask")
            add("softmax", scores, 2.0 * e, 3.0 * e, n_layers, note="eager softmax")


def _vocab_memops(st: _Step, ops: list[MemOp], add: _Adder) -> None:
    """Learned positions, the embedding and (training) the cross-entropy over the logits."""
    config, fused, e, hidden, h, train = st.config, st.fused, st.e, st.hidden, st.h, st.train
    t, tokens = st.shape.t, st.shape.tokens
    positions = config.position_embedding or "rope"
    vocab = config.vocab_value
    v = vocab.as_int if vocab is not None else None
    # Embedding: gather b·s rows (read, write); backward scatters into the (vocab/t)·h
    # gradient, zeroed and written in fp32 once.
    # Learned positions: the s rows of the position table added to the token rows (no vocab
    # needed: the table is max-positions × h).
    if positions == "learned":
        add("position_add", hidden, 3.0 * e, 3.0 * e, 1, note="learned positions: read 2, write 1")
    if v is not None and v > 0:
        ops.append(MemOp("embedding", "fwd", hidden * 2 * e, 1, note="gather rows: read, write"))
        if train:
            grad = tokens * h / t * 2 * e + v / t * h * 4
            ops.append(MemOp("embedding", "wgrad", grad, 1, 2, note="zero + scatter-add, fp32"))
        # Cross-entropy over the b·s × v/t logits (training only; inference takes the last
        # row). Fused (Megatron cross_entropy_loss_fusion, Liger): read logits once forward,
        # read and write them once backward. Eager (HF: logits.float() then F.cross_entropy):
        # upcast (e + 4), log_softmax (8) forward; nll grad (4), log_softmax grad (12),
        # downcast (4 + e) backward.
        if train:
            logits = tokens * v / t
            if "cross_entropy" in fused:
                add("cross_entropy", logits, 1.0 * e, 2.0 * e, 1, note="fused vocab CE")
            else:
                add("cross_entropy", logits, 12.0 + e, 20.0 + e, 1, (3, 3), "eager fp32 CE")


def _fp8_cast_memops(st: _Step, ops: list[MemOp]) -> None:
    """The casts of the linear layers' inputs and output gradients under an FP8 recipe."""
    target, plan, shape, fused, gated, train = (
        st.target,
        st.plan,
        st.shape,
        st.fused,
        st.gated,
        st.train,
    )
    h, a, d, g, expert_ffn = st.h, st.a, st.d, st.g, st.expert_ffn
    t, tokens = shape.t, shape.tokens
    # FP8 recipes cast each linear layer's input to fp8 in the forward and the gradient of its
    # output in the backward (both also transposed for the weight gradient): fused (Transformer
    # Engine's cast-transpose, folded into the norm or activation before it; torch.compile's
    # fused amax-and-cast) read 2 B and write the fp8 copy and its transpose; eager (torchao's
    # Float8Linear) adds a pass for the amax, one to cast and one to transpose. Column-parallel
    # inputs are cast before their all-gather (fp8 all-gather), so every tensor here is /t.
    if target.dtype == "fp8":
        cast, cast_k = (2.0 + 2.0, 1) if "fp8_cast" in fused else (2.0 * 2 + 1 + 2, 3)
        how = "fused cast-transpose" if "fp8_cast" in fused else "eager amax, cast, transpose"
        gate = 2 if gated else 1
        for count, inputs, grads in (
            (
                shape.count(plan.dense_layers),
                tokens * (2 * h + a * d + plan.ffn) / t,
                tokens * ((a + 2 * g) * d + 2 * h + gate * plan.ffn) / t,
            ),
            (
                shape.count(plan.moe_layers),
                tokens * (h + a * d) / t + expert_ffn / max(1, plan.moe_ffn) * (h + plan.moe_ffn),
                tokens * ((a + 2 * g) * d + h) / t
                + expert_ffn / max(1, plan.moe_ffn) * (gate * plan.moe_ffn + h),
            ),
        ):
            if not count:
                continue
            ops.append(MemOp("fp8_cast", "fwd", inputs * cast, count, 4 * cast_k, note=how))
            if train:
                ops.append(MemOp("fp8_cast", "dgrad", grads * cast, count, 4 * cast_k, note=how))
                redo = recomputed_count(target.recompute, "linear", count)
                if redo:
                    ops.append(
                        MemOp("fp8_cast", "recompute", inputs * cast, redo, 4 * cast_k, note=how)
                    )


def _training_memops(st: _Step, ops: list[MemOp]) -> None:
    """Training only: batch-first tensor parallelism's re-layouts and the optimizer step."""
    config, target, fused, e, h, n_layers = st.config, st.target, st.fused, st.e, st.h, st.n_layers
    t, tokens = st.shape.t, st.shape.tokens
    # PyTorch's functional collectives gather and scatter along dim 0; the sequence-parallel
    # collectives of a [batch, seq, hidden] activation (DTensor's tensor parallelism, as
    # torchtitan runs it) gather along dim 1 by torch.cat of the chunks and scatter after
    # torch.cat-ing them (torch/distributed/_functional_collectives.py, all_gather_tensor and
    # reduce_scatter_tensor): a copy of the whole tensor per collective. Megatron's activations
    # are [seq, batch, hidden] and need none.
    if t > 1 and target.framework in BATCH_FIRST_TP:
        whole = tokens * h  # the gathered tensor of one all-gather or reduce-scatter
        note = "torch.cat of the chunks around each sequence-parallel collective"
        for pass_ in ("fwd", "dgrad"):
            ops.append(MemOp("tp_relayout", pass_, whole * 2 * e, 4 * n_layers, note=note))
        if target.recompute in ("full", "layer"):
            redo = recomputed_count(target.recompute, "linear", 4 * n_layers)
            ops.append(MemOp("tp_relayout", "recompute", whole * 2 * e, redo, note=note))
    params = parameter_count(config) or 0
    steps = micro_batches(config, target)
    dp = max(1, target.data_parallel)
    # The optimizer updates this GPU's pipeline stage's share of the parameters (a tensor-
    # parallel shard), and a 1/dp share of them when the optimizer state is sharded (FSDP,
    # ZeRO; Megatron's distributed optimizer, `sharded_optimizer`).
    shards = dp if sharded_optimizer(target) else 1
    mixed = target.dtype not in ("fp32", "tf32")
    per_param = ADAMW_BYTES[("adamw" in fused, mixed)]
    local = params / t / max(1, target.pp) / shards
    # The optimizer runs once per global batch: its time is shared by the step's micro-batches
    # (count stays 1; bytes are the per-micro-batch share).
    ops.append(
        MemOp(
            "optimizer",
            "wgrad",
            local * per_param / steps,
            1,
            1 if "adamw" in fused else 8,
            note=f"AdamW {per_param:g} B/param, {'fused' if 'adamw' in fused else 'foreach'}",
        )
    )


def sharded_optimizer(target: Target) -> bool:
    """Whether the optimizer state is sharded over the data-parallel GPUs: FSDP/ZeRO-3
    (``sharded``) or Megatron's distributed optimizer (ZeRO-1), which NeMo's configs use
    (``optim.name: distributed_fused_adam``) and Megatron-LM's performance runs enable
    (``--use-distributed-optimizer``)."""
    return target.sharded or target.framework == "megatron"
