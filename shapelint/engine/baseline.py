"""Baselines: adopt shapelint on a large repository without fixing everything first.

``--write-baseline FILE`` records today's findings; ``--baseline FILE`` (or settings
``baseline = "…"``) hides the findings recorded there. An entry is matched by the file's path
(relative to the baseline file), the rule code, the config's name, the key and the value —
never by line, so edits elsewhere in a file keep the match, while changing the value itself
(a new vocab size) makes the finding new again. Each entry hides one finding. With
``--report-unused-ignores``, an entry for a linted file that matched nothing is reported as
SL008 at its line in the baseline file, so stale entries get cleaned up.

The file is JSON, one entry per line, sorted, so that it diffs well in review.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from shapelint.core.limits import too_deep
from shapelint.core.model import Finding
from shapelint.core.source import LineIndex
from shapelint.core.text import json_value, one_line, shown_path

if TYPE_CHECKING:
    from shapelint.rules.base import Rule

VERSION = 1
EntryKey = tuple[str, str, str, str, str]


class BaselineError(Exception):
    """A baseline file that cannot be read or is not a shapelint baseline (exit 2)."""


def _value_key(value: object) -> str:
    return json.dumps(json_value(value), sort_keys=True)


def relative(path: str, root: str) -> str:
    """``path`` relative to ``root`` with ``/`` separators (absolute when on another drive)."""
    full = os.path.abspath(path)
    try:
        return Path(os.path.relpath(full, root)).as_posix()
    except ValueError:  # pragma: no cover - Windows: another drive
        return Path(full).as_posix()


@dataclass(frozen=True)
class Entry:
    """One recorded finding, and the line it sits on in the baseline file."""

    path: str
    code: str
    config: str
    key: str
    value: object
    line: int = 1

    @property
    def match_key(self) -> EntryKey:
        """What a finding must share with this entry to be hidden by it."""
        return (self.path, self.code, self.config, self.key, _value_key(self.value))

    def as_json(self) -> dict[str, object]:
        """The entry as written to the file."""
        return {
            "path": self.path,
            "code": self.code,
            "config": self.config,
            "key": self.key,
            "value": json_value(self.value),
        }


@dataclass(frozen=True)
class Baseline:
    """A loaded baseline: its path and entries, grouped by the linted file they name."""

    path: str
    entries: tuple[Entry, ...] = ()
    by_file: dict[str, tuple[Entry, ...]] = field(default_factory=dict, compare=False)
    # The file's line index and lines, read once for every stale entry (`_located`).
    _located_cache: list[tuple[LineIndex, list[str]]] = field(
        default_factory=list, compare=False, repr=False
    )

    @property
    def root(self) -> str:
        """The directory entry paths are relative to."""
        return os.path.dirname(os.path.abspath(self.path))

    def finding_key(self, finding: Finding) -> EntryKey:
        """The match key of ``finding`` under this baseline."""
        return (
            relative(finding.path, self.root),
            finding.code,
            finding.config,
            finding.key,
            _value_key(finding.value),
        )

    def apply(self, path: str, findings: Sequence[Finding], stale: Rule | None) -> list[Finding]:
        """``findings`` of the file at ``path`` less those recorded here; with a ``stale``
        rule (the one that reports suppressions hiding nothing), plus a finding of that rule
        for each entry of that file that matched none."""
        entries = self.by_file.get(relative(path, self.root), ())
        if not entries:
            return list(findings)
        left = Counter(e.match_key for e in entries)
        kept = []
        for f in findings:
            key = self.finding_key(f)
            if left[key] > 0:
                left[key] -= 1
            else:
                kept.append(f)
        if stale is not None:
            for e in entries:
                if left[e.match_key] > 0:
                    left[e.match_key] -= 1
                    kept.append(self._stale(e, stale))
        return kept

    def _located(self) -> tuple[LineIndex, list[str]]:
        """The baseline file's line index and lines, read on the first stale entry and kept:
        reading and indexing the file again for each one made 30,000 entries take 254 s."""
        if not self._located_cache:
            text = self._text()
            self._located_cache.append((LineIndex(text), text.split("\n")))
        return self._located_cache[0]

    def _stale(self, entry: Entry, rule: Rule) -> Finding:
        index, lines = self._located()
        line = min(max(entry.line, 1), len(lines))
        start = index.offset(line, 1) + (len(lines[line - 1]) - len(lines[line - 1].lstrip()))
        end = index.offset(line, 1) + len(lines[line - 1].rstrip().rstrip(","))
        where = f"{entry.key} ({entry.value})" if entry.key else "the file"
        return Finding(
            code=rule.code,
            name=rule.name,
            severity=rule.severity,
            message=(
                f"baseline entry matches no finding: {entry.code} at {where} in {entry.path}; "
                "remove it (or rewrite the baseline with --write-baseline)"
            ),
            path=self.path,
            span=index.span(self.path, start, max(start, end)),
            key=f"{entry.path}:{entry.code}:{entry.key}",
        )

    def _text(self) -> str:
        from shapelint.engine.reading import read_text

        try:
            return read_text(self.path)
        except OSError:
            return ""


def _entry_lines(text: str) -> dict[int, int]:
    """Entry index → 1-based line, for entries written one per line (as `write` does)."""
    out: dict[int, int] = {}
    count = 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip().rstrip(",")
        if stripped.startswith("{") and stripped.endswith("}") and '"code"' in stripped:
            out[count] = number
            count += 1
    return out


def load(path: str) -> Baseline:
    """Read and check a baseline file; `BaselineError` with one line on any problem."""
    from shapelint.engine.reading import read_text

    shown = shown_path(path)
    try:
        text = read_text(path)
    except FileNotFoundError:
        raise BaselineError(f"baseline file {shown} does not exist") from None
    except OSError as exc:
        raise BaselineError(f"cannot read baseline file {shown}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{shown}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise BaselineError(f"{shown}: invalid JSON: nested too deeply") from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise BaselineError(f"{shown}: invalid JSON: {one_line(str(exc))}") from None
    deep = too_deep(data)
    if deep is not None:
        raise BaselineError(f"{shown}: {deep}")
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise BaselineError(f'{shown}: not a shapelint baseline (expected {{"findings": [...]}})')
    if data.get("version") != VERSION:
        version = one_line(repr(data.get("version")), 40)
        raise BaselineError(f"{shown}: unsupported baseline version {version}")
    lines = _entry_lines(text)
    entries = []
    for i, item in enumerate(data["findings"]):
        if not isinstance(item, dict) or not all(
            isinstance(item.get(k), str) for k in ("path", "code", "config", "key")
        ):
            raise BaselineError(
                f"{shown}: findings[{i}]: expected an object with string path, code, config, key"
            )
        entries.append(
            Entry(
                item["path"],
                item["code"],
                item["config"],
                item["key"],
                item.get("value"),
                lines.get(i, 1),
            )
        )
    by_file: dict[str, list[Entry]] = {}
    for e in entries:
        by_file.setdefault(e.path, []).append(e)
    return Baseline(path, tuple(entries), {k: tuple(v) for k, v in by_file.items()})


_LOADED: dict[str, Baseline] = {}


def load_cached(path: str) -> Baseline:
    """`load`, once per file per process (every settings file may name the same baseline)."""
    key = os.path.abspath(path)
    if key not in _LOADED:
        _LOADED[key] = load(path)
    return _LOADED[key]


def _about_suppressions(finding: Finding) -> bool:
    """A finding about a suppression or a baseline entry that hides nothing."""
    from shapelint.rules import get

    module = get(finding.code)
    return module is not None and module.RULE.scope == "suppression"


def render(findings: Iterable[Finding], path: str) -> str:
    """The baseline file recording ``findings`` (paths relative to ``path``'s directory)."""
    root = os.path.dirname(os.path.abspath(path))
    entries = sorted(
        (
            Entry(relative(f.path, root), f.code, f.config, f.key, f.value)
            for f in findings
            if not _about_suppressions(f)  # a stale entry or unused ignore is not one to keep
        ),
        key=lambda e: (e.path, e.code, e.config, e.key, _value_key(e.value)),
    )
    rows = [json.dumps(e.as_json(), ensure_ascii=False) for e in entries]
    body = ",\n    ".join(rows)
    findings_text = f"[\n    {body}\n  ]" if rows else "[]"
    return f'{{\n  "version": {VERSION},\n  "findings": {findings_text}\n}}\n'


def write(findings: Sequence[Finding], path: str) -> int:
    """Write the baseline (`shapelint.engine.writer.write_output`); the number of entries
    written. `WriteRefused` or the OS's OSError when it cannot be written."""
    from shapelint.engine.writer import write_output

    write_output(path, render(findings, path).encode("utf-8"))
    return sum(1 for f in findings if not _about_suppressions(f))


__all__ = ["Baseline", "BaselineError", "Entry", "load", "load_cached", "render", "write"]
