"""What each config was estimated for, and which of those values nobody chose.

An estimate rests on a target (GPU, dtype, mode, micro-batch, sequence length, tensor
parallel …). Each field comes from a command-line flag, the config itself, the settings, or a
built-in default, in that order (`shapelint.engine.target.resolve_fields`); the reports show
the target once per config and mark the defaults, so a user sees when "+19% at micro-batch 1"
was an assumption rather than their choice. Which fields the JSON holds and how the text line
shows each one is declared with the field (`shapelint.core.target`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shapelint.core.model import ModelConfig
from shapelint.core.target import TARGET_FIELDS
from shapelint.engine.options import LintOptions
from shapelint.engine.target import Origin, resolve_fields, target_of

# The target's fields in the JSON, in the order reports show them.
FIELDS = tuple(f.name for f in TARGET_FIELDS if f.json)


@dataclass(frozen=True)
class AssumedTarget:
    """One config's resolved target and where each field came from."""

    gpus: tuple[str, ...]
    values: Mapping[str, object]
    origins: Mapping[str, Origin] = field(default_factory=dict)
    gpu_default: bool = False
    # What the text line adds after a field's value, by field name: the dtype asked for when
    # the first GPU has no Tensor Core rate for it and the estimate is timed in
    # ``values["dtype"]`` instead (``bf16 (fp8 asked: no fp8 rate)``).
    notes: Mapping[str, str] = field(default_factory=dict)

    @property
    def defaults(self) -> tuple[str, ...]:
        """The fields that took a built-in default, in display order (``gpu`` first)."""
        gpu = ("gpu",) if self.gpu_default else ()
        return gpu + tuple(f for f in FIELDS if self.origins.get(f) == "default")

    def as_json(self) -> dict[str, Any]:
        """``{"gpu": [...], "dtype": …, …, "origins": {...}, "defaults": [...]}``."""
        out: dict[str, Any] = {"gpu": list(self.gpus)}
        for spec in TARGET_FIELDS:
            if spec.name not in FIELDS:
                continue
            value = self.values[spec.name]
            if spec.aliases:
                # A choice that was a boolean (recompute): JSON version 1 keeps the boolean
                # (false: the choice the old false stands for), the choice follows as
                # ``<name>_mode``.
                out[spec.name] = value != dict(spec.aliases).get(False)
                out[f"{spec.name}_mode"] = value
            else:
                out[spec.name] = value
        out["origins"] = {"gpu": "default" if self.gpu_default else "chosen"}
        out["origins"].update({f: self.origins[f] for f in FIELDS})
        out["defaults"] = list(self.defaults)
        return out

    def text(self) -> str:
        """``H100-SXM, bf16*, train*, micro-batch 1*, seq 1024, tp 1*`` (``*``: a default)."""
        parts = [", ".join(self.gpus) + ("*" if self.gpu_default else "")]
        for spec in TARGET_FIELDS:
            shown = spec.text(self.values.get(spec.name), self.values)
            if shown is None:
                continue
            shown += "*" if self.origins.get(spec.name) == "default" else ""
            note = self.notes.get(spec.name)
            parts.append(f"{shown} {note}" if note else shown)
        return ", ".join(parts)


def assumed_target(config: ModelConfig, options: LintOptions) -> AssumedTarget:
    """The target ``config`` is estimated for (on the first GPU) and each field's origin,
    in `resolve_fields`'s order: flag, the config's own value, settings, default."""
    resolved = resolve_fields(config, options)
    target = target_of(resolved, options.gpus[0], options)
    asked = target.asked_dtype
    return AssumedTarget(
        tuple(g.name for g in options.gpus),
        {f.name: getattr(target, f.name) for f in TARGET_FIELDS},
        {name: origin for name, (_, origin) in resolved.items()},
        options.gpu_default,
        notes={"dtype": f"({asked} asked: no {asked} rate)"} if asked else {},
    )


__all__ = ["FIELDS", "AssumedTarget", "assumed_target"]
