"""The JSON schemas of the ``--format json`` output of ``check``, ``explain``, ``suggest``,
``gemm`` and ``engines``, shipped with the package (``<command>-v<version>.json``).

Each JSON output carries ``"$schema"`` (the schema's id) and ``"version"``. A version changes
when a field is removed or renamed, or changes type or meaning; fields may be added within a
version (the schema file gains them), so a consumer should ignore fields it does not know.
An older version's file stays beside the newer one. docs/output.md publishes them.
"""

from __future__ import annotations

import json
import os
from typing import Any

from shapelint.core.target import TARGET_FIELDS, TargetField

# Where a schema id points: the file in the repository (the ids are names first; this copy of
# the file is the same text).
BASE = "https://raw.githubusercontent.com/shapelint/shapelint/main/shapelint/report/schemas/"
# The current version of each command's JSON output.
VERSIONS = {"check": 1, "explain": 1, "suggest": 1, "gemm": 1, "engines": 1}
HERE = os.path.dirname(os.path.abspath(__file__))


def file_name(command: str, version: int | None = None) -> str:
    """``check-v1.json``: the schema file of ``command``'s output (its current version)."""
    return f"{command}-v{VERSIONS[command] if version is None else version}.json"


def schema_id(command: str) -> str:
    """The id of the current schema of ``command``'s output (its ``$id``, and the ``$schema``
    each output carries)."""
    return BASE + file_name(command)


def schema_path(command: str) -> str:
    """The shipped file of the current schema of ``command``'s output."""
    return os.path.join(HERE, file_name(command))


def load(command: str) -> dict[str, Any]:
    """The current schema of ``command``'s output, parsed."""
    with open(schema_path(command), encoding="utf-8") as fh:
        schema: dict[str, Any] = json.load(fh)
    return schema


def stamped(command: str, payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with ``$schema`` and ``version`` first, as every JSON output has them."""
    return {"$schema": schema_id(command), "version": VERSIONS[command], **payload}


def target_value_schema(spec: TargetField) -> dict[str, Any]:
    """The JSON output's schema of the target field ``spec``'s value, by its kind."""
    if spec.kind == "positive":
        return {"type": "integer", "minimum": 1}
    if spec.kind == "choice":
        return {"enum": list(spec.choices)}
    if spec.kind == "bool":
        return {"type": "boolean"}
    if spec.kind == "engines":
        return {"type": "array", "items": {"type": "string"}}
    return {"type": "string"}  # dtype, fused: names


def with_target_fields(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (check's) with the target's fields written from their declaration in
    `shapelint.core.target`: ``gpu`` first, each field the JSON holds in declaration order, then
    ``origins`` and ``defaults`` (``python scripts/gen_settings_schema.py`` writes the file; a
    test fails when it is stale)."""
    target = schema["$defs"]["target"]
    old = target["properties"]
    fields: dict[str, Any] = {}
    for spec in TARGET_FIELDS:
        if not spec.json:
            continue
        if spec.aliases:
            # A choice that was a boolean (recompute): version 1 keeps the boolean, the choice
            # follows as ``<name>_mode`` (`shapelint.engine.assumed.AssumedTarget.as_json`).
            fields[spec.name] = {"type": "boolean"}
            fields[f"{spec.name}_mode"] = target_value_schema(spec)
        else:
            fields[spec.name] = target_value_schema(spec)
    target["properties"] = {
        "gpu": old["gpu"],
        **fields,
        "origins": old["origins"],
        "defaults": old["defaults"],
    }
    return schema


def render_check(text: str) -> str:
    """The text of check's schema file ``text`` with the target fields written afresh."""
    return json.dumps(with_target_fields(json.loads(text)), indent=2) + "\n"


__all__ = [
    "BASE",
    "VERSIONS",
    "file_name",
    "load",
    "render_check",
    "schema_id",
    "schema_path",
    "stamped",
    "target_value_schema",
    "with_target_fields",
]
