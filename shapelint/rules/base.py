"""What every rule module shares: its identity, examples, and helpers to build findings and fixes.

A rule module defines ``RULE = Rule(...)``, ``EXAMPLES`` and ``check(config, target)``. The
`Rule` object builds findings so a module never repeats its own code, name or severity.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

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

if TYPE_CHECKING:
    from shapelint.core.source import Document
    from shapelint.dialects.common import KeyAliases


# What a rule looks at, in the order the engine runs them on one document (`SCOPES`):
# "reader": a problem a reader reports while reading the text (the rule only names it);
# "document": the whole document after its configs are extracted (``check_document``);
# "config": one `ModelConfig` on a target (``check``);
# "suppression": the document's suppressions against every other finding, run only when
# unused ignores are asked for (``check_suppressions``; also names stale baseline entries).
Scope = Literal["reader", "document", "config", "suppression"]
SCOPES: tuple[Scope, ...] = ("reader", "document", "config", "suppression")

# What a finding of the rule says (the code families of the design):
# "model": the file or config does not describe a working model (an error), or shapelint
# cannot read it as one; "alignment": a model dim misaligned for Tensor Core GEMMs;
# "batching": batch and parallel sizes; "engine": what a named engine refuses or runs slower.
Family = Literal["model", "alignment", "batching", "engine"]


@dataclass(frozen=True)
class Rule:
    """A rule's identity and what the engine needs to know to run it.

    ``code`` (SL101), ``name`` (vocab-padding), default ``severity``; ``summary`` is one line
    for ``shapelint rules``; ``source`` names the guideline's origin. ``family`` says what a
    finding means (`Family`), ``scope`` what the rule looks at (`Scope`). ``defers_to`` names
    rules whose finding at the same value says the same thing better: this rule's finding
    there is dropped. ``pads`` is the dim this rule's fix pads to the framework's multiple,
    where the fix is how a file pads it (``suggest`` pads a candidate's vocab that way).
    ``uses_micro_batch`` says a finding depends on the micro-batch (tokens per GEMM, attention
    blocks): the engine does not run the rule on the built-in micro-batch when the config
    states a batch no reader understood (`ModelConfig.unread_batch`).
    Options a team may tune are the module's ``OPTIONS`` (`shapelint.rules.options`).
    """

    code: str
    name: str
    severity: Severity
    summary: str
    source: str
    family: Family
    scope: Scope = "config"
    defers_to: tuple[str, ...] = ()
    pads: Dim | None = None
    uses_micro_batch: bool = False

    @property
    def needs_engines(self) -> bool:
        """Checked only against engines the config implies or the user names."""
        return self.family == "engine"

    @property
    def breaks_model(self) -> bool:
        """An error of this rule means the config does not describe a working model (so
        ``explain`` does not model it and ``suggest`` rejects a candidate that has one)."""
        return self.family == "model"

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
    """The shape of a rule module, for type checking the registry.

    A "config" rule has ``check``; a "document" rule has ``check_document`` instead
    (`DocumentRule`), a "suppression" rule ``check_suppressions`` (`SuppressionRule`), and a
    "reader" rule neither: its findings are the readers' problems.
    """

    RULE: Rule
    EXAMPLES: list[Example]
    __doc__: str | None

    def check(self, config: ModelConfig, target: Target) -> Iterator[Finding]: ...


class DocumentRule(Protocol):
    """A rule of scope "document": it reads the whole document and the configs found in it."""

    RULE: Rule

    def check_document(
        self, doc: Document, configs: Sequence[ModelConfig], keys: KeyAliases
    ) -> Iterator[Finding]: ...


class SuppressionRule(Protocol):
    """A rule of scope "suppression": it reads a document's suppressions and the findings
    made before they apply (``is_selected``: whether a code runs; ``known``: every code)."""

    RULE: Rule

    def check_suppressions(
        self,
        doc: Document,
        findings: Iterable[Finding],
        is_selected: Callable[[str], bool],
        known: Container[str],
    ) -> list[Finding]: ...


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
    "SCOPES",
    "DocumentRule",
    "Example",
    "Expect",
    "Family",
    "Rule",
    "RuleModule",
    "Scope",
    "SuppressionRule",
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
