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


def _fa4(d: int, dv: int, cc: tuple[int, int]) -> str | None:
    from shapelint.rules.sl320_flash_attn4_head_dim import refusal

    if refusal(d, dv, cc[0], 2) is not None:
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
