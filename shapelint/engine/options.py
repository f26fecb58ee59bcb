"""What decides a run's findings: the target fields a user chose, and the lint options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shapelint.core.limits import DEFAULT as DEFAULT_BUDGET
from shapelint.core.limits import Budget
from shapelint.core.model import Attention, Mode
from shapelint.dialects.common import KeyAliases
from shapelint.hardware.gpus import GPU
from shapelint.rules import RuleModule

if TYPE_CHECKING:
    from shapelint.engine.baseline import Baseline


@dataclass(frozen=True)
class TargetOptions:
    """Target fields a user chose (CLI flags or settings); None means "not chosen"."""

    dtype: str | None = None
    micro_batch: int | None = None
    seq_len: int | None = None
    tp: int | None = None
    mode: Mode | None = None
    attention: Attention | None = None
    # Engines (canonical shapelint.hardware.engines names) and the other parallel sizes
    # (SL3xx rules).
    engines: tuple[str, ...] | None = None
    pp: int | None = None
    ep: int | None = None
    cp: int | None = None
    sp: int | None = None
    # The FP8-family recipe (model.FP8_RECIPES), meaningful with dtype fp8.
    fp8_recipe: str | None = None
    # How a training step is run (shapelint.perf.ops): fusions, data parallel, sharding,
    # activation recomputation.
    fused: str | None = None
    data_parallel: int | None = None
    sharded: bool | None = None
    recompute: bool | None = None


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
