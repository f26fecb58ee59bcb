"""The SL3xx rules as a group: which rules check an engine, and running them on one config."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from shapelint.core.model import Finding, ModelConfig, Target


def engine_rules() -> list[Any]:
    """The SL3xx rule modules, in code order."""
    from shapelint.rules import REGISTRY

    return [m for code, m in sorted(REGISTRY.items()) if code.startswith("SL3")]


def rules_for(name: str) -> list[str]:
    """Codes of the SL3xx rules that check engine ``name``."""
    return [m.RULE.code for m in engine_rules() if name in getattr(m, "VERIFIED", {})]


def check_engines(
    config: ModelConfig, target: Target, select: Iterable[str] | None = None
) -> list[Finding]:
    """Run the SL3xx rules (only codes starting with one of ``select``, when given) on one
    config and target: what the target's engines refuse or run slowly. For callers that
    filter candidate shapes (``shapelint suggest``) without going through the runner."""
    prefixes = tuple(s.upper() for s in select) if select is not None else None
    out: list[Finding] = []
    for module in engine_rules():
        code = module.RULE.code
        if prefixes is not None and not any(code.startswith(p) for p in prefixes):
            continue
        out.extend(module.check(config, target))
    return out
