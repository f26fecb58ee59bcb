"""The target fields' entries of ``settings.schema.json``, generated from their declaration.

``settings.schema.json`` is the shipped schema of the settings (editors can validate with
it); the entries of the target fields (``dtype`` … ``attention``, between ``gpu-file`` and
``select``) are written from `shapelint.core.target` by ``python scripts/gen_settings_schema.py``,
and a test fails when the file is stale. Each field's entry follows from its kind.
"""

from __future__ import annotations

import json
import os
from typing import Any

from shapelint.core.target import TargetField, in_order

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "settings.schema.json")

# The target fields in the order the schema listed them before they were declared in one
# place: the order of "known keys" in an error, and of the checks when several keys are
# wrong. A new field's key follows them.
TARGET_KEYS = in_order(
    (
        "dtype",
        "mode",
        "micro_batch",
        "seq_len",
        "tp",
        "engines",
        "pp",
        "ep",
        "cp",
        "sp",
        "fp8_recipe",
        "fused",
        "data_parallel",
        "sharded",
        "recompute",
        "attention",
    )
)


def schema_entry(spec: TargetField) -> dict[str, Any]:
    """The settings schema's entry for the target field ``spec``, by its kind."""
    entry: dict[str, Any] = {"description": spec.expected}
    if spec.kind == "positive":
        entry["$ref"] = "#/$defs/positive"
    elif spec.kind == "choice":
        entry["enum"] = [*spec.choices, *(old for old, _ in spec.aliases)]
    elif spec.kind == "bool":
        entry["type"] = "boolean"
    elif spec.kind == "dtype":
        entry["type"] = "string"  # the spelling is checked by settings.validate
    elif spec.kind == "engines":  # one name, or a list of names (as ``gpu``)
        name = {"type": "string", "minLength": 1}
        entry["anyOf"] = [name, {"type": "array", "minItems": 1, "items": name}]
    elif spec.kind == "fused":
        entry.update(type="string", minLength=1)
    return entry


def _inline(value: object) -> str:
    """``value`` on one line, objects spaced inside their braces as the file writes them."""
    if isinstance(value, dict):
        inner = ", ".join(f"{json.dumps(k)}: {_inline(v)}" for k, v in value.items())
        return f"{{ {inner} }}"
    if isinstance(value, list) and any(isinstance(v, dict) for v in value):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    return json.dumps(value)


def _member(key: str, value: object) -> str:
    return f"{json.dumps(key)}: {_inline(value)}"


def render(text: str) -> str:
    """``text`` (the schema file) with the target fields' entries written from the declaration,
    in the file's layout: the lines between the ``gpu-file`` and ``select`` entries."""
    lines = text.splitlines(keepends=True)
    start = lines.index('    "gpu-file": {\n')
    start += lines[start:].index("    },\n") + 1
    end = lines.index('    "select": {\n')
    block = []
    for spec in TARGET_KEYS:
        members = [f"      {_member(k, v)}" for k, v in schema_entry(spec).items()]
        block.append(f'    "{spec.key}": {{\n' + ",\n".join(members) + "\n    },\n")
    return "".join([*lines[:start], *block, *lines[end:]])


__all__ = ["SCHEMA_PATH", "TARGET_KEYS", "render", "schema_entry"]
