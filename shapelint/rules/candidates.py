"""Whether a changed shape passes the rules: what ``shapelint suggest`` checks each candidate
config with, chosen by what the rules declare (`shapelint.rules.base.Rule`).

A candidate must describe a working model and be accepted by the target's engines
(`Rule.breaks_model`, `Rule.needs_engines` errors), and may not gain an alignment or engine
warning the original did not have.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from shapelint.core.model import Finding, Fix, ModelConfig, Target
from shapelint.rules.base import Rule, RuleModule


def checked(rule: Rule) -> bool:
    """A rule a candidate is checked with: one that says the config does not describe a
    working model, or that an engine refuses or slows it (a candidate must pass them), and
    the alignment rules (a candidate may not gain a code the original did not have)."""
    return rule.breaks_model or rule.needs_engines or rule.family == "alignment"


def checked_rules() -> list[RuleModule]:
    """The config rules a candidate is checked with (`checked`), in code order."""
    from shapelint.rules import config_rules

    return [m for m in config_rules() if checked(m.RULE)]


def _findings(
    config: ModelConfig, target: Target, rules: Sequence[RuleModule]
) -> list[tuple[Rule, Finding]]:
    return [(module.RULE, f) for module in rules for f in module.check(config, target)]


def _fatal(rule: Rule, f: Finding) -> bool:
    """A finding that the config is no working model, or an engine's refusal (an error)."""
    return rule.breaks_model or (rule.needs_engines and f.severity == "error")


def refusals(
    config: ModelConfig, target: Target, rules: Sequence[RuleModule] | None = None
) -> list[str]:
    """The reasons the target refuses ``config`` as written, as ``SLxxx: message``."""
    modules = checked_rules() if rules is None else list(rules)
    return [f"{f.code}: {f.message}" for r, f in _findings(config, target, modules) if _fatal(r, f)]


# The tensor-parallel sizes tried when the original is refused: one node and a little beyond.
TP_TRIED = tuple(range(1, 17))


def accepted_tp(
    config: ModelConfig, target: Target, rules: Sequence[RuleModule] | None = None
) -> tuple[int, ...]:
    """The sizes in `TP_TRIED` at which the target accepts ``config`` unchanged."""
    modules = checked_rules() if rules is None else list(rules)
    return tuple(
        t
        for t in TP_TRIED
        if not any(_fatal(r, f) for r, f in _findings(config, replace(target, tp=t), modules))
    )


def validator(
    config: ModelConfig, target: Target, rules: Sequence[RuleModule] | None = None
) -> Callable[[ModelConfig, Target], bool]:
    """The rule check of a candidate: no SL0xx finding and no SL3xx error (the config does
    not describe a working model, or an engine of the target refuses it), and no SL1xx or
    SL3xx warning whose code the original (``config`` on ``target``) did not already have
    (never worse aligned, never onto a slower engine kernel). ``rules`` defaults to
    `checked_rules`."""
    modules = checked_rules() if rules is None else list(rules)
    had = {f.code for _, f in _findings(config, target, modules)}

    def valid(candidate: ModelConfig, cand_target: Target) -> bool:
        for r, f in _findings(candidate, cand_target, modules):
            if _fatal(r, f) or f.code not in had:
                return False
        return True

    return valid


def vocab_padding(config: ModelConfig, target: Target) -> Fix | None:
    """The fix of the rule that pads the vocab (`Rule.pads`) for the config, when it has one:
    how this file pads its vocab."""
    from shapelint.core.model import Dim
    from shapelint.rules import config_rules

    module = next((m for m in config_rules() if m.RULE.pads is Dim.VOCAB), None)
    if module is None:
        return None
    for finding in module.check(config, target):
        if finding.fix is not None:
            return finding.fix
    return None


def checked_codes() -> tuple[str, ...]:
    """The codes of every rule a candidate is checked with, whatever it looks at (`checked`)."""
    from shapelint.rules import REGISTRY

    return tuple(code for code, m in sorted(REGISTRY.items()) if checked(m.RULE))
