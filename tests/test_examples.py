"""The bundled examples: every config form reports findings, and every fixable finding
carries a slowdown estimate on the default GPU and on other named GPUs."""

from __future__ import annotations

import io
import json

import pytest
from conftest import REPO

from shapelint.cli.main import main

EXAMPLES = str(REPO / "examples")


def report(*argv: str) -> dict[str, object]:
    out = io.StringIO()
    code = main([EXAMPLES, "--format", "json", *argv], out, io.StringIO())
    assert code == 1
    data: dict[str, object] = json.loads(out.getvalue())
    return data


@pytest.mark.parametrize("gpus", [(), ("a100",), ("v100",), ("mi300x", "4090"), ("b200", "l4")])
def test_every_fixable_finding_has_a_slowdown(gpus: tuple[str, ...]) -> None:
    flags = [a for g in gpus for a in ("--gpu", g)]
    findings = report(*flags)["findings"]
    assert isinstance(findings, list) and findings
    expected = len(gpus) or 1
    for f in findings:
        if f["fix"] is not None:
            assert len(f["estimates"]) == expected, (f["path"], f["code"])
            assert all(e["slowdown_pct"] > 0 for e in f["estimates"])


def test_findings_in_json_yaml_and_python() -> None:
    # The YAML example's h/a = 80 costs <1% on H100 with FA3: every finding counts here.
    data = report("--min-slowdown", "0")
    paths = {f["path"].rsplit(".", 1)[-1] for f in data["findings"]}  # type: ignore[index, union-attr]
    assert {"json", "yml", "py"} <= paths
    assert len(data["configs"]) >= 7  # type: ignore[arg-type]
