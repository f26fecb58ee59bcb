"""What decides a run's findings: the target fields a user chose (`TargetOptions`, declared with
`shapelint.core.target.Target`), and the lint options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shapelint.core.limits import DEFAULT as DEFAULT_BUDGET
from shapelint.core.limits import Budget
from shapelint.core.target import TargetOptions
from shapelint.dialects.common import KeyAliases
from shapelint.hardware.gpus import GPU
from shapelint.rules import RuleModule

if TYPE_CHECKING:
    from shapelint.engine.baseline import Baseline


@dataclass(frozen=True)
class LintOptions:
    """Everything that decides what the runner reports."""

    gpus: tuple[GPU, ...]
    # True when no flag or setting chose the GPU (the built-in default is used).
    gpu_default: bool = False
    flags: TargetOptions = TargetOptions()
    defaults: TargetOptions = TargetOptions()
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    extra_keys: KeyAliases = field(default_factory=dict)
    min_slowdown: float = 1.0
    exclude: tuple[str, ...] = ()
    report_unused_ignores: bool = False
    # Findings recorded here are hidden (lint.baseline); None: no baseline.
    baseline: Baseline | None = None
    # Settings' [severity]: code or prefix → "error" | "warning" | "info" | "off".
    severity: Mapping[str, str] = field(default_factory=dict)
    # Settings' [rules.CODE] tables: code → that rule's Options (rules.options).
    rule_options: Mapping[str, object] = field(default_factory=dict)
    # The config rules to run; None: every rule in the registry (`rules.config_rules`).
    rules: tuple[RuleModule, ...] | None = None
    budget: Budget = DEFAULT_BUDGET


__all__ = ["LintOptions", "TargetOptions"]
