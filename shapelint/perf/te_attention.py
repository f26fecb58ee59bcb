"""Transformer Engine's attention backend choice, as ``get_attention_backend`` makes it.

Transformer Engine's ``DotProductAttention`` runs one of three backends: FlashAttention (the
flash-attn 2, 3 or 4 package, whichever is installed and accepts the shapes), cuDNN's
FusedAttention, or ``UnfusedDotProductAttention`` (PyTorch batched matmuls and a separate
softmax: the slow path). Each backend is filtered by the GPU's compute capability and the
Q/K and V head dims; the unfused backend is itself disabled under context parallelism, and
then no backend is left and TE raises.

This module answers for BF16/FP16 training of causal self-attention in the layouts Megatron
uses (separate q, k, v; no bias, dropout, sliding window or sink softmax; non-deterministic),
and it asks whether *any* installation could run a fused kernel: every flash-attn package
installed and any cuDNN version the selector knows (8.9.3 to 9.25). A shape it reports runs
unfused whatever is installed; where the answer depends on what is installed, it says so.

One function for the rules and the step: SL321 and SL322 report the choice (`choose`,
`te_backends`), and the step estimate times the attention TE will run (`engine_attention`,
`shapelint.perf.estimate.step_time`).

Source: TransformerEngine commit d0067d0d (2.20.0.dev0)
``transformer_engine/pytorch/attention/dot_product_attention/utils.py``: compute capability
filters 568-595, head dims 903-1069, context parallelism 1169-1176, cuDNN 1456-1493,
preference and selection 1625-1668; ``transformer_engine/common/fused_attn/fused_attn.cpp``
297-353 (F16/BF16 head dims per GPU and cuDNN version); the error when nothing is left:
``dot_product_attention/dot_product_attention.py:2159-2165``. FlashAttention-3's own head-size
check (which TE's filter does not repeat): flash-attention 0251105a
``hopper/flash_api.cpp:853-855``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shapelint.core.model import Dim

if TYPE_CHECKING:
    from shapelint.core.model import ModelConfig, Target

# The engine whose backend choice this module makes (shapelint.hardware.engines).
TRANSFORMER_ENGINE = "transformer-engine"


@dataclass(frozen=True)
class Choice:
    """What TE can run for one shape: the fused backends that accept it (``available``),
    why each other one declines (``declined``: backend → reason), and whether FlashAttention 3
    passes TE's filter only to raise in its own kernel (``fa3_raises``)."""

    available: tuple[str, ...]
    declined: tuple[tuple[str, str], ...]
    fa3_raises: bool = False


FA2_LARGE_HEAD_DIM_SMS = ((8, 0), (9, 0), (10, 0), (12, 0))


def _fa2(d: int, dv: int, cc: tuple[int, int]) -> str | None:
    padded = max(d, dv)
    if padded > 256 or padded % 8:
        return f"padded head dim {padded} must be a multiple of 8 and at most 256"
    if padded > 192 and cc not in FA2_LARGE_HEAD_DIM_SMS:
        return f"padded head dim {padded} > 192 needs sm80/sm90/sm100/sm120"
    return None


def _fa3_filter(d: int, dv: int, a: int, kv: int) -> str | None:
    if d > 256 or a % kv:
        return "head dim at most 256 and KV heads dividing the heads"
    if d != dv and not ((128 < d <= 192 and 96 < dv <= 128) or (d <= 64 and dv <= 512)):
        return "a different V head dim only for Q/K in (128, 192] with V in (96, 128], or Q/K ≤ 64"
    return None


def fa4_refusal(d: int, dv: int, major: int, element_bytes: int) -> str | None:
    """FlashAttention-4's assertion message for head dims (d, dv) on compute capability
    ``major``.x, or None when it accepts them (or has no check for that GPU).

    Source: flash-attention commit 0251105a (tag fa4-v4.0.0.beta27)
    ``flash_attn/cute/interface.py:111-129`` (``_validate_head_dims``); SL320 reports it."""
    alignment = 16 // element_bytes
    aligned = d % alignment == 0 and dv % alignment == 0
    if major == 9:
        if 8 <= d <= 256 and 8 <= dv <= 256 and aligned:
            return None
        return (
            f"(head_dim, head_dim_v)=({d}, {dv}) is not supported on SM90. head_dim and "
            f"head_dim_v must be between 8 and 256 and divisible by {alignment}."
        )
    if major in (10, 11):
        standard = 8 <= d <= 128 and 8 <= dv <= 128
        deepseek = (d, dv) == (192, 128)
        absorbed = (d == 64 or d == dv) and dv == 512
        hd256 = (d, dv) == (256, 256)
        if (standard or deepseek or absorbed or hd256) and aligned:
            return None
        return (
            f"(head_dim, head_dim_v)=({d}, {dv}) is not supported on SM100/SM110. head_dim and "
            f"head_dim_v must be between 8 and 128 and divisible by {alignment}, or (192, 128) "
            "for DeepSeek, or (256, 256) for hd256."
        )
    return None


def _fa4(d: int, dv: int, cc: tuple[int, int]) -> str | None:
    if fa4_refusal(d, dv, cc[0], 2) is not None:
        return "FlashAttention-4's head-dim check refuses it"
    if (10, 0) <= cc < (12, 0):
        if d == dv == 512:
            return "symmetric head dim 512 is disabled on sm100/sm110"
        if d != dv and d >= 128:
            tile, tile_v = math.ceil(d / 16) * 16, math.ceil(dv / 16) * 16
            if (tile_v // 2) % math.gcd(32, tile // 2):
                return "its sm100 backward kernel misreads this MLA head-dim pair"
    return None


def _cudnn(d: int, dv: int, cc: tuple[int, int]) -> str | None:
    if d % 8 or dv % 8:
        return "head dims must be multiples of 8"
    if d <= 128 and dv <= 128:
        return None
    if d <= 256 and dv <= 256 and cc == (9, 0):
        return None  # cuDNN 9.5 and later, on Hopper only
    if (d, dv) == (192, 128) and cc >= (10, 0):
        return None  # cuDNN 9.11 and later
    if (d, dv) == (256, 256) and (10, 0) <= cc < (11, 0):
        return None  # cuDNN 9.23 and later
    return "training head dims above 128 only on sm90 (≤ 256), or (192, 128) / (256, 256) on sm100"


def choose(d: int, dv: int, a: int, kv: int, cc: tuple[int, int], cp: int) -> Choice:
    """The fused backends TE could train with for Q/K head dim ``d``, V head dim ``dv``, ``a``
    query and ``kv`` KV heads per GPU, on compute capability ``cc``, context parallel ``cp``."""
    available: list[str] = []
    declined: list[tuple[str, str]] = []
    fa3_raises = False

    def consider(name: str, reason: str | None) -> None:
        if reason is None:
            available.append(name)
        else:
            declined.append((name, reason))

    consider("FlashAttention 2", _fa2(d, dv, cc))
    if cc == (9, 0):
        reason = _fa3_filter(d, dv, a, kv)
        if reason is None and (d % 8 or dv % 8):
            # TE's filter lets it through; the kernel then raises "head_size should be a
            # multiple of 8".
            fa3_raises = True
            reason = "its kernel needs head dims that are multiples of 8"
        consider("FlashAttention 3", reason)
    if cc >= (9, 0):
        if cp > 1:
            consider("FlashAttention 4", "no context parallelism support")
        else:
            consider("FlashAttention 4", _fa4(d, dv, cc))
    consider("cuDNN FusedAttention", _cudnn(d, dv, cc))
    return Choice(tuple(available), tuple(declined), fa3_raises)


def reasons(choice: Choice) -> str:
    """``FlashAttention 2: padded head dim …; cuDNN FusedAttention: …``."""
    return "; ".join(f"{name}: {why}" for name, why in choice.declined)


def te_backends(config: ModelConfig, target: Target) -> Choice | None:
    """TE's choice for ``config``'s attention on one GPU of a training ``target`` (heads and KV
    heads per tensor-parallel rank), or None when the question does not arise: not training,
    no attention, a GPU whose compute capability is unknown or below 8.0 (no fused kernels),
    or head dims or heads the config does not state."""
    if target.mode != "train" or not config.has_attention:
        return None
    cc = target.gpu.compute_capability
    d, a, kv = config.int(Dim.HEAD_DIM), config.int(Dim.HEADS), config.int(Dim.KV_HEADS)
    if cc is None or cc < (8, 0) or d is None or a is None or kv is None:
        return None
    dv = config.int(Dim.V_HEAD_DIM) or d
    t = max(target.tp, 1)
    a_rank = a // t if a % t == 0 else a
    kv_rank = max(kv // t, 1) if kv % t == 0 or t % kv == 0 else kv
    return choose(d, dv, a_rank, kv_rank, cc, max(target.cp, 1))


def engine_attention(config: ModelConfig, target: Target) -> str:
    """The attention ``target`` runs ``config`` with: ``unfused`` when Transformer Engine is
    among the target's engines (named with ``--engine``, or implied by a Megatron-LM or NeMo
    config whose ``transformer_impl`` is TE's) and no fused backend of TE takes the shape in
    training (`te_backends`; under context parallelism TE has no unfused backend either and
    raises, SL322, so the step keeps the target's kernel); else the target's own choice."""
    if TRANSFORMER_ENGINE not in target.engines or target.attention == "unfused":
        return target.attention
    choice = te_backends(config, target)
    if choice is None or choice.available or target.cp > 1:
        return target.attention
    return "unfused"
