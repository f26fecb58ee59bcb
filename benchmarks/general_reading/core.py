"""Units, the shapelint run, matching and classification of the general-reading benchmark.

Nothing here reads a config the way shapelint does: the expected units come from each source
module's own reading (``json``, ``yaml``, ``ast``, ``re`` and the framework's cited defaults);
shapelint is only run as a subprocess, and its JSON report is compared with them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The dims compared. ``micro_batch`` is compared only where shapelint says it read it from the
# file (``target.origins.micro_batch == "config"``): its built-in 1 is a default, not a reading.
DIMS = (
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "ffn",
    "vocab",
    "layers",
    "seq_len",
    "micro_batch",
    "experts",
    "moe_ffn",
)

# The patterns of issue 23 a unit exhibits (a unit may show several).
PATTERNS = {
    "upper-attrs": "upper-case class attributes with inheritance across modules",
    "attr-assign": "attribute assignment on a config object, chained builders",
    "ml-collections": "ml_collections ConfigDict / get_config()",
    "dict-in-function": "dicts of presets built inside functions",
    "positional": "positional calls of a dataclass / NamedTuple",
    "getattr-arch": 'getattr(args, "k", default) arch functions',
    "main-or-if": "a config built in main() or under if size == ...",
    "keys": "key names outside the known families",
    "named-preset": "a named preset referenced from YAML / flags / a field",
    "fork": "fork semantics (multiquery, gated MLP, old flag spellings, MoE block)",
    "batch-form": "a batch stated in a form shapelint does not read",
    "class-call": "a config call held in a class attribute",
    "plain": "plain literal keys of a known family",
}


@dataclass
class Unit:
    """One model config of a source, with the dims an independent reading expects.

    ``expected`` maps a dim of :data:`DIMS` to its value; ``None`` marks a dim the independent
    reading could not determine (it does not count). ``names`` are the names shapelint may give
    the config (class, function, preset key); the first is the unit's own name. ``batch_stated``
    says the source states a batch in some form (global, per core, per replica) even where the
    micro-batch cannot be derived from it.
    """

    path: str
    names: tuple[str, ...]
    line: int
    expected: dict[str, int | None]
    patterns: tuple[str, ...] = ()
    batch_stated: bool = False
    note: str = ""

    @property
    def name(self) -> str:
        """The unit's own name."""
        return self.names[0] if self.names else ""

    def known(self) -> dict[str, int]:
        """The expected dims that count (known, not ``None``)."""
        return {d: v for d, v in self.expected.items() if v is not None}


@dataclass
class Source:
    """A public repository measured at a pinned commit.

    ``collect(root)`` returns the units; ``paths(root, units)`` the paths (relative to the
    root) shapelint is run on, by default the files holding units.
    """

    key: str
    repo: str
    commit: str
    community: str
    formats: str
    collect: Callable[[Path], list[Unit]]
    paths: Callable[[Path, list[Unit]], list[str]] | None = None


@dataclass
class Reading:
    """shapelint's report on a source: its configs and findings, paths relative to the root."""

    configs: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    error: str = ""


@dataclass
class Outcome:
    """A unit compared with shapelint's reading."""

    unit: Unit
    status: str  # "right", "unknown", "wrong", "missing"
    config: dict[str, Any] | None = None
    wrong: dict[str, tuple[int, Any]] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    batch_assumed: bool = False


def _norm_path(path: str) -> str:
    return os.path.normpath(path).replace(os.sep, "/")


def run_shapelint(python: str, root: Path, paths: Iterable[str], timeout: float) -> Reading:
    """Run ``python -m shapelint`` on ``paths`` inside ``root`` and parse its JSON report."""
    cmd = [
        python,
        "-m",
        "shapelint",
        "check",
        "--format",
        "json",
        "--min-slowdown",
        "0",
        "--no-cache",
        "--exit-zero",
        *paths,
    ]
    try:
        proc = subprocess.run(
            cmd, cwd=root, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return Reading([], [], f"timed out after {timeout:.0f} s")
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return Reading([], [], f"exit {proc.returncode}: {tail[0]}")
    for item in (*data.get("configs", []), *data.get("findings", [])):
        if isinstance(item.get("path"), str):
            item["path"] = _norm_path(item["path"])
    return Reading(list(data.get("configs", [])), list(data.get("findings", [])))


def _key(name: str) -> str:
    # Case and punctuation do not matter, dots do ("1.3b" is not "13b").
    return re.sub(r"[^0-9a-z.]", "", name.lower())


def _tails(name: str) -> set[str]:
    """A config name and the parts a unit's name may be: ``mod.Cls`` gives ``Cls``,
    ``SIZES['1.3b']`` gives ``1.3b``, ``MODEL_SIZE=1.7B`` (a shell arm) gives ``1.7B``."""
    out = {_key(name)}
    for part in re.split(r"[=:/\[\]'\"(),\s]+", name):
        if part:
            out |= {_key(part), _key(part.rsplit(".", 1)[-1])}
    return out - {""}


def got_dims(config: Mapping[str, Any]) -> dict[str, Any]:
    """The dims a shapelint config states, ``micro_batch`` only where read from the file."""
    dims = dict(config.get("dims") or {})
    target = config.get("target") or {}
    origins = target.get("origins") or {}
    if origins.get("micro_batch") != "config":
        dims.pop("micro_batch", None)
    elif "micro_batch" not in dims and "micro_batch" in target:
        dims["micro_batch"] = target["micro_batch"]
    return dims


def _agreement(unit: Unit, config: Mapping[str, Any]) -> tuple[int, int]:
    got = got_dims(config)
    known = unit.known()
    wrong = sum(1 for d, v in known.items() if d in got and got[d] != v)
    right = sum(1 for d, v in known.items() if got.get(d) == v)
    return (-wrong, right)


def match(units: list[Unit], configs: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Pair units with shapelint configs of the same file; returns unit index → config.

    A config is paired by name first (the unit's names against the config's name and its last
    component, case and punctuation ignored); a file holding one unit takes its one config, or
    the config that agrees best when shapelint read several (several size arms of one script).
    Each config is used once.
    """
    by_path: dict[str, list[int]] = {}
    for i, config in enumerate(configs):
        by_path.setdefault(_norm_path(str(config.get("path", ""))), []).append(i)
    used: set[int] = set()
    paired: dict[int, dict[str, Any]] = {}
    units_in: Counter[str] = Counter(_norm_path(u.path) for u in units)
    # By name.
    for ui, unit in enumerate(units):
        wanted = {_key(n) for n in unit.names if n}
        for ci in by_path.get(_norm_path(unit.path), []):
            if ci not in used and wanted & _tails(str(configs[ci].get("name", ""))):
                paired[ui] = configs[ci]
                used.add(ci)
                break
    # One unit in the file: the best-agreeing config left there.
    for ui, unit in enumerate(units):
        path = _norm_path(unit.path)
        if ui in paired or units_in[path] != 1:
            continue
        left = [ci for ci in by_path.get(path, []) if ci not in used]
        if left:
            best = max(left, key=lambda ci: _agreement(unit, configs[ci]))
            paired[ui] = configs[best]
            used.add(best)
    return paired


def classify(unit: Unit, config: dict[str, Any] | None) -> Outcome:
    """Compare one unit with the config paired to it (or none)."""
    if config is None:
        return Outcome(unit, "missing")
    got = got_dims(config)
    known = unit.known()
    wrong = {d: (v, got[d]) for d, v in known.items() if d in got and got[d] != v}
    missing = tuple(d for d in known if d not in got)
    target = config.get("target") or {}
    origins = target.get("origins") or {}
    assumed = unit.batch_stated and origins.get("micro_batch") == "default"
    # A unit with no expected-known dim cannot be judged right.
    status = "wrong" if wrong else "unknown" if missing or not known else "right"
    return Outcome(unit, status, config, wrong, missing, assumed)


@dataclass
class SourceResult:
    """The outcomes of one source and the files that stayed silent."""

    source: Source
    root: Path
    outcomes: list[Outcome]
    silent: list[str]
    files: int
    findings: int
    codes: Counter[str]
    error: str = ""

    def count(self, status: str) -> int:
        """How many units have ``status``."""
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def found(self) -> int:
        """Units shapelint produced a config for."""
        return len(self.outcomes) - self.count("missing")


def silent_files(units: list[Unit], reading: Reading) -> list[str]:
    """Files holding a unit that got neither a config nor an SL009 notice."""
    spoken = {_norm_path(str(c.get("path", ""))) for c in reading.configs}
    spoken |= {
        _norm_path(str(f.get("path", ""))) for f in reading.findings if f.get("code") == "SL009"
    }
    files = sorted({_norm_path(u.path) for u in units})
    return [f for f in files if f not in spoken]


def measure(source: Source, root: Path, python: str, timeout: float) -> SourceResult:
    """Collect a source's units, run shapelint on its files and compare."""
    units = source.collect(root)
    paths = (
        source.paths(root, units) if source.paths else sorted({_norm_path(u.path) for u in units})
    )
    reading = run_shapelint(python, root, paths, timeout) if paths else Reading([], [])
    paired = match(units, reading.configs)
    outcomes = [classify(u, paired.get(i)) for i, u in enumerate(units)]
    codes = Counter(str(f.get("code")) for f in reading.findings)
    return SourceResult(
        source,
        root,
        outcomes,
        silent_files(units, reading),
        len({_norm_path(u.path) for u in units}),
        len(reading.findings),
        codes,
        reading.error,
    )


def records(results: list[SourceResult]) -> list[dict[str, Any]]:
    """One JSON-able record per unit (to compare two installs unit by unit)."""
    out: list[dict[str, Any]] = []
    for r in results:
        for o in r.outcomes:
            out.append(
                {
                    "source": r.source.key,
                    "repo": r.source.repo,
                    "commit": r.source.commit,
                    "path": o.unit.path,
                    "name": o.unit.name,
                    "line": o.unit.line,
                    "patterns": list(o.unit.patterns),
                    "status": o.status,
                    "expected": o.unit.expected,
                    "read": got_dims(o.config) if o.config else None,
                    "config_name": o.config.get("name") if o.config else None,
                    "wrong": {d: list(v) for d, v in o.wrong.items()},
                    "missing": list(o.missing),
                    "batch_assumed": o.batch_assumed,
                    "silent_file": _norm_path(o.unit.path) in r.silent,
                }
            )
    return out


def _pct(n: int, total: int) -> str:
    return f"{n} ({100 * n / total:.0f}%)" if total else str(n)


def table(results: list[SourceResult]) -> list[str]:
    """The Markdown table: one row per source and the totals."""
    head = (
        "| source | commit | formats | configs | found | fully right | unknown | wrong "
        "| silent files | findings |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|"]
    tot = Counter[str]()
    for r in results:
        n = len(r.outcomes)
        row = {
            "configs": n,
            "found": r.found,
            "right": r.count("right"),
            "unknown": r.count("unknown"),
            "wrong": r.count("wrong"),
            "silent": len(r.silent),
            "files": r.files,
            "findings": r.findings,
        }
        tot.update(row)
        lines.append(
            f"| {r.source.repo} | {r.source.commit[:10]} | {r.source.formats} | {n} "
            f"| {_pct(row['found'], n)} | {_pct(row['right'], n)} | {row['unknown']} "
            f"| {row['wrong']} | {row['silent']} of {row['files']} | {row['findings']} |"
        )
    n = tot["configs"]
    lines.append(
        f"| **total** ({len(results)} sources) | | | {n} | {_pct(tot['found'], n)} "
        f"| {_pct(tot['right'], n)} | {tot['unknown']} | {tot['wrong']} "
        f"| {tot['silent']} of {tot['files']} | {tot['findings']} |"
    )
    return lines


def details(results: list[SourceResult], verbose: bool = False) -> list[str]:
    """Each wrong dim, the silent files, and (verbose) every unit not fully right."""
    out: list[str] = []
    for r in results:
        out.append("")
        out.append(f"## {r.source.key} ({r.source.repo} @ {r.source.commit})")
        if r.error:
            out.append(f"shapelint failed: {r.error}")
        codes = ", ".join(f"{c} {n}" for c, n in sorted(r.codes.items()))
        out.append(f"findings: {r.findings} ({codes or 'none'})")
        assumed = [o for o in r.outcomes if o.batch_assumed]
        if assumed:
            out.append(
                f"batch stated but read as the built-in micro-batch: {len(assumed)} found configs"
            )
        for o in r.outcomes:
            if o.status == "wrong":
                dims = "; ".join(
                    f"{d}: expected {e}, read {g}" for d, (e, g) in sorted(o.wrong.items())
                )
                out.append(f"  WRONG {o.unit.path}:{o.unit.line} {o.unit.name}: {dims}")
        for path in r.silent:
            out.append(f"  SILENT {path}")
        if verbose:
            for o in r.outcomes:
                if o.status == "unknown":
                    out.append(
                        f"  unknown {o.unit.path}:{o.unit.line} {o.unit.name}: "
                        f"not read {', '.join(o.missing)}"
                    )
                elif o.status == "missing":
                    pats = ",".join(o.unit.patterns)
                    out.append(f"  missing {o.unit.path}:{o.unit.line} {o.unit.name} [{pats}]")
    return out


def by_pattern(results: list[SourceResult]) -> list[str]:
    """Units per pattern: how many, and how many were found / fully right / wrong."""
    rows: dict[str, Counter[str]] = {}
    for r in results:
        for o in r.outcomes:
            for p in o.unit.patterns or ("plain",):
                c = rows.setdefault(p, Counter())
                c["units"] += 1
                c[o.status] += 1
    lines = [
        "| pattern | units | found | fully right | unknown | wrong |",
        "|---|---|---|---|---|---|",
    ]
    for p in PATTERNS:
        if p in rows:
            c = rows[p]
            found = c["units"] - c["missing"]
            lines.append(
                f"| {PATTERNS[p]} | {c['units']} | {found} | {c['right']} | {c['unknown']} "
                f"| {c['wrong']} |"
            )
    return lines
