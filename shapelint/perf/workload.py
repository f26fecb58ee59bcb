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
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from shapelint.lint.model import Dim, ModelConfig, Target
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


def attention_kernel(target: Target) -> str:
    """The fused attention kernel ``target`` runs: its ``attention`` choice, where ``flash``
    means the GPU's default (FlashAttention-3 on Hopper, FlashAttention-2 elsewhere; FA3 is
    Hopper-only, so it falls back to FA2 on other GPUs)."""
    choice = target.attention
    hopper = target.gpu.arch == "hopper"
    if choice == "flash":
        return "flash3" if hopper else "flash2"
    if choice == "flash3" and not hopper:
        return "flash2"
    return choice


def _split(x: int, t: int) -> int:
    """x divided by t, rounded up (a split that does not divide still runs the bigger part)."""
    return -(-x // t)


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


def step_gemms(config: ModelConfig, target: Target) -> list[Gemm]:
    """The GEMMs of one step of ``config`` on one GPU of ``target``; [] when the config lacks
    hidden, heads or layers (no estimate is possible)."""
    h = config.int(Dim.HIDDEN)
    a = config.int(Dim.HEADS)
    layers = config.int(Dim.LAYERS)
    if h is None or a is None or layers is None:
        return []
    d = config.int(Dim.HEAD_DIM) or h // a
    if d <= 0:
        return []
    g = config.int(Dim.KV_HEADS) or a
    f = config.int(Dim.FFN) or 4 * h
    vocab = config.vocab_value
    v = vocab.as_int if vocab is not None else None
    experts = config.int(Dim.EXPERTS) or 0
    top_k = config.int(Dim.EXPERTS_PER_TOKEN) or 1
    f_e = config.int(Dim.MOE_FFN) or f
    gated = config.gated_mlp is True

    t = max(1, target.tp)
    b = max(1, target.micro_batch)
    decode = target.mode == "decode"
    s = 1 if decode else max(1, target.seq_len)
    ctx = max(1, target.seq_len)
    tokens = b * s
    lin = target.dtype
    # fp8 recipes keep attention and the logit layer in bf16.
    other = "bf16" if target.dtype == "fp8" else target.dtype
    heads = _split(a, t)
    kv_heads = _split(g, t)

    fwd: list[Gemm] = [
        Gemm("qkv", "fwd", tokens, _split((a + 2 * g) * d, t), h, count=layers, dtype=lin)
    ]
    if decode:
        # Each KV head's cache is read once for the a/g query heads that share it.
        group = max(1, a // g)
        fwd.append(Gemm("attn_scores", "fwd", group, ctx, d, b * kv_heads, layers, other))
        fwd.append(
            Gemm("attn_values", "fwd", group, d, ctx, b * kv_heads, layers, other, b_contig="n")
        )
    elif target.attention != "unfused":
        fwd.append(
            Gemm(
                "attention",
                "fwd",
                s,
                s,
                flash_head_dim(d),
                b * heads,
                layers,
                other,
                kind="flash",
                head_dim=d,
                kernel=attention_kernel(target),
            )
        )
    else:
        fwd.append(Gemm("attn_scores", "fwd", s, s, d, b * heads, layers, other))
        fwd.append(Gemm("attn_values", "fwd", s, d, s, b * heads, layers, other, b_contig="n"))
    fwd.append(Gemm("attn_out", "fwd", tokens, h, _split(a * d, t), count=layers, dtype=lin))

    if experts > 1:
        per_expert = max(1, _split(tokens * top_k, experts))
        fwd.append(Gemm("router", "fwd", tokens, experts, h, count=layers, dtype=other))
        width = (2 if gated else 1) * _split(f_e, t)
        fwd.append(Gemm("experts_up", "fwd", per_expert, width, h, experts, layers, lin))
        fwd.append(Gemm("experts_down", "fwd", per_expert, h, _split(f_e, t), experts, layers, lin))
    else:
        fwd.append(Gemm("mlp_up", "fwd", tokens, _split(f, t), h, count=layers, dtype=lin))
        if gated:
            fwd.append(Gemm("mlp_gate", "fwd", tokens, _split(f, t), h, count=layers, dtype=lin))
        fwd.append(Gemm("mlp_down", "fwd", tokens, h, _split(f, t), count=layers, dtype=lin))

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
    if target.recompute:
        # Full activation recomputation runs every layer's forward again in the backward.
        out.extend(replace(g, pass_="recompute") for g in fwd if g.name != "logits")
    return out
