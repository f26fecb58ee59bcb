"""Settings files: ``[tool.shapelint]`` in ``pyproject.toml``, or ``.shapelint.toml``.

Each linted file takes the settings of the nearest settings file found by walking up from its
directory (``.shapelint.toml`` before ``pyproject.toml`` in one directory; a ``pyproject.toml``
without ``[tool.shapelint]`` does not count). The walk stops at a directory holding ``.git``
or at the filesystem root. ``--config FILE`` replaces the search for every file.

Files are validated once, when loaded, against ``settings.schema.json``; a problem is a
`SettingsError` whose one-line message names the file, the key and what was expected. The
target fields' keys (``micro-batch`` …), their schema entries and their parsing come from their
declaration (`shapelint.core.target`).
``jsonschema`` is imported only when a settings file exists.
"""

from __future__ import annotations

import fnmatch
import importlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from shapelint.core.dtypes import normalize_dtype
from shapelint.core.limits import non_finite, too_deep
from shapelint.core.model import Dim
from shapelint.core.target import TargetField, TargetOptions
from shapelint.core.text import one_line, shown_path
from shapelint.dialects.common import KeyAliases
from shapelint.engine.discover import as_posix
from shapelint.engine.settings_schema import SCHEMA_PATH, TARGET_KEYS


def _tomllib() -> Any:
    """The TOML parser, imported only when a settings file is read (~3 ms with ``datetime``)."""
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    return importlib.import_module("tomli")  # pragma: no cover - Python 3.10: the same parser


SETTINGS_FILES = (".shapelint.toml", "pyproject.toml")
BUDGET_KEYS = (
    "max-file-size-mb",
    "max-python-tokens",
    "max-expression-tokens",
    "max-seconds-per-file",
)


class SettingsError(Exception):
    """A settings file that cannot be read or does not match the schema (exit 2)."""


@dataclass(frozen=True)
class Settings:
    """Validated settings of one file; None / empty means "not set here"."""

    path: str | None = None
    gpu: tuple[str, ...] | None = None
    gpu_file: str | None = None
    # The target fields these settings choose (`shapelint.core.target`; key ``micro-batch``
    # for the field ``micro_batch``).
    target: TargetOptions = TargetOptions()
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()
    min_slowdown: float | None = None
    fail_on: str | None = None
    keys: KeyAliases = field(default_factory=dict)
    baseline: str | None = None
    severity: Mapping[str, str] = field(default_factory=dict)
    # [rules.CODE] tables: code → that rule's validated Options.
    rule_options: Mapping[str, object] = field(default_factory=dict)
    # The settings files this one extends, nearest first (``extend = "…"``).
    extends: tuple[str, ...] = ()
    # Per-file work limits (`shapelint.core.limits`), by setting name; unset: default.
    budget: Mapping[str, Any] = field(default_factory=dict)

    @property
    def root(self) -> str | None:
        """The directory relative paths in these settings are resolved against."""
        return os.path.dirname(os.path.abspath(self.path)) if self.path else None

    def excludes(self, path: str) -> bool:
        """True when ``path`` matches one of these settings' ``exclude`` globs.

        A glob matches the path relative to the settings file, any leading part of it
        (``legacy`` or ``legacy/*``), or any single file or directory name in it.
        """
        if not self.exclude:
            return False
        root = self.root or os.getcwd()
        rel = as_posix(os.path.relpath(os.path.abspath(path), root))
        parts = rel.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        return any(
            fnmatch.fnmatch(candidate, pattern)
            for pattern in self.exclude
            for candidate in (*prefixes, *parts)
        )


EMPTY = Settings()


def _schema() -> dict[str, Any]:
    with open(SCHEMA_PATH, encoding="utf-8") as fh:
        schema: dict[str, Any] = json.load(fh)
    return schema


def _display(path: str) -> str:
    rel = os.path.relpath(path)
    return shown_path(path if rel.startswith("..") else rel)


def _describe_error(error: Any, data: Mapping[str, Any], schema: Mapping[str, Any]) -> str:
    """One line for a jsonschema ValidationError: the key and what was expected."""
    props: Mapping[str, Any] = schema["properties"]
    path = [str(p) for p in error.absolute_path]
    if error.validator == "additionalProperties" and not path:
        unknown = sorted(k for k in data if k not in props)
        key = unknown[0] if unknown else "?"
        import difflib

        close = difflib.get_close_matches(key, list(props), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"unknown key {key!r} (known keys: {', '.join(props)}){hint}"
    if "propertyNames" in error.schema_path and path[:1] == ["severity"]:
        return f"severity: {json.dumps(error.instance)} is not a rule code or prefix such as SL102"
    if "propertyNames" in error.schema_path:
        names = props["keys"]["propertyNames"]["enum"]
        return f"keys: unknown dim {error.instance!r} (expected one of {', '.join(names)})"
    key = path[0] if path else "?"
    where = key + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in path[1:])
    expected = props.get(key, {}).get("description", error.message)
    if error.validator == "maximum" and "at most" not in expected:
        expected += f" of at most {error.validator_value}"
    return f"{where}: expected {expected}, got {one_line(json.dumps(error.instance), 80)}"


def validate(data: Mapping[str, Any], where: str) -> None:
    """Check ``data`` against the settings schema; raise SettingsError naming ``where``."""
    import jsonschema

    bad = non_finite(data)
    if bad is not None:  # NaN passes every bound of a JSON schema: refused here, by name
        path, number = bad
        key = str(path[0]) + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[1:])
        raise SettingsError(f"{where}: {key}: expected a finite number, got {number}")
    schema = _schema()
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        raise SettingsError(f"{where}: {_describe_error(error, data, schema)}")
    for spec in TARGET_KEYS:
        value = data.get(spec.key)
        if spec.kind == "dtype" and value is not None and normalize_dtype(value) is None:
            raise SettingsError(
                f"{where}: {spec.key}: expected {spec.expected}, got {json.dumps(value)}"
            )


def _codes(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(v.strip().upper() for v in values)


def _check_codes(data: Mapping[str, Any], where: str) -> None:
    """Refuse rule codes or prefixes that match no registered rule (closest one suggested)."""
    from shapelint.rules.codes import UnknownCodeError, check_selectors

    lists: list[tuple[str, Iterable[str]]] = [
        (key, data[key]) for key in ("select", "ignore") if key in data
    ]
    lists += [("severity", list(data.get("severity", {})))]
    lists += [
        (f"per-file-ignores.{json.dumps(glob)}", codes)
        for glob, codes in data.get("per-file-ignores", {}).items()
    ]
    try:
        for key, codes in lists:
            check_selectors(codes, f"{where}: {key}")
    except UnknownCodeError as exc:
        raise SettingsError(str(exc)) from None


# Tables an extending file merges key by key with the extended one's; other keys replace.
_MERGED_TABLES = ("severity", "per-file-ignores", "keys", "rules")
# Keys holding a path, resolved against the file that states them.
_PATH_KEYS = ("gpu-file", "baseline")


# The most settings files one ``extend`` chain may name (a chain is followed file by file).
MAX_EXTEND = 32


def _extended(
    data: Mapping[str, Any], path: str, chain: tuple[str, ...]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``data`` merged over the settings its ``extend`` names (and theirs, up to `MAX_EXTEND`
    files), with the chain of files extended; a cycle, a missing file or an invalid one is a
    `SettingsError`. The chain is followed in a loop, never by recursion."""
    layers: list[Mapping[str, Any]] = [data]
    extends: tuple[str, ...] = ()
    current, current_data = path, data
    while "extend" in current_data:
        root = os.path.dirname(os.path.abspath(current))
        target = os.path.abspath(os.path.join(root, current_data["extend"]))
        shown = _display(current)
        if target in chain:
            cycle = " -> ".join(_display(p) for p in (*chain, target))
            raise SettingsError(
                f"{shown}: extend: settings files extend each other in a cycle: {cycle}"
            )
        if len(extends) >= MAX_EXTEND:
            raise SettingsError(
                f"{_display(path)}: extend: the chain of extended settings files is longer "
                f"than {MAX_EXTEND} files (at {shown})"
            )
        if not os.path.lexists(target):
            raise SettingsError(f"{shown}: extend: no such settings file {_display(target)}")
        base = _section(target, _read_toml(target))
        if not isinstance(base, dict):
            raise SettingsError(
                f"{shown}: extend: {_display(target)} has no [tool.shapelint] table"
            )
        where = f"{_display(target)} (extended by {shown})"
        validate(base, where)
        _check_codes(base, where)
        base_root = os.path.dirname(target)
        base = {k: os.path.join(base_root, v) if k in _PATH_KEYS else v for k, v in base.items()}
        layers.append(base)
        chain = (*chain, target)
        extends += (target,)
        current, current_data = target, base
    # The farthest file first; each nearer one merged over it.
    merged: dict[str, Any] = dict(layers[-1])
    for layer in reversed(layers[:-1]):
        merged = _merge(merged, layer)
    merged.pop("extend", None)
    return merged, extends


def _merge(base: Mapping[str, Any], data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` over ``base``: tables in `_MERGED_TABLES` key by key, other keys replaced."""
    merged = dict(base)
    for key, value in data.items():
        if key == "rules" and isinstance(merged.get(key), dict):
            merged[key] = {
                code: {**merged[key].get(code, {}), **table} for code, table in value.items()
            } | {code: t for code, t in merged[key].items() if code not in value}
        elif key in _MERGED_TABLES and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _rule_options(tables: Mapping[str, Any], where: str) -> dict[str, object]:
    """Each ``[rules.CODE]`` table as that rule's validated ``Options``."""
    from shapelint.rules.options import build

    try:
        return {code.strip().upper(): build(code.strip(), table) for code, table in tables.items()}
    except ValueError as exc:
        raise SettingsError(f"{where}: {exc}") from None


def from_dict(data: Mapping[str, Any], path: str) -> Settings:
    """Validated settings from the table read from ``path``."""
    shown = _display(path)
    where = f"{shown} [tool.shapelint]" if os.path.basename(path) == "pyproject.toml" else shown
    validate(data, where)
    _check_codes(data, where)
    extends: tuple[str, ...] = ()
    if "extend" in data:
        data, extends = _extended(data, path, (os.path.abspath(path),))
    root = os.path.dirname(os.path.abspath(path))
    gpu_file = data.get("gpu-file")
    target = {s.name: _target_value(s, data[s.key], where) for s in TARGET_KEYS if s.key in data}
    return Settings(
        path=path,
        gpu=_names(data["gpu"]) if "gpu" in data else None,
        gpu_file=os.path.join(root, gpu_file) if gpu_file else None,
        target=TargetOptions(**target),
        select=_codes(data["select"]) if "select" in data else None,
        ignore=_codes(data.get("ignore", ())),
        per_file_ignores={k: _codes(v) for k, v in data.get("per-file-ignores", {}).items()},
        exclude=tuple(data.get("exclude", ())),
        min_slowdown=float(data["min-slowdown"]) if "min-slowdown" in data else None,
        fail_on=data.get("fail-on"),
        keys={Dim(k): tuple(v) for k, v in data.get("keys", {}).items()},
        baseline=os.path.join(root, data["baseline"]) if "baseline" in data else None,
        severity={k.strip().upper(): v for k, v in data.get("severity", {}).items()},
        rule_options=_rule_options(data.get("rules", {}), where),
        extends=extends,
        budget={k.replace("-", "_"): data[k] for k in BUDGET_KEYS if k in data},
    )


def target_choice(
    values: Mapping[str, Any], where: str
) -> tuple[tuple[str, ...] | None, TargetOptions]:
    """The GPU names (None: not chosen) and target fields that ``values``, keyed by settings
    keys (``gpu``, ``micro-batch`` …), choose: validated and read as a settings file's are,
    errors a `SettingsError` naming ``where`` (the Python API's ``target=``)."""
    validate(values, where)
    gpus = _names(values["gpu"]) if "gpu" in values else None
    target = {
        s.name: _target_value(s, values[s.key], where) for s in TARGET_KEYS if s.key in values
    }
    return gpus, TargetOptions(**target)


def _names(value: str | Iterable[str]) -> tuple[str, ...]:
    """A list-valued setting written as one name (``gpu = "A100"``) or as a list."""
    return (value,) if isinstance(value, str) else tuple(value)


def _target_value(spec: TargetField, value: Any, where: str) -> object:
    """A settings value of the target field ``spec`` (valid by the schema) as the target holds
    it; a value the field's own parser refuses is a `SettingsError` naming the key."""
    try:
        if spec.kind == "dtype":
            return normalize_dtype(value)
        if spec.kind == "engines":
            from shapelint.hardware.engines import canonical

            return canonical(_names(value))
        if spec.kind == "fused":
            from shapelint.perf.fusion import fused_spec

            return fused_spec(value)
        for old, choice in spec.aliases:  # ``recompute = true``: the older boolean spelling
            if value is old:
                return choice
    except ValueError as exc:  # UnknownEngineError is one
        raise SettingsError(f"{where}: {spec.key}: {exc}") from None
    return value


def _read_toml(path: str) -> dict[str, Any]:
    """The TOML table of the settings file at ``path``, read with the bounded reader
    (`shapelint.engine.reading`): regular files only, the default size limit, nesting within
    `MAX_DEPTH`; any problem is a one-line `SettingsError`."""
    from shapelint.engine.reading import read_text

    tomllib = _tomllib()
    shown = _display(path)
    try:
        text = read_text(path)
    except OSError as exc:
        raise SettingsError(f"cannot read settings file {shown}: {exc.strerror or exc}") from None
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except RecursionError:
        raise SettingsError(f"{shown}: invalid TOML: nested too deeply") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{shown}: invalid TOML: {one_line(str(exc))}") from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise SettingsError(f"{shown}: invalid TOML: {one_line(str(exc))}") from None
    deep = too_deep(data)
    if deep is not None:
        raise SettingsError(f"{shown}: {deep}")
    return data


def _section(path: str, data: Mapping[str, Any]) -> Any:
    """The shapelint table of a parsed file: [tool.shapelint] or the whole file; None if absent."""
    if os.path.basename(path) != "pyproject.toml":
        return data
    tool = data.get("tool")
    return tool.get("shapelint") if isinstance(tool, dict) else None


def load(path: str) -> Settings:
    """Settings from ``path`` (an explicit ``--config``): a missing section means no settings."""
    data = _read_toml(path)
    section = _section(path, data)
    if section is None:
        return replace(EMPTY, path=path)
    if not isinstance(section, dict):
        raise SettingsError(f"{_display(path)}: [tool.shapelint] must be a table")
    return from_dict(section, path)


class SettingsResolver:
    """Finds and caches the settings of each directory (or uses one ``--config`` file)."""

    def __init__(self, config: str | None = None) -> None:
        self._fixed = load(config) if config is not None else None
        self._by_dir: dict[str, Settings] = {}

    def for_file(self, path: str) -> Settings:
        """The settings that apply to the file at ``path``."""
        if self._fixed is not None:
            return self._fixed
        return self._for_dir(os.path.dirname(os.path.abspath(path)))

    def _for_dir(self, directory: str) -> Settings:
        cached = self._by_dir.get(directory)
        if cached is not None:
            return cached
        found = self._here(directory)
        if found is None:
            parent = os.path.dirname(directory)
            stop = parent == directory or os.path.exists(os.path.join(directory, ".git"))
            found = EMPTY if stop else self._for_dir(parent)
        self._by_dir[directory] = found
        return found

    @staticmethod
    def _here(directory: str) -> Settings | None:
        for name in SETTINGS_FILES:
            path = os.path.join(directory, name)
            if not os.path.isfile(path):
                continue
            section = _section(path, _read_toml(path))
            if section is None:
                continue
            if not isinstance(section, dict):
                raise SettingsError(f"{_display(path)}: [tool.shapelint] must be a table")
            return from_dict(section, path)
        return None
