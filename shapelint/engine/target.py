"""Each config's target: CLI flags first, then the config's own values, then settings.

Every field declared on `shapelint.core.target.Target` is resolved the same way; the only
per-field rules here are how a config states a value it cannot state as a plain dim (the
sequence length, capped when it is the model's maximum context; the engines, implied by the
framework) and the dtype a GPU can run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Literal

from shapelint.core.dtypes import normalize_dtype, runnable_dtype
from shapelint.core.model import Dim, ModelConfig, Target
from shapelint.core.target import DEFAULT_SEQ_LEN, TARGET_FIELDS, TargetField
from shapelint.dialects.engines import default_engines
from shapelint.engine.options import LintOptions
from shapelint.hardware.gpus import GPU

Origin = Literal["flag", "config", "settings", "default"]


def _trained_seq_len(config: ModelConfig) -> int | None:
    """The config's sequence length; a maximum context (HF ``max_position_embeddings``) counts
    only up to the default, since a model is rarely trained at its longest context."""
    seq = config.int(Dim.SEQ_LEN)
    if seq is not None and config.seq_is_max_context:
        seq = min(seq, DEFAULT_SEQ_LEN)
    return seq


# Fields whose config value is not simply their dim's.
_STATED: dict[str, Callable[[ModelConfig], object | None]] = {"seq_len": _trained_seq_len}
# Fields that, when neither a flag nor a setting chose them, take what the config implies:
# a guess, so it ranks after the settings (the engines a framework's configs run on, the
# framework its dialect declares).
_IMPLIED: dict[str, Callable[[ModelConfig], object]] = {
    "engines": default_engines,
    "framework": lambda config: config.traits.framework,
}


def stated(config: ModelConfig, spec: TargetField) -> object | None:
    """The value ``config`` itself states for the field ``spec``, or None."""
    special = _STATED.get(spec.name)
    if special is not None:
        return special(config)
    if spec.dim is None:
        return None
    dim = Dim(spec.dim)
    if spec.kind == "positive":
        return config.int(dim)
    value = config.get(dim)
    if value is None:
        return None
    if spec.kind == "dtype":
        return normalize_dtype(value.value)
    if spec.kind == "choice":  # a value outside the choices is one shapelint does not model
        return value.value if value.value in spec.choices else None
    if spec.kind == "bool":
        return value.value if isinstance(value.value, bool) else None
    return None


def resolve_fields(config: ModelConfig, options: LintOptions) -> dict[str, tuple[object, Origin]]:
    """Each target field's value for ``config`` and where it came from: a flag, the config's
    own value, the settings, what the config implies, or the built-in default."""
    out: dict[str, tuple[object, Origin]] = {}
    for spec in TARGET_FIELDS:
        name = spec.name
        value = options.flags.get(name)
        if value is not None:
            out[name] = (value, "flag")
            continue
        value = stated(config, spec)
        if value is not None:
            out[name] = (value, "config")
            continue
        value = options.defaults.get(name)
        if value is not None:
            out[name] = (value, "settings")
            continue
        implied = _IMPLIED.get(name)
        value = implied(config) if implied is not None else None
        if value is not None and value != spec.default:
            out[name] = (value, "config")
        else:
            out[name] = (spec.default, "default")
    return out


def resolve_target(config: ModelConfig, gpu: GPU, options: LintOptions) -> Target:
    """The target for ``config``: CLI flags, then the config's own values, then settings."""
    return target_of(resolve_fields(config, options), gpu, options)


def target_of(
    resolved: Mapping[str, tuple[object, Origin]], gpu: GPU, options: LintOptions
) -> Target:
    """The `Target` on ``gpu`` of fields resolved by `resolve_fields`."""
    values: dict[str, Any] = {name: value for name, (value, _) in resolved.items()}
    dtype = values["dtype"]
    runs = runnable_dtype(dtype, gpu.peak_tflops)
    values["dtype"] = runs
    return Target(
        gpu=gpu,
        asked_dtype=None if runs == dtype else dtype,
        gpu_chosen=not options.gpu_default,
        **values,
    )


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
