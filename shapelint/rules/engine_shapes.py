"""What the SL3xx engine rules share: the tensor-parallel linear layers of a config, per rank,
and the wording of a finding that names the engines it comes from.

Megatron-style tensor parallelism splits the output of column-parallel layers (q/k/v, gate/up,
the experts' gate/up) and the input of row-parallel layers (o_proj, down_proj, the experts'
down) across t ranks; quantized kernels check those per-rank sizes against their tile, group
and block sizes. Layers are listed only when the split is exact (SL005/SL301 report the rest).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from shapelint.core.model import Dim, ModelConfig, Target, Value
from shapelint.hardware.engines import get, selected


@dataclass(frozen=True)
class Linear:
    """One tensor-parallel linear layer on one rank: ``in_features`` × ``out_features``."""

    name: str
    split: Literal["column", "row"]
    in_features: int
    out_features: int
    value: Value


def is_mla(config: ModelConfig) -> bool:
    """True for multi-head latent attention (DeepSeek-V2/V3): q/k/v are low-rank projections."""
    head_dim = config.get(Dim.HEAD_DIM)
    return head_dim is not None and head_dim.formula.startswith("qk_nope_head_dim")


def head_dim_views(config: ModelConfig) -> list[ModelConfig]:
    """``config`` as each kind of its attention layers sees it: itself, and for a model whose
    full-attention layers have a head dim of their own (Gemma 4's ``global_head_dim``) a copy
    whose HEAD_DIM is that one (its findings point at ``global_head_dim``)."""
    wide = config.get(Dim.GLOBAL_HEAD_DIM)
    if wide is None or wide.as_int is None or wide.as_int == config.int(Dim.HEAD_DIM):
        return [config]
    return [config, replace(config, dims={**config.dims, Dim.HEAD_DIM: wide})]


def sharded_linears(config: ModelConfig, t: int) -> list[Linear]:
    """The linear layers of one transformer block on one of ``t`` tensor-parallel ranks."""
    out: list[Linear] = []
    h, a = config.int(Dim.HIDDEN), config.int(Dim.HEADS)
    d, kv = config.int(Dim.HEAD_DIM), config.int(Dim.KV_HEADS)
    dv = config.int(Dim.V_HEAD_DIM) or d
    heads, kv_value = config.get(Dim.HEADS), config.get(Dim.KV_HEADS)
    if h and a and d and dv and heads is not None and a % t == 0:
        if not is_mla(config):
            out.append(Linear("q_proj", "column", h, a * d // t, heads))
            if kv and kv_value is not None and (kv % t == 0 or t % kv == 0):
                per_rank = kv // t if kv >= t else 1
                out.append(Linear("k_proj/v_proj", "column", h, per_rank * d, kv_value))
        out.append(Linear("o_proj", "row", a * dv // t, h, heads))
    for dim, prefix in ((Dim.FFN, ""), (Dim.MOE_FFN, "experts.")):
        f, value = config.int(dim), config.get(dim)
        if h and f and value is not None and f % t == 0:
            out.append(Linear(f"{prefix}gate_proj/up_proj", "column", h, f // t, value))
            out.append(Linear(f"{prefix}down_proj", "row", f // t, h, value))
    return out


def engines_for(target: Target, verified: Iterable[str]) -> list[str]:
    """The engines of ``target`` that a rule (checked against ``verified``) applies to."""
    return selected(target, list(verified))


def refused_by(names: Iterable[str], verb: str = "refused by") -> str:
    """``(refused by vLLM 0.34.0, SGLang 0.5.23)``."""
    shown = ", ".join(f"{get(n).title} {get(n).version}" for n in names)
    return f"({verb} {shown})"


def quant_method(config: ModelConfig) -> str | None:
    """The checkpoint's ``quantization_config.quant_method``, lower-case, or None."""
    value = config.get(Dim.QUANT_METHOD)
    if value is None or not isinstance(value.value, str):
        return None
    return value.value.lower()


@dataclass(frozen=True)
class SequenceShard:
    """A GPU's share of the activations under Megatron-style sequence parallelism: ``tokens``
    of micro-batch × sequence split over context × tensor parallel, and how it is described."""

    tokens: int
    split: str


def mxfp8_sequence_shard(config: ModelConfig, target: Target) -> SequenceShard | None:
    """The sequence-parallel shard an MXFP8 training step all-gathers before each
    column-parallel linear, or None when the target is not MXFP8 training with
    ``sequence_parallel`` at tensor parallel above 1, or the split is uneven (Megatron's own
    error)."""
    if target.dtype != "fp8" or target.fp8_recipe != "mxfp8" or target.mode != "train":
        return None
    sp = config.get(Dim.SEQUENCE_PARALLEL)
    t, cp = max(target.tp, 1), max(target.cp, 1)
    tokens = target.micro_batch * target.seq_len
    if sp is None or sp.value is not True or t == 1 or tokens % (cp * t):
        return None
    split = f"tensor parallel {t}" + (f" × context parallel {cp}" if cp > 1 else "")
    return SequenceShard(tokens // (cp * t), split)
