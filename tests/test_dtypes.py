"""The one dtype table (shapelint/core/dtypes.py): spellings, fallbacks, and the schemas that
list its names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import shapelint
from shapelint.core.dtypes import (
    BY_NAME,
    DTYPES,
    ELEMENT_BYTES,
    FP8_RECIPES,
    TABLE,
    normalize_dtype,
    runnable_dtype,
)

PACKAGE = Path(shapelint.__file__).parent


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("bf16", "bf16"),
        ("torch.bfloat16", "bf16"),
        (" BF16-Mixed ", "bf16"),
        ("half", "fp16"),
        (16, "fp16"),
        ("float8_e4m3fn", "fp8"),
        ("torch.float8_e5m2", "fp8"),
        ("tf32", "tf32"),
        ("32-true", "fp32"),
        ("int8", None),
        (True, None),
        (None, None),
    ],
)
def test_spellings(spelling: object, canonical: str | None) -> None:
    assert normalize_dtype(spelling) == canonical


def test_every_spelling_names_one_dtype() -> None:
    seen: dict[str, str] = {}
    for d in TABLE:
        for spelling in (d.name, *d.aliases):
            assert spelling == spelling.strip().lower(), spelling
            assert seen.setdefault(spelling, d.name) == d.name, spelling
    assert DTYPES == ("bf16", "fp16", "fp8", "tf32", "fp32")  # the order the CLI lists
    assert set(ELEMENT_BYTES) == set(DTYPES)
    assert [d.name for d in TABLE if d.fp8] == ["fp8"]


def test_fallbacks_name_known_dtypes() -> None:
    for d in TABLE:
        assert d.name not in d.fallback
        assert set(d.fallback) <= set(BY_NAME)
    assert runnable_dtype("fp8", {"bf16": 1.0, "fp16": 1.0}) == "bf16"
    assert runnable_dtype("bf16", {"fp16": 1.0}) == "fp16"
    assert runnable_dtype("fp32", {"bf16": 1.0}) == "fp32"  # nothing to fall back to


def test_schemas_list_the_tables_names() -> None:
    gpus = json.loads((PACKAGE / "hardware" / "gpus.schema.json").read_text(encoding="utf-8"))
    assert set(gpus["$defs"]["dtype"]["enum"]) == set(DTYPES)
    settings = json.loads((PACKAGE / "engine" / "settings.schema.json").read_text(encoding="utf-8"))
    assert tuple(settings["properties"]["fp8-recipe"]["enum"]) == FP8_RECIPES
