"""A named attention kernel refuses the head dim (or the K/V head split) of this config.

Guideline: attention kernels are compiled for a set of head dims and raise on any other:

- FlashAttention-2: head dim at most 256 and a multiple of 8; the KV heads must divide the
  query heads.
- FlashAttention-3 (Hopper): head dim at most 256 and a multiple of 8 (16 for FP8 inputs);
  a V head dim different from Q/K only for Q/K in (128, 192] with V in (96, 128], or Q/K at
  most 64 with V at most 512 (DeepSeek's MLA, 192/128, is one of them).

These are kernels, not engines: the rule runs when a target names one (``--engine
flash-attn2``). Engines that pick a kernel per config fall back to another one instead of
refusing; SL310 reports that slower path.

Source: flash-attention 2.8.4 (commit 0251105a) ``csrc/flash_attn/flash_api.cpp:416-418``
(also 634-636, 867-869) and ``hopper/flash_api.cpp:779-791, 853-856``.
"""

from __future__ import annotations

from collections.abc import Iterator

from shapelint.core.model import Dim, Finding, ModelConfig, Target
from shapelint.rules.base import Example, Expect, Rule
from shapelint.rules.engine_shapes import head_dim_views, refused_by

RULE = Rule(
    code="SL302",
    name="attention-kernel-head-dim",
    severity="error",
    summary="a named attention kernel (FlashAttention-2/3) refuses this head dim",
    source="flash-attention 2.8.4: csrc/flash_attn/flash_api.cpp, hopper/flash_api.cpp",
    family="engine",
)

VERIFIED = {
    "flash-attn2": "csrc/flash_attn/flash_api.cpp:416-418, 634-636, 867-869",
    "flash-attn3": "hopper/flash_api.cpp:779-791, 853-856",
}

MAX_HEAD_DIM = 256

_GEMMA_LIKE = (
    '{"hidden_size": 3072, "num_attention_heads": 16, "head_dim": 256, "num_key_value_heads": 16,'
    ' "intermediate_size": 24576, "num_hidden_layers": 28, "vocab_size": 256000}\n'
)
EXAMPLES = [
    Example(_GEMMA_LIKE, True, target={"engines": ("flash-attn2", "flash-attn3")}),
    Example(
        '{"hidden_size": 3200, "num_attention_heads": 32, "intermediate_size": 8640,'
        ' "num_hidden_layers": 26, "vocab_size": 32000}\n',
        False,
        target={"engines": ("flash-attn2",)},
        note="OpenLLaMA 3B: head dim 3200 / 32 = 100",
        expect=(
            Expect(
                1, "3200", "query, key, value, and out_ must have a head_size that is a multiple"
            ),
        ),
    ),
    Example(
        '{"hidden_size": 4096, "num_attention_heads": 8, "head_dim": 512, "num_key_value_heads": 8,'
        ' "intermediate_size": 16384, "num_hidden_layers": 24, "vocab_size": 262144}\n',
        False,
        target={"engines": ("flash-attn2", "flash-attn3")},
        note="head dim 512",
        expect=(
            Expect(1, "512", "FlashAttention forward only supports head dimension at most 256"),
        ),
    ),
]


def _fa2(d: int, dv: int, a: int, kv: int) -> str | None:
    if max(d, dv) > MAX_HEAD_DIM:
        return "FlashAttention forward only supports head dimension at most 256"
    if d % 8:
        return "query, key, value, and out_ must have a head_size that is a multiple of 8"
    if a % kv:
        return "Number of heads in key/value must divide number of heads in query"
    return None


def _fa3(d: int, dv: int, a: int, kv: int, fp8: bool) -> str | None:
    if d > MAX_HEAD_DIM:
        return "FlashAttention forward only supports head dimension at most 256"
    if a % kv:
        return "Number of heads in key/value must divide number of heads in query"
    if dv != d and not ((128 < d <= 192 and 96 < dv <= 128) or (d <= 64 and dv <= 512)):
        return (
            "If V headdim is different from Q/K dim, we only support Q/K headdim in (128, 192] "
            "and V headdim in (96, 128], or (Q/K <= 64 and V <= 512)."
        )
    alignment = 16 if fp8 else 8
    if d % alignment or dv % alignment:
        return f"head_size should be a multiple of {alignment}"
    return None


def _check_view(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the head dim when a kernel the target names refuses it."""
    named = [e for e in target.engines if e in VERIFIED]
    head_dim, d = config.get(Dim.HEAD_DIM), config.int(Dim.HEAD_DIM)
    a, kv = config.int(Dim.HEADS), config.int(Dim.KV_HEADS)
    if not named or head_dim is None or d is None or a is None or kv is None:
        return
    dv = config.int(Dim.V_HEAD_DIM) or d
    t = max(target.tp, 1)
    # Per rank: with KV heads replicated (t > kv) each rank holds one.
    a_rank = a // t if a % t == 0 else a
    kv_rank = max(kv // t, 1) if kv % t == 0 or t % kv == 0 else kv
    found: dict[str, list[str]] = {}
    for engine in named:
        if engine == "flash-attn2":
            message = _fa2(d, dv, a_rank, kv_rank)
        else:
            message = _fa3(d, dv, a_rank, kv_rank, target.dtype == "fp8")
        if message is not None:
            found.setdefault(message, []).append(engine)
    for message, engines in found.items():
        shown = f"head dim {d}" if dv == d else f"head dims {d}/{dv} (Q·K/V)"
        yield RULE.finding(config, head_dim, f"{message}: {shown} {refused_by(engines)}")


def check(config: ModelConfig, target: Target) -> Iterator[Finding]:
    """Report the head dim when a kernel the target names refuses it.
    Gemma 4's full-attention layers are checked at their own head dim (``global_head_dim``)."""
    for view in head_dim_views(config):
        yield from _check_view(view, target)
