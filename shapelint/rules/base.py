"""What every rule module shares: its identity, examples, and helpers to build findings and fixes.

A rule module defines ``RULE = Rule(...)``, ``EXAMPLES`` and ``check(config, target)``. The
`Rule` object builds findings so a module never repeats its own code, name or severity.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal, Protocol

from shapelint.core.arith import pow2_factor, round_up
from shapelint.core.model import (
    Applicability,
    Dim,
    Edit,
    Finding,
    Fix,
    ModelConfig,
    Severity,
    Target,
    Value,
)


@dataclass(frozen=True)
class Rule:
    """A rule's identity: ``code`` (SL101), ``name`` (vocab-padding), default severity.

    ``summary`` is one line for ``shapelint rules``; ``source`` names the guideline's origin.
    ``kind`` is "config" for rules that read a `ModelConfig`, "document" for problems the
    parsers find in the text itself (syntax errors, duplicate keys).
    """

    code: str
    name: str
    severity: Severity
    summary: str
    source: str
    kind: Literal["config", "document"] = "config"

    def finding(
        self,
        config: ModelConfig,
        value: Value,
        message: str,
        *,
        related: Iterable[Value] = (),
        fix: Fix | None = None,
    ) -> Finding:
        """A finding of this rule pointing at ``value`` in ``config`` (in the file where the
        value is written: a Python class's inherited value may sit in its base's file)."""
        return Finding(
            code=self.code,
            name=self.name,
            severity=self.severity,
            message=message,
            path=value.span.path if written_elsewhere(config, value) else config.path,
            span=value.span,
            config=config.name,
            key=value.key,
            value=value.value,
            related=tuple(related),
            fix=fix,
        )


@dataclass(frozen=True)
class Expect:
    """A finding an invalid example must produce: on 1-based ``line``, covering exactly the
    text ``at`` (its range), with ``message`` contained in its message."""

    line: int
    at: str
    message: str


@dataclass(frozen=True)
class Example:
    """A config that a rule accepts (``valid``) or reports, run as a test and shown in the docs.

    ``text`` is a whole file in ``format``; ``target`` overrides target fields (``{"tp": 2}``);
    an invalid example's ``fixed`` is the file after ``--unsafe-fixes`` (None: no fix) and
    ``expect`` lists exactly the findings it must produce (range and message).
    """

    text: str
    valid: bool
    format: str = "json"
    target: dict[str, object] = field(default_factory=dict)
    fixed: str | None = None
    note: str = ""
    expect: tuple[Expect, ...] = ()


class RuleModule(Protocol):
    """The shape of a rule module, for type checking the registry."""

    RULE: Rule
    EXAMPLES: list[Example]
    __doc__: str | None

    def check(self, config: ModelConfig, target: Target) -> Iterator[Finding]: ...


def applicability(
    config: ModelConfig, values: Iterable[Value], architecture: bool
) -> Applicability:
    """``unsafe`` when a fix changes the architecture, touches a config with trained weights,
    a YAML value shared through an alias, or a value computed by an expression."""
    if architecture or config.pretrained:
        return "unsafe"
    if any(v.shared or v.expression is not None for v in values):
        return "unsafe"
    return "safe"


def make_fix(
    config: ModelConfig,
    description: str,
    changes: Iterable[tuple[Value, object]],
    *,
    architecture: bool,
    dims: Iterable[tuple[Dim, object]] = (),
) -> Fix | None:
    """A fix that sets each written (non-derived) value to a new one; None if any is derived."""
    pairs = list(changes)
    if not pairs or any(v.derived or not v.known or written_elsewhere(config, v) for v, _ in pairs):
        return None
    edits = tuple(Edit(v.span, v.key, v.value, new) for v, new in pairs)
    return Fix(
        description=description,
        applicability=applicability(config, (v for v, _ in pairs), architecture),
        edits=edits,
        dims=tuple(dims),
    )


def written_elsewhere(config: ModelConfig, value: Value) -> bool:
    """True when ``value`` is written in another file than ``config`` (a Python base class
    imported from a sibling module): it is read, and never fixed from this file."""
    return bool(value.span.path) and bool(config.path) and value.span.path != config.path


def describe(value: Value) -> str:
    """``key (value)`` or, for a derived value, ``formula = value``."""
    if value.derived:
        return f"{value.formula} = {value.value}"
    return f"{value.key} ({value.value})"


__all__ = [
    "Example",
    "Expect",
    "Rule",
    "RuleModule",
    "applicability",
    "describe",
    "make_fix",
    "pow2_factor",
    "round_up",
]


def consistent_dims(config: ModelConfig, changes: dict[Dim, int]) -> dict[Dim, int]:
    """``changes`` plus the derived dims they imply (head dim, KV heads, FFN width …).

    A fix edits written values; dims derived from them must follow, or the performance model
    would estimate a config no framework would build. Each derived dim is recomputed with the
    formula of the dialect that derived it (`ModelConfig.rederive`), never another framework's.
    """
    return config.rederive(changes)
