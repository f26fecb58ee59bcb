"""The GEMMs of one training or inference step of a transformer, per GPU.

Notation (Anthony et al. 2024): h hidden, a heads, g KV heads, d head dim, f FFN width,
v vocab, L layers, b micro-batch, s sequence, t tensor-parallel size, T = b·s tokens.

Per layer (Megatron-style tensor parallelism: column-parallel QKV/up/gate split N by t,
row-parallel output/down split K by t, a/t heads per GPU):

====================  ========  ==================  ========  =================
op                    M         N                   K         batch
====================  ========  ==================  ========  =================
qkv                   T         (a+2g)·d/t          h
attention (flash)     s         s                   d*        b·a/t   (* padded)
attn_scores           s         s                   d         b·a/t   (unfused)
attn_values           s         d                   s         b·a/t   (unfused)
attn_out              T         h                   a·d/t
mlp_up, mlp_gate      T         f/t                 h
mlp_down              T         h                   f/t
router                T         E                   h                 (MoE)
experts_up            T·k/E     (1 or 2)·f_e/t      h         E       (MoE)
experts_down          T·k/E     h                   f_e/t     E       (MoE)
logits (once)         T         v/t                 h
====================  ========  ==================  ========  =================

Training adds, for each GEMM C = A·B, the dgrad GEMM dA = dC·Bᵀ (M×K from M×N by N×K) and the
wgrad GEMM dB = Aᵀ·dC (K×N from K×M by M×N); flash attention's backward is one kernel
(``pass_ = "dgrad"``). Prefill is the forward pass only; decode is one token per sequence
(M = b) with attention reading a KV cache of ``target.seq_len`` positions as batched GEMVs.

With MoE (``experts`` > 1) every layer's MLP is replaced by the experts; with fp8 the linear
layers run in fp8 and attention and logits in bf16 (as Transformer Engine does).

A parallel step is timed on one GPU (`StepShape`): pipeline parallelism gives it ⌈L/p⌉ layers
(the last stage, which also runs the logit layer: the slowest stage sets the pipeline's pace);
context parallelism gives it s/c of each sequence's tokens, whose queries attend to all s keys
(the causal work balanced over the c GPUs, as Megatron/Transformer Engine and torchtitan split
the sequence into 2c chunks). What recomputation reruns (``target.recompute``) is added as
``pass_ = "recompute"``: every forward GEMM but the logits (``full``), those of every other layer
(``layer``), every other matmul (``op``: half of each linear GEMM's calls; attention is saved), or
the attention kernel alone (``selective``: Megatron's core-attention recompute, Korthikanti et
al. 2022, arXiv:2205.05198, Section 5).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from shapelint.core.model import Dim, ModelConfig, Target
from shapelint.perf.gemm import AContig, BContig

Pass = Literal["fwd", "dgrad", "wgrad", "recompute"]
Kind = Literal["gemm", "flash"]

# Head dims flash-attention compiles kernels for; others run at the next one up
# (flash-attention's hdim dispatch: 32, 64, 96, 128, 160, 192, 224, 256).
FLASH_HEAD_DIMS: tuple[int, ...] = (32, 64, 96, 128, 160, 192, 224, 256)


@dataclass(frozen=True)
class Gemm:
    """One GEMM (or fused attention kernel) of a step, called ``count`` times per step.

    ``pass_`` is ``fwd``, ``dgrad`` or ``wgrad`` (``pass`` is a Python keyword).
    ``kind == "flash"`` is a flash-attention kernel: M = N = s, K = the padded head dim,
    ``head_dim`` the real one; its time and FLOPs are those of the QKᵀ and P·V products (and
    their gradients for ``dgrad``), see `shapelint.perf.estimate.op_time`.
    """

    name: str
    pass_: Pass
    m: int
    n: int
    k: int
    batch: int = 1
    count: int = 1
    dtype: str = "bf16"
    a_contig: AContig = "k"
    b_contig: BContig = "k"
    kind: Kind = "gemm"
    head_dim: int = 0
    # The attention kernel of a flash op (flash2, flash3, cudnn, sdpa), resolved per GPU.
    kernel: str = ""
    # A flash op's sliding window: the keys each query attends to (0: all earlier positions).
    window: int = 0


# Kernels that skip the key blocks left of a sliding window: FlashAttention-2 and -3 start each
# query block's loop at n_block_min = (m_block·kBlockM + seqlen_k − seqlen_q −
# window_size_left) / kBlockN (flash-attention csrc/flash_attn/src/flash_fwd_kernel.h, and
# hopper/ for FA3). cuDNN and PyTorch SDPA are timed over the whole causal triangle (an SDPA
# call with a window passes a mask, whose kernels compute every block).
WINDOW_KERNELS = frozenset({"flash2", "flash3"})


def attention_kernel(target: Target) -> str:
    """The fused attention kernel ``target`` runs: its ``attention`` choice, where ``flash``
    means the GPU's default (``default_flash_kernel`` in the GPU table: FlashAttention-3 on
    Hopper, FlashAttention-2 elsewhere; FA3 is Hopper-only, so it falls back to FA2 on GPUs
    whose default it is not)."""
    choice = target.attention
    default = target.gpu.default_flash_kernel
    if choice == "flash":
        return default
    if choice == "flash3" and default != "flash3":
        return "flash2"
    return choice


def _split(x: int, t: int) -> int:
    """x divided by t, rounded up (a split that does not divide still runs the bigger part)."""
    return -(-x // t)


@dataclass(frozen=True)
class StepShape:
    """What one GPU of a (parallel) step works on: ``b`` sequences of ``s`` tokens (s/c of each
    sequence under context parallelism; 1 in decode), whose attention sees ``keys`` positions
    (the whole sequence; the KV cache in decode), tensor-parallel ``t``, and ``stage_layers`` of
    the model's ``layers`` (one pipeline stage)."""

    b: int
    s: int
    keys: int
    t: int
    layers: int
    stage_layers: int

    @property
    def tokens(self) -> int:
        """Tokens of this GPU's micro-batch: b·s."""
        return self.b * self.s

    def count(self, per_model: int) -> int:
        """Calls on this stage of an op the whole model calls ``per_model`` times (once per
        layer of some kind): its share of the stage's layers, rounded."""
        if self.stage_layers >= self.layers or per_model <= 0:
            return per_model
        return max(1, round(per_model * self.stage_layers / self.layers))


def step_shape(target: Target, layers: int) -> StepShape:
    """The `StepShape` of one GPU of ``target`` for a model of ``layers`` layers."""
    decode = target.mode == "decode"
    seq = max(1, target.seq_len)
    cp = 1 if decode else max(1, target.cp)
    pp = max(1, target.pp) if target.mode == "train" else 1
    return StepShape(
        b=max(1, target.micro_batch),
        s=1 if decode else _split(seq, cp),
        keys=seq,
        t=max(1, target.tp),
        layers=layers,
        stage_layers=_split(layers, pp),
    )


def stated_micro_batches(config: ModelConfig, target: Target) -> int | None:
    """Micro-batches per optimizer step on one GPU: the global batch / (micro-batch ·
    data-parallel) when the target has a global batch, else the config's gradient
    accumulation; None when neither is known."""
    if target.global_batch:
        per_step = max(1, target.micro_batch) * max(1, target.data_parallel)
        return max(1, target.global_batch // per_step)
    accum = config.int(Dim.GRAD_ACCUM)
    return max(1, accum) if accum else None


def micro_batches(config: ModelConfig, target: Target) -> int:
    """`stated_micro_batches`, or 1 when unknown (the optimizer's time then falls on one)."""
    return stated_micro_batches(config, target) or 1


# What each recompute mode reruns of the forward, by op kind ("linear": a projection GEMM;
# "attention": the attention kernel, or its unfused products and softmax; "elementwise": norms,
# activations, rotary, residuals, dropout), as the share of the op's calls.
RECOMPUTED: dict[str, dict[str, float]] = {
    "none": {},
    "selective": {"attention": 1.0},
    "op": {"linear": 0.5, "elementwise": 1.0},
    "layer": {"linear": 0.5, "attention": 0.5, "elementwise": 0.5},
    "full": {"linear": 1.0, "attention": 1.0, "elementwise": 1.0},
}
ATTENTION_OPS = frozenset({"attention", "window_attn", "attn_scores", "attn_values", "softmax"})


def recomputed_count(mode: str, kind: str, count: int) -> int:
    """Calls of a forward op of ``kind`` (linear, attention, elementwise) called ``count`` times
    that recompute ``mode`` reruns (a half share rounded up)."""
    share = RECOMPUTED.get(mode, {}).get(kind, 0.0)
    return 0 if share <= 0 or count <= 0 else max(1, -(-round(count * share * 2) // 2))


def flash_head_dim(d: int) -> int:
    """The head dim flash-attention runs for ``d``: the next compiled size (multiples of 32
    above 256, where flash-attention has no kernel, as a stand-in)."""
    for size in FLASH_HEAD_DIMS:
        if d <= size:
            return size
    return _split(d, 32) * 32


def backward(g: Gemm) -> tuple[Gemm, Gemm]:
    """The dgrad and wgrad GEMMs of a forward GEMM C[M×N] = A[M×K]·B[K×N].

    dgrad dA[M×K] = dC[M×N]·Bᵀ: reduces over N; dC is contiguous along N (its K), Bᵀ along
    whatever B was not. wgrad dB[K×N] = Aᵀ[K×M]·dC[M×N]: reduces over M.
    """
    dgrad = Gemm(
        g.name,
        "dgrad",
        m=g.m,
        n=g.k,
        k=g.n,
        batch=g.batch,
        count=g.count,
        dtype=g.dtype,
        a_contig="k",
        b_contig="n" if g.b_contig == "k" else "k",
    )
    wgrad = Gemm(
        g.name,
        "wgrad",
        m=g.k,
        n=g.n,
        k=g.m,
        batch=g.batch,
        count=g.count,
        dtype=g.dtype,
        a_contig="m" if g.a_contig == "k" else "k",
        b_contig="n",
    )
    return dgrad, wgrad


@dataclass(frozen=True)
class LayerPlan:
    """How a config's layers split into dense and MoE layers, and the MoE and MLA widths.

    DeepSeek's rule: layer i is MoE when i ≥ ``first_k_dense_replace`` and
    i % ``moe_layer_freq`` == 0; without experts every layer is dense. ``mla`` is True when
    the config has a ``kv_lora_rank`` (multi-head latent attention).
    """

    dense_layers: int
    moe_layers: int
    ffn: int
    experts: int
    top_k: int
    moe_ffn: int
    shared_experts: int
    mla: bool
    q_lora_rank: int
    kv_lora_rank: int
    rope_head_dim: int
    v_head_dim: int


# How many experts a MoE layer has, how many each token runs, and which layers are MoE.
_ROUTING = (Dim.EXPERTS, Dim.EXPERTS_PER_TOKEN, Dim.MOE_LAYER_FREQ, Dim.DENSE_LAYERS)


def layer_plan(config: ModelConfig) -> LayerPlan | None:
    """The `LayerPlan` of ``config``: None without hidden, heads and layers, or without the
    width of the MLPs it has (an unknown FFN is not timed as 4 · hidden: the estimate would
    rest on a guess), or for a hybrid whose other layers are mixers it has no cost for."""
    if config.untimed:
        return None
    h = config.int(Dim.HIDDEN)
    a = config.int(Dim.HEADS)
    layers = config.int(Dim.LAYERS)
    if h is None or a is None or layers is None:
        return None
    d = config.int(Dim.HEAD_DIM) or h // a
    if any((v := config.get(dim)) is not None and not v.known for dim in _ROUTING):
        return None  # a MoE whose routing or layout is unknown: not timed as a guess
    stated_ffn = config.int(Dim.FFN)
    experts = config.int(Dim.EXPERTS) or 0
    moe_layers = 0
    if experts > 1:
        first = config.int(Dim.DENSE_LAYERS) or 0
        freq = config.int(Dim.MOE_LAYER_FREQ) or 1
        moe_layers = sum(1 for i in range(min(first, layers), layers) if i % freq == 0)
    moe_ffn = config.int(Dim.MOE_FFN) or stated_ffn
    if (layers > moe_layers and stated_ffn is None) or (moe_layers and moe_ffn is None):
        return None
    kv_lora = config.int(Dim.KV_LORA_RANK) or 0
    rope = config.int(Dim.ROPE_HEAD_DIM) or 0
    return LayerPlan(
        dense_layers=layers - moe_layers,
        moe_layers=moe_layers,
        ffn=stated_ffn or 0,
        experts=experts,
        top_k=min(config.int(Dim.EXPERTS_PER_TOKEN) or 1, max(1, experts)),
        moe_ffn=moe_ffn or 0,
        shared_experts=config.int(Dim.SHARED_EXPERTS) or 0,
        mla=kv_lora > 0,
        q_lora_rank=config.int(Dim.Q_LORA_RANK) or 0,
        kv_lora_rank=kv_lora,
        rope_head_dim=min(rope, d),
        v_head_dim=config.int(Dim.V_HEAD_DIM) or d,
    )


def active_experts(experts: int, top_k: int, tokens: int) -> float:
    """Experts that receive at least one of ``tokens`` tokens routing to ``top_k`` of
    ``experts`` each, in expectation under uniform routing: E·(1 − (1 − k/E)^T). At most
    min(E, T·k); all E once T·k is well above E (training), k for one decode token."""
    if experts <= 1:
        return 1.0
    return experts * (1.0 - (1.0 - top_k / experts) ** tokens)


def _mla_gemms(
    config: ModelConfig, target: Target, plan: LayerPlan, shape: StepShape, lin: str, other: str
) -> list[Gemm]:
    """Multi-head latent attention (DeepSeek-V2/V3): low-rank q and kv projections, the
    rope/nope split of the head dim, ``v_head_dim`` values. Training and prefill expand the
    latent kv per head and run flash attention at the q/k head dim; decode uses the absorbed
    form: queries move into the kv_lora latent space and attend over the cached latent
    (kv_lora + rope per position, shared by every head)."""
    h = config.int(Dim.HIDDEN) or 0
    a = config.int(Dim.HEADS) or 1
    d = config.int(Dim.HEAD_DIM) or h // a
    b, tokens, ctx = shape.b, shape.tokens, shape.keys
    count = shape.count(shape.layers)
    decode = target.mode == "decode"
    heads = _split(a, shape.t)
    r, c, rope, dv = plan.q_lora_rank, plan.kv_lora_rank, plan.rope_head_dim, plan.v_head_dim
    nope = d - rope
    out: list[Gemm] = []
    if r > 0:
        out.append(Gemm("q_down", "fwd", tokens, r, h, count=count, dtype=lin))
        out.append(Gemm("q_up", "fwd", tokens, heads * d, r, count=count, dtype=lin))
    else:
        out.append(Gemm("q_proj", "fwd", tokens, heads * d, h, count=count, dtype=lin))
    out.append(Gemm("kv_down", "fwd", tokens, c + rope, h, count=count, dtype=lin))
    if decode:
        # Absorbed: q_nope·W_uk per head into the latent, scores and values over the cached
        # latent (M = the a/t heads, like one KV group), then W_uv per head back to v.
        out.append(Gemm("q_absorb", "fwd", b, c, nope, heads, count, other))
        out.append(Gemm("attn_scores", "fwd", heads, ctx, c + rope, b, count, other))
        out.append(Gemm("attn_values", "fwd", heads, c, ctx, b, count, other, b_contig="n"))
        out.append(Gemm("v_absorb", "fwd", b, dv, c, heads, count, other))
    else:
        # The expanded keys and values of all s positions (context parallelism exchanges them).
        out.append(Gemm("kv_up", "fwd", tokens, heads * (nope + dv), c, count=count, dtype=lin))
        out.append(_attention(target, shape, d, b * heads, count, other))
    out.append(Gemm("attn_out", "fwd", tokens, h, heads * dv, count=count, dtype=lin))
    return out


def _attention(
    target: Target,
    shape: StepShape,
    d: int,
    batch: int,
    count: int,
    dtype: str,
    window: int = 0,
) -> Gemm:
    """Training/prefill attention for one layer kind: a flash kernel (M = this GPU's s queries,
    N = the ``keys`` they attend to), or (unfused) the QKᵀ product (its P·V partner is added by
    the caller). ``window`` (sliding-window layers) counts only for kernels that skip the blocks
    outside it (`WINDOW_KERNELS`)."""
    s, keys = shape.s, shape.keys
    if target.attention != "unfused":
        kernel = attention_kernel(target)
        window = window if kernel in WINDOW_KERNELS and 0 < window < keys else 0
        return Gemm(
            "window_attn" if window else "attention",
            "fwd",
            s,
            keys,
            flash_head_dim(d),
            batch,
            count,
            dtype,
            kind="flash",
            head_dim=d,
            kernel=kernel,
            window=window,
        )
    return Gemm("attn_scores", "fwd", s, keys, d, batch, count, dtype)


def _op_kind(g: Gemm) -> str:
    """``attention`` for the attention kernel and its unfused products, else ``linear``."""
    return "attention" if g.kind == "flash" or g.name in ATTENTION_OPS else "linear"


def step_gemms(config: ModelConfig, target: Target) -> list[Gemm]:
    """The GEMMs of one step of ``config`` on one GPU of ``target`` (one pipeline stage, its
    share of a context-parallel sequence; `StepShape`); [] when the config lacks hidden, heads,
    layers or the FFN width (no estimate is possible)."""
    plan = layer_plan(config)
    h = config.int(Dim.HIDDEN)
    a = config.int(Dim.HEADS)
    layers = config.int(Dim.LAYERS)
    if plan is None or h is None or a is None or layers is None:
        return []
    d = config.int(Dim.HEAD_DIM) or h // a
    if d <= 0:
        return []
    g = config.int(Dim.KV_HEADS) or a
    vocab = config.vocab_value
    v = vocab.as_int if vocab is not None else None
    gated = config.gated_mlp is True

    shape = step_shape(target, layers)
    t, b, s, ctx = shape.t, shape.b, shape.s, shape.keys
    decode = target.mode == "decode"
    tokens = shape.tokens
    n_layers = shape.count(layers)
    lin = target.dtype
    # fp8 recipes keep attention and the logit layer in bf16.
    other = "bf16" if target.dtype == "fp8" else target.dtype
    heads = _split(a, t)
    kv_heads = _split(g, t)
    # Sliding-window layers (Mistral, Gemma 2/3, gpt-oss …): their attention sees `window` keys.
    window = config.int(Dim.SLIDING_WINDOW) or 0
    windowed = shape.count(min(layers, config.int(Dim.WINDOW_LAYERS) or 0)) if window else 0
    windowed = min(windowed, n_layers)

    fwd: list[Gemm] = []
    if plan.mla:
        fwd.extend(_mla_gemms(config, target, plan, shape, lin, other))
    else:
        fwd.append(
            Gemm("qkv", "fwd", tokens, _split((a + 2 * g) * d, t), h, count=n_layers, dtype=lin)
        )
        if decode:
            # Each KV head's cache is read once for the a/g query heads that share it; a
            # sliding-window layer's cache holds the last `window` positions only.
            group = max(1, a // g)
            split = windowed if window < ctx else 0
            for count, keys in ((n_layers - split, ctx), (split, window)):
                if count:
                    fwd.append(
                        Gemm("attn_scores", "fwd", group, keys, d, b * kv_heads, count, other)
                    )
                    fwd.append(
                        Gemm(
                            "attn_values",
                            "fwd",
                            group,
                            d,
                            keys,
                            b * kv_heads,
                            count,
                            other,
                            b_contig="n",
                        )
                    )
        else:
            skips = target.attention != "unfused" and attention_kernel(target) in WINDOW_KERNELS
            split = windowed if skips and window < ctx else 0
            if n_layers - split:
                fwd.append(_attention(target, shape, d, b * heads, n_layers - split, other))
            if split:
                fwd.append(_attention(target, shape, d, b * heads, split, other, window))
            if target.attention == "unfused":
                fwd.append(
                    Gemm("attn_values", "fwd", s, d, ctx, b * heads, n_layers, other, b_contig="n")
                )
        fwd.append(Gemm("attn_out", "fwd", tokens, h, _split(a * d, t), count=n_layers, dtype=lin))

    if plan.moe_layers:
        n = shape.count(plan.moe_layers)
        experts, top_k, f_e = plan.experts, plan.top_k, plan.moe_ffn
        # Only the experts some token routes to run; each gets its share of the T·k rows.
        active = active_experts(experts, top_k, tokens)
        batch = max(1, min(experts, round(active)))
        per_expert = max(1, -(-(tokens * top_k) // batch))
        fwd.append(Gemm("router", "fwd", tokens, experts, h, count=n, dtype=other))
        width = (2 if gated else 1) * _split(f_e, t)
        fwd.append(Gemm("experts_up", "fwd", per_expert, width, h, batch, n, lin))
        fwd.append(Gemm("experts_down", "fwd", per_expert, h, _split(f_e, t), batch, n, lin))
        if plan.shared_experts:
            f_s = _split(plan.shared_experts * f_e, t)
            fwd.append(Gemm("shared_up", "fwd", tokens, f_s, h, count=n, dtype=lin))
            if gated:
                fwd.append(Gemm("shared_gate", "fwd", tokens, f_s, h, count=n, dtype=lin))
            fwd.append(Gemm("shared_down", "fwd", tokens, h, f_s, count=n, dtype=lin))
    if plan.dense_layers:
        n, f = shape.count(plan.dense_layers), plan.ffn
        fwd.append(Gemm("mlp_up", "fwd", tokens, _split(f, t), h, count=n, dtype=lin))
        if gated:
            fwd.append(Gemm("mlp_gate", "fwd", tokens, _split(f, t), h, count=n, dtype=lin))
        fwd.append(Gemm("mlp_down", "fwd", tokens, h, _split(f, t), count=n, dtype=lin))

    if v is not None and v > 0 and config.has_lm_head is not False:  # encoders: no logit layer
        fwd.append(Gemm("logits", "fwd", tokens, _split(v, t), h, count=1, dtype=other))

    if target.mode != "train":
        return fwd
    out: list[Gemm] = list(fwd)
    for gemm in fwd:
        if gemm.kind == "flash":
            out.append(replace(gemm, pass_="dgrad"))
        else:
            out.extend(backward(gemm))
    # Recomputation reruns (part of) the layers' forward in the backward; the logit layer is
    # outside the checkpointed layers.
    for gemm in fwd:
        if gemm.name == "logits":
            continue
        count = recomputed_count(target.recompute, _op_kind(gemm), gemm.count)
        if count:
            out.append(replace(gemm, pass_="recompute", count=count))
    return out
