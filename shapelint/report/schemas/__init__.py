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


__all__ = ["BASE", "VERSIONS", "file_name", "load", "schema_id", "schema_path", "stamped"]
