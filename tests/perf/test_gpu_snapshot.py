"""The GPU table snapshot: current with gpus.yaml, equal to an independent YAML reading, and
never used once the YAML has changed."""

from __future__ import annotations

from pathlib import Path

import yaml

from shapelint.hardware import gpus

PERF = Path(gpus.__file__).resolve().parent


def _yaml_text() -> str:
    return (PERF / "gpus.yaml").read_text(encoding="utf-8")


def test_snapshot_is_current() -> None:
    current = (PERF / "gpus_snapshot.json").read_text(encoding="utf-8")
    assert current == gpus.snapshot_text(_yaml_text()), (
        "shapelint/hardware/gpus_snapshot.json is stale: run python scripts/gen_gpu_snapshot.py"
    )


def test_builtin_data_equals_pyyaml_reading() -> None:
    expected = yaml.safe_load(_yaml_text())  # PyYAML's pure-Python loader, read here
    assert gpus.builtin_data() == expected


def test_stale_snapshot_is_ignored() -> None:
    text = _yaml_text()
    snapshot = gpus.snapshot_text(text)
    edited = text.replace("sms: 132", "sms: 133", 1)
    assert edited != text
    assert gpus.data_from(edited, snapshot) == yaml.safe_load(edited)
    assert gpus.data_from(edited, snapshot) != gpus.data_from(text, snapshot)


def test_broken_snapshot_falls_back_to_the_yaml() -> None:
    text = _yaml_text()
    for broken in ("", "{not json", '{"yaml_digest": 1}', "[]", None):
        assert gpus.data_from(text, broken) == yaml.safe_load(text)
