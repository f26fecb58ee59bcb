"""The rules that check engines as a group (``shapelint engines`` lists them per engine)."""

from __future__ import annotations

from typing import Any


def engine_rules() -> list[Any]:
    """The rule modules that check what an engine accepts (`Rule.needs_engines`), in code
    order."""
    from shapelint.rules import REGISTRY

    return [m for code, m in sorted(REGISTRY.items()) if m.RULE.needs_engines]


def rules_for(name: str) -> list[str]:
    """Codes of the engine rules that check engine ``name``."""
    return [m.RULE.code for m in engine_rules() if name in getattr(m, "VERIFIED", {})]
