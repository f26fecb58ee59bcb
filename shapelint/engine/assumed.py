"""What each config was estimated for, and which of those values nobody chose.

An estimate rests on a target (GPU, dtype, mode, micro-batch, sequence length, tensor
parallel). Each field comes from a command-line flag, the config itself, the settings, or a
built-in default, in that order (`shapelint.engine.runner.resolve_target`); the reports show the
target once per config and mark the defaults, so a user sees when "+19% at micro-batch 1" was
an assumption rather than their choice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from shapelint.core.dtypes import normalize_dtype
from shapelint.core.model import Dim, ModelConfig
from shapelint.engine.options import LintOptions
from shapelint.engine.target import resolve_target

Origin = Literal["flag", "config", "settings", "default"]

# The target's fields in the order reports show them.
FIELDS = (
    "dtype",
    "mode",
    "micro_batch",
    "seq_len",
    "tp",
    "attention",
    "fused",
    "data_parallel",
    "sharded",
    "recompute",
)
_CONFIG_DIMS = {"micro_batch": Dim.MICRO_BATCH, "seq_len": Dim.SEQ_LEN, "tp": Dim.TP}


@dataclass(frozen=True)
class AssumedTarget:
    """One config's resolved target and where each field came from."""

    gpus: tuple[str, ...]
    values: Mapping[str, object]
    origins: Mapping[str, Origin] = field(default_factory=dict)
    gpu_default: bool = False
    # Engines and pipeline/expert/context parallel sizes, shown in the text line when set
    # (``engines megatron, pp 4``); not part of the JSON target.
    engines: tuple[str, ...] = ()
    parallel: tuple[tuple[str, int], ...] = ()
    # The FP8-family recipe when one is chosen and the dtype is fp8 (text line only): every
    # recipe's GEMMs are timed at FP8 rates, which the line says for NVFP4.
    fp8_recipe: str | None = None
    # The dtype asked for when the first GPU has no Tensor Core rate for it and the estimate is
    # timed in ``values["dtype"]`` instead (text line only: ``bf16 (fp8 asked: no fp8 rate)``).
    asked_dtype: str | None = None

    @property
    def defaults(self) -> tuple[str, ...]:
        """The fields that took a built-in default, in display order (``gpu`` first)."""
        gpu = ("gpu",) if self.gpu_default else ()
        return gpu + tuple(f for f in FIELDS if self.origins.get(f) == "default")

    def as_json(self) -> dict[str, Any]:
        """``{"gpu": [...], "dtype": …, …, "origins": {...}, "defaults": [...]}``."""
        out: dict[str, Any] = {"gpu": list(self.gpus)}
        out.update({f: self.values[f] for f in FIELDS})
        out["origins"] = {"gpu": "default" if self.gpu_default else "chosen"}
        out["origins"].update({f: self.origins[f] for f in FIELDS})
        out["defaults"] = list(self.defaults)
        return out

    def text(self) -> str:
        """``H100-SXM, bf16*, train*, micro-batch 1*, seq 1024, tp 1*`` (``*``: a default)."""

        def mark(name: str, shown: str) -> str:
            return shown + ("*" if self.origins.get(name) == "default" else "")

        v = self.values
        parts = [
            ", ".join(self.gpus) + ("*" if self.gpu_default else ""),
            mark("dtype", str(v["dtype"]))
            + (
                f" ({self.asked_dtype} asked: no {self.asked_dtype} rate)"
                if self.asked_dtype
                else ""
            ),
            mark("mode", str(v["mode"])),
            mark("micro_batch", f"micro-batch {v['micro_batch']}"),
            mark("seq_len", f"seq {v['seq_len']}"),
            mark("tp", f"tp {v['tp']}"),
        ]
        if v["attention"] != "flash":
            parts.append(mark("attention", f"{v['attention']} attention"))
        # How the step is run (shapelint.perf.ops), when it is not the default.
        if v["fused"] != "default":
            parts.append(f"fused {v['fused']}")
        if v["data_parallel"] != 1:
            parts.append(f"data-parallel {v['data_parallel']}")
        parts.extend(name for name in ("sharded", "recompute") if v[name])
        if self.fp8_recipe == "nvfp4":
            parts.append("fp8-recipe nvfp4 (timed at FP8 rates)")
        elif self.fp8_recipe:
            parts.append(f"fp8-recipe {self.fp8_recipe}")
        if self.engines:
            parts.append("engines " + "/".join(self.engines))
        parts.extend(f"{name} {size}" for name, size in self.parallel if size > 1)
        return ", ".join(parts)


def _config_value(config: ModelConfig, name: str) -> object | None:
    if name == "dtype":
        value = config.get(Dim.DTYPE)
        return normalize_dtype(value.value) if value is not None else None
    dim = _CONFIG_DIMS.get(name)
    return config.int(dim) if dim is not None else None


def assumed_target(config: ModelConfig, options: LintOptions) -> AssumedTarget:
    """The target ``config`` is estimated for (on the first GPU) and each field's origin,
    in `resolve_target`'s order: flag, the config's own value, settings, default."""
    target = resolve_target(config, options.gpus[0], options)
    origins: dict[str, Origin] = {}
    for name in FIELDS:
        if getattr(options.flags, name) is not None:
            origins[name] = "flag"
        elif _config_value(config, name) is not None:
            origins[name] = "config"
        elif getattr(options.defaults, name) is not None:
            origins[name] = "settings"
        else:
            origins[name] = "default"
    values = {name: getattr(target, name) for name in FIELDS}
    return AssumedTarget(
        tuple(g.name for g in options.gpus),
        values,
        origins,
        options.gpu_default,
        engines=target.engines,
        fp8_recipe=target.fp8_recipe if target.dtype == "fp8" else None,
        asked_dtype=target.asked_dtype,
        parallel=(
            ("pp", target.pp),
            ("ep", target.ep),
            ("cp", target.cp),
            ("sp", target.sp),
        ),
    )


__all__ = ["FIELDS", "AssumedTarget", "assumed_target"]
