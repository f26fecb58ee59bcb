"""The published-measurement tables for issue 24 parse, cite a source on every row, and keep
their documented fit / held-out split (tests/perf/data/README.md).

No model is compared here: these tests guard the data the step model will be fitted and
checked on, so that an edit cannot silently drop a citation or move a row across the split.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
SPLITS = {"fit", "held_out"}


def read(name: str) -> list[dict[str, str]]:
    """The rows of ``name`` (comment lines starting with ``#`` skipped); fails on a ragged row."""
    with (DATA / name).open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    for i, row in enumerate(rows):
        # DictReader puts surplus cells under None and fills missing ones with None.
        assert None not in row and None not in row.values(), f"{name} row {i}: wrong cell count"
    return rows


def number(text: str) -> float:
    """A published number as written (plain decimal, no thousands separator)."""
    assert text == text.strip() and "," not in text, text
    return float(text)


# Each table: its file, the column that names a table inside it (None: one table), the
# columns that hold published numbers (at least one non-empty per row), and its row counts.
TABLES = {
    "nemo_performance_summary.csv": (
        "table",
        ("tokens_per_s_per_gpu", "model_tflops_per_gpu"),
        {"fit": 18, "held_out": 33},
    ),
    "torchtitan_performance.csv": (
        "table",
        ("tokens_per_s_per_gpu", "mfu_pct"),
        {"fit": 17, "held_out": 26},
    ),
    "megatron_lm_scaling.csv": ("table", ("tflops_per_gpu", "mfu_pct"), {"fit": 7, "held_out": 12}),
    "decode_batch1.csv": ("table", ("tokens_per_s", "ms_per_token"), {"fit": 22, "held_out": 34}),
    "shape_effects.csv": (
        None,
        ("value_misaligned", "ratio_as_published"),
        {"fit": 6, "held_out": 10},
    ),
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_row_has_a_source_a_split_and_a_number(name: str) -> None:
    _, metrics, counts = TABLES[name]
    rows = read(name)
    for i, row in enumerate(rows):
        assert row["source"].strip(), f"{name} row {i}: no source"
        assert row["split"] in SPLITS, f"{name} row {i}: split {row['split']!r}"
        assert any(row[m] for m in metrics), f"{name} row {i}: no published number"
        for column in metrics:
            if row[column] and column != "ratio_as_published":
                assert number(row[column]) > 0, f"{name} row {i}: {column}"
    assert {s: sum(r["split"] == s for r in rows) for s in SPLITS} == counts


@pytest.mark.parametrize("name", sorted(TABLES))
def test_split_follows_the_documented_rule(name: str) -> None:
    # Rows 0, 3, 6, ... of each table (in file order) are fit, the rest held out; NeMo's
    # long-sequence tables count sequence-length rows (both measurements of one row share it).
    by_table, _, _ = TABLES[name]
    seen: dict[str, list[str]] = defaultdict(list)
    for row in read(name):
        table = row[by_table] if by_table else ""
        key = row["seq_len"] if table.startswith("long_seq") else str(len(seen[table]))
        if key not in seen[table]:
            seen[table].append(key)
        index = seen[table].index(key)
        assert row["split"] == ("fit" if index % 3 == 0 else "held_out"), (table, index)


def test_sources_pin_a_commit_or_a_page() -> None:
    # A repository source names the commit it was read at, so the line numbers stay valid.
    for name in TABLES:
        for row in read(name):
            source = row["source"]
            if source.startswith("http"):
                continue
            repo_commit = source.split(":", 1)[0]
            assert "@" in repo_commit and len(repo_commit.split("@")[1]) == 40, source


def test_nemo_24_07_pretraining_rows_as_published() -> None:
    # Spot checks against the 24.07 table (NeMo 9c5c5e97, performance_summary.md:14-25).
    rows = {
        (r["model"], r["gpus"]): r
        for r in read("nemo_performance_summary.csv")
        if r["table"] == "pretrain_24.07"
    }
    assert len(rows) == 12
    gpt175 = rows[("GPT3-175B", "512")]
    assert (gpt175["tp"], gpt175["pp"], gpt175["vp"], gpt175["micro_batch"]) == ("4", "8", "6", "2")
    assert (gpt175["tokens_per_s_per_gpu"], gpt175["model_tflops_per_gpu"]) == ("825", "888")
    llama3 = rows[("LLAMA3-70B", "64")]
    assert (llama3["tp"], llama3["pp"], llama3["cp"], llama3["vp"]) == ("4", "4", "2", "5")
    assert llama3["model_tflops_per_gpu"] == "734"


def test_megatron_2024_mfu_is_tflops_over_the_bf16_peak() -> None:
    # The check behind the inferred bf16 dtype: published MFU = TFLOP/s / 989 to its rounding.
    for r in read("megatron_lm_scaling.csv"):
        if r["table"] == "2024_h100":
            assert number(r["tflops_per_gpu"]) / 989 * 100 == pytest.approx(
                number(r["mfu_pct"]), abs=0.5
            )
