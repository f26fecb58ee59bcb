"""What the quantized-checkpoint rules (SL306-SL308) share: the largest tensor-parallel size
that a checkpoint's group or block size allows, offered in their messages."""

from __future__ import annotations

from collections.abc import Callable

from shapelint.core.model import Dim, ModelConfig
from shapelint.rules.engine_shapes import Linear, sharded_linears


def splits_evenly(config: ModelConfig, n: int) -> bool:
    """True when heads, FFN and expert FFN divide by ``n`` and the KV heads divide or are
    replicated evenly (the conditions vLLM and SGLang check, SL301)."""
    for dim in (Dim.HEADS, Dim.FFN, Dim.MOE_FFN):
        x = config.int(dim)
        if x is not None and x % n:
            return False
    kv = config.int(Dim.KV_HEADS)
    return kv is None or (kv % n == 0 if kv >= n else n % kv == 0)


def largest_tp(config: ModelConfig, t: int, fits: Callable[[Linear], bool]) -> int | None:
    """The largest power-of-two tensor-parallel size below ``t`` at which the model splits
    evenly and every layer ``fits``; None when only TP 1 would do."""
    n = 1
    while n * 2 < t:
        n *= 2
    while n > 1:
        if splits_evenly(config, n) and all(fits(layer) for layer in sharded_linears(config, n)):
            return n
        n //= 2
    return None


def tp_hint(best: int | None) -> str:
    """``; the largest tensor-parallel size that fits is 4`` (or that only TP 1 does)."""
    if best is None:
        return "; only tensor parallel size 1 fits this checkpoint"
    return f"; the largest power-of-two tensor parallel size that fits is {best}"
