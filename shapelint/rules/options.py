"""Per-rule options: typed, with defaults in the rule module, validated once when settings load.

A rule that a team may tune defines ``Options`` (a frozen dataclass whose fields carry a
``doc`` and bounds in their metadata) and ``OPTIONS = Options()``, and takes
``check(config, target, options=OPTIONS)``. Settings set them per rule::

    [tool.shapelint.rules.SL101]
    multiple = 128

Field names are written with dashes in settings (``wave-threshold``). An unknown rule, a rule
without options, an unknown option or a value of the wrong type or out of bounds is a one-line
`ValueError` naming the key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from shapelint.rules import REGISTRY, RuleModule


def has_options(module: RuleModule) -> bool:
    """True when the rule has options a team may set."""
    return dataclasses.is_dataclass(getattr(module, "OPTIONS", None))


def option_fields(module: RuleModule) -> list[dataclasses.Field[Any]]:
    """The rule's option fields, in declaration order (empty without options)."""
    if not has_options(module):
        return []
    return list(dataclasses.fields(module.OPTIONS))  # type: ignore[attr-defined]


def setting_name(f: dataclasses.Field[Any]) -> str:
    """How the option is spelled in settings: ``wave_threshold`` → ``wave-threshold``."""
    return f.name.replace("_", "-")


def _checked(code: str, f: dataclasses.Field[Any], value: object) -> object:
    name = f"rules.{code}.{setting_name(f)}"
    low, high = f.metadata.get("min"), f.metadata.get("max")
    if isinstance(f.default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name}: expected an integer, got {value!r}")
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name}: expected a number, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ValueError(f"{name}: expected a value {bounds}, got {value!r}")
    return float(value) if isinstance(f.default, float) else value


def build(code: str, values: Mapping[str, object]) -> object:
    """The rule's ``Options`` with ``values`` (settings spelling) over its defaults."""
    module = REGISTRY.get(code.upper())
    if module is None:
        from shapelint.rules.codes import closest

        near = closest(code, prefixes=False)
        hint = f"; did you mean {near!r}?" if near else ""
        raise ValueError(f"rules.{code}: unknown rule code{hint}")
    fields = {setting_name(f): f for f in option_fields(module)}
    if not fields:
        tunable = ", ".join(c for c, m in sorted(REGISTRY.items()) if has_options(m))
        raise ValueError(f"rules.{code}: this rule has no options (rules with options: {tunable})")
    changes: dict[str, object] = {}
    for key, value in values.items():
        f = fields.get(key)
        if f is None:
            known = ", ".join(fields)
            raise ValueError(f"rules.{code}: unknown option {key!r} (options: {known})")
        changes[f.name] = _checked(code, f, value)
    return dataclasses.replace(module.OPTIONS, **changes)  # type: ignore[attr-defined]


def describe(module: RuleModule) -> list[str]:
    """``multiple`` (default 64): doc — one line per option, for the rule's documentation."""
    return [
        f"`{setting_name(f)}` (default {f.default}): {f.metadata.get('doc', '')}".rstrip(": ")
        for f in option_fields(module)
    ]


__all__ = ["build", "describe", "has_options", "option_fields", "setting_name"]
