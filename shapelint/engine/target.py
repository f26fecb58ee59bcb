"""Each config's target: CLI flags first, then the config's own values, then settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TypeVar

from shapelint.core.dtypes import normalize_dtype, runnable_dtype
from shapelint.core.model import Dim, ModelConfig, Target
from shapelint.dialects.engines import default_engines
from shapelint.engine.options import LintOptions
from shapelint.hardware.gpus import GPU

T = TypeVar("T")

# A model's maximum context (HF max_position_embeddings) is not the length it is trained at;
# estimates for such configs use at most this many tokens per sequence unless told otherwise.
DEFAULT_SEQ_LEN = 4096


def resolve_target(config: ModelConfig, gpu: GPU, options: LintOptions) -> Target:
    """The target for ``config``: CLI flags, then the config's own values, then settings."""
    flags, defaults = options.flags, options.defaults
    seq = config.int(Dim.SEQ_LEN)
    if seq is not None and config.seq_is_max_context:
        seq = min(seq, DEFAULT_SEQ_LEN)
    config_dtype = config.get(Dim.DTYPE)
    dtype = _first(
        flags.dtype,
        normalize_dtype(config_dtype.value) if config_dtype is not None else None,
        defaults.dtype,
        "bf16",
    )
    runs = runnable_dtype(dtype, gpu.peak_tflops)
    return Target(
        gpu=gpu,
        dtype=runs,
        asked_dtype=None if runs == dtype else dtype,
        gpu_chosen=not options.gpu_default,
        micro_batch=_first(flags.micro_batch, config.int(Dim.MICRO_BATCH), defaults.micro_batch, 1),
        seq_len=_first(flags.seq_len, seq, defaults.seq_len, DEFAULT_SEQ_LEN),
        tp=_first(flags.tp, config.int(Dim.TP), defaults.tp, 1),
        mode=_first(flags.mode, defaults.mode, "train"),
        attention=_first(flags.attention, defaults.attention, "flash"),
        # Engines: flags, then settings, then what the config implies (a guess ranks last).
        engines=_first(flags.engines, defaults.engines, default_engines(config), ()),
        pp=_first(flags.pp, config.int(Dim.PP), defaults.pp, 1),
        ep=_first(flags.ep, config.int(Dim.EP), defaults.ep, 1),
        cp=_first(flags.cp, config.int(Dim.CP), defaults.cp, 1),
        sp=_first(flags.sp, config.int(Dim.SP), defaults.sp, 1),
        fp8_recipe=flags.fp8_recipe or _config_recipe(config) or defaults.fp8_recipe,
        fused=_first(flags.fused, defaults.fused, "default"),
        data_parallel=_first(flags.data_parallel, defaults.data_parallel, 1),
        sharded=_first(flags.sharded, defaults.sharded, False),
        recompute=_first(flags.recompute, defaults.recompute, False),
    )


def _config_recipe(config: ModelConfig) -> str | None:
    """The FP8 recipe ``config`` trains with (Megatron-LM's ``--fp8-recipe``), or None."""
    recipe = config.get(Dim.FP8_RECIPE)
    return recipe.value if recipe is not None and isinstance(recipe.value, str) else None


def _first(*values: T | None) -> T:
    for v in values:
        if v is not None:
            return v
    raise ValueError("no default")


def _fixed_int(fix_dims: Mapping[Dim, object], dim: Dim, default: int) -> int:
    new = fix_dims.get(dim)
    if isinstance(new, int) and not isinstance(new, bool) and new > 0:
        return new
    return default


def fixed_target(
    fixed: ModelConfig, fix_dims: Mapping[Dim, object], gpu: GPU, options: LintOptions
) -> Target:
    """The target of a fixed config: resolved as usual, except that a micro-batch, sequence
    length or tensor-parallel size the fix sets wins over a CLI flag (the flag chose the
    as-written value the rule reported; the estimate is of the fix)."""
    target = resolve_target(fixed, gpu, options)
    return replace(
        target,
        micro_batch=_fixed_int(fix_dims, Dim.MICRO_BATCH, target.micro_batch),
        seq_len=_fixed_int(fix_dims, Dim.SEQ_LEN, target.seq_len),
        tp=_fixed_int(fix_dims, Dim.TP, target.tp),
    )
