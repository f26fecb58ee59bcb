"""What a run produces: each file's configs, findings and suppressions, and the whole result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shapelint.core.model import Finding, ModelConfig
from shapelint.core.source import Document
from shapelint.dialects.common import KeyAliases
from shapelint.engine.discover import Skipped, SourceFile

if TYPE_CHECKING:
    from shapelint.engine.assumed import AssumedTarget


@dataclass
class InternalError:
    """An unexpected exception while linting one file (a shapelint bug)."""

    path: str
    error: str


@dataclass
class FileResult:
    """What linting one file produced."""

    source: SourceFile
    doc: Document
    configs: list[ModelConfig]
    findings: list[Finding]
    # Each config's target and which fields were defaults, by config name (lint.assumed).
    targets: dict[str, AssumedTarget] = field(default_factory=dict)
    # Findings hidden by a ``# shapelint: ignore`` / ``disable-file`` comment, with reasons.
    suppressed: list[Suppressed] = field(default_factory=list)
    # The settings key map that applied to the file, and which of its names matched a key.
    keys: KeyAliases = field(default_factory=dict)
    matched_keys: frozenset[str] = frozenset()
    # False when the file could not be read (its one finding says why).
    read: bool = True
    # False when ``doc`` lacks its parsed tree (a result from the cache or a worker process):
    # the fixer then parses the file again instead of reusing ``doc``.
    complete: bool = True


@dataclass(frozen=True)
class Suppressed:
    """A finding an in-file comment hid, and the reason written after ``--`` (or "")."""

    finding: Finding
    reason: str


@dataclass
class LintResult:
    """What linting all files produced, findings sorted by path and position."""

    files: list[FileResult] = field(default_factory=list)
    errors: list[InternalError] = field(default_factory=list)
    # Files found by a walk (or passed by pre-commit) and not read: not regular files, and
    # files with no model-shape keys that do not parse. ``-v`` lists them.
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        """All findings, sorted by path, line, column and code.

        A value a class inherits from another file keeps that file's position, so two files
        can report the same finding there (a base class and its subclass in a sibling module);
        it is listed once.
        """
        out: dict[tuple[str, int, int, str, str], Finding] = {}
        for r in self.files:
            for f in r.findings:
                out.setdefault((f.path, f.span.start, f.span.end, f.code, f.message), f)
        return sorted(out.values(), key=lambda f: (f.path, f.span.line, f.span.column, f.code))

    def unmatched_keys(self) -> list[tuple[str, str]]:
        """``(dim, key name)`` of a settings key map that matched no key in any file it
        applied to (a typo, or a path that is not where the file keeps the value)."""
        applied: dict[tuple[str, str], bool] = {}
        for r in self.files:
            for dim, names in r.keys.items():
                for name in names:
                    pair = (dim.value, name)
                    applied[pair] = applied.get(pair, False) or name in r.matched_keys
        return [pair for pair, hit in applied.items() if not hit]

    @property
    def configs(self) -> list[ModelConfig]:
        """All configs read, in file order."""
        return [c for r in self.files for c in r.configs]
